/** Waiting on streams without leaving listeners behind. */
import type { EventEmitter } from 'node:events';

/**
 * Resolves with the name of the first of `events` that `emitter` emits, then removes every
 * listener it added (`Promise.race` of `events.once` leaves the losers attached: one more
 * listener per wait, a leak on a COPY that waits for 'drain' thousands of times).
 */
export function firstOf(emitter: EventEmitter, events: readonly string[]): Promise<string> {
  return new Promise((resolve) => {
    const handlers = events.map((name) => {
      const handler = () => {
        events.forEach((other, i) => emitter.off(other, handlers[i]!));
        resolve(name);
      };
      emitter.on(name, handler);
      return handler;
    });
  });
}

/**
 * Ends a COPY FROM STDIN stream and waits until Postgres took all of it; then throws what
 * `failure()` reports, if the COPY failed (its own 'error' listener records it).
 */
export async function endCopy(copy: EventEmitter & { end(): unknown }, failure: () => unknown): Promise<void> {
  if (failure() === undefined) {
    const done = firstOf(copy, ['finish', 'error']);
    copy.end();
    await done;
  }
  const failed = failure();
  if (failed !== undefined) throw failed;
}

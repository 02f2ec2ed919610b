/**
 * A user's wire connections open on every worker, for `GET /usage/`: the asking worker asks the
 * primary, the primary asks every worker (the asker too) and answers the sum once all have
 * answered, or with what it has after `BROKER_WAIT_MS` (a worker busy or dying must not hold the
 * request).
 */
import type { Worker } from 'node:cluster';
import { isMessage, type ConnectionsAnswer, type ConnectionsAsk, type PrimaryMessage, type WorkerMessage } from './messages.js';

const BROKER_WAIT_MS = 1_000;
const WORKER_WAIT_MS = BROKER_WAIT_MS + 500;

interface Asked {
  asker: Worker;
  ref: number;
  waiting: number;
  sum: number;
  timer: NodeJS.Timeout;
}

/** The primary's side. */
export class ConnectionsBroker {
  private next = 1;
  private readonly asked = new Map<number, Asked>();

  constructor(private readonly send: (worker: Worker, message: PrimaryMessage) => void) {}

  ask(asker: Worker, ask: ConnectionsAsk, workers: readonly Worker[]): void {
    const ref = this.next++;
    const timer = setTimeout(() => this.settle(ref), BROKER_WAIT_MS);
    timer.unref();
    this.asked.set(ref, { asker, ref: ask.ref, waiting: workers.length, sum: 0, timer });
    for (const w of workers) this.send(w, { kind: 'connections', ref, user: ask.user });
    if (workers.length === 0) this.settle(ref);
  }

  answer(answer: ConnectionsAnswer): void {
    const asked = this.asked.get(answer.ref);
    if (!asked) return;
    asked.sum += answer.count;
    if (--asked.waiting === 0) this.settle(answer.ref);
  }

  private settle(ref: number): void {
    const asked = this.asked.get(ref);
    if (!asked) return;
    this.asked.delete(ref);
    clearTimeout(asked.timer);
    this.send(asked.asker, { kind: 'connections-result', ref: asked.ref, count: asked.sum });
  }
}

/**
 * A worker's side: `everywhere(user)` asks through the primary; `listen` sets what this worker
 * answers (its own count; 0 until the service runs). Falls back to `local` when the primary does
 * not answer in time.
 */
export function workerConnectionCounts(send: (message: WorkerMessage) => void): { everywhere(user: string): Promise<number>; listen(local: (user: string) => number): void } {
  let next = 1;
  const waiting = new Map<number, (count: number) => void>();
  let local: (user: string) => number = () => 0;
  process.on('message', (m: unknown) => {
    if (!isMessage<PrimaryMessage>(m)) return;
    if (m.kind === 'connections') send({ kind: 'connections-result', ref: m.ref, count: local(m.user) });
    else if (m.kind === 'connections-result') waiting.get(m.ref)?.(m.count);
  });
  return {
    everywhere: (user) =>
      new Promise((resolve) => {
        const ref = next++;
        const done = (count: number) => {
          clearTimeout(timer);
          waiting.delete(ref);
          resolve(count);
        };
        const timer = setTimeout(() => done(local(user)), WORKER_WAIT_MS);
        waiting.set(ref, done);
        send({ kind: 'connections', ref, user });
      }),
    listen: (l) => {
      local = l;
    },
  };
}

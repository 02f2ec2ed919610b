/**
 * REST query cancels between worker processes. `POST /query/<id>/cancel` may reach another
 * worker than the query it names; unlike a wire CancelRequest, it has an answer (204, or 404 for
 * no such query), so the worker asks the primary, the primary asks every other worker, and the
 * first "found" — or, once all have answered, "not found" — goes back.
 */
import type { Worker } from 'node:cluster';
import type { QueryCancelPeers } from '../http/running-queries.js';
import { isMessage, type PrimaryMessage, type QueryCancelAnswer, type QueryCancelAsk, type WorkerMessage } from './messages.js';

/** How long the primary waits for the workers' answers (one busy or dying must not hold the cancel). */
const BROKER_WAIT_MS = 2_000;
/** How long a worker waits for the primary's answer: longer than the primary waits. */
const WORKER_WAIT_MS = BROKER_WAIT_MS + 1_000;

interface Asked {
  asker: Worker;
  ref: number;
  waiting: number;
  timer: NodeJS.Timeout;
}

/** The primary's side: fans each ask out to the other workers and answers the asker once. */
export class QueryCancelBroker {
  private next = 1;
  private readonly asked = new Map<number, Asked>();

  constructor(private readonly send: (worker: Worker, message: PrimaryMessage) => void) {}

  /** Passes `ask`, from `asker`, to `others`. */
  ask(asker: Worker, ask: QueryCancelAsk, others: readonly Worker[]): void {
    if (others.length === 0) return this.send(asker, { kind: 'query-cancel-result', ref: ask.ref, found: false });
    const ref = this.next++;
    const timer = setTimeout(() => this.settle(ref, false), BROKER_WAIT_MS);
    timer.unref();
    this.asked.set(ref, { asker, ref: ask.ref, waiting: others.length, timer });
    for (const other of others) this.send(other, { ...ask, ref });
  }

  /** Takes one worker's answer to an ask passed on by `ask`. */
  answer(answer: QueryCancelAnswer): void {
    const asked = this.asked.get(answer.ref);
    if (!asked) return;
    if (answer.found || --asked.waiting === 0) this.settle(answer.ref, answer.found);
  }

  private settle(ref: number, found: boolean): void {
    const asked = this.asked.get(ref);
    if (!asked) return;
    this.asked.delete(ref);
    clearTimeout(asked.timer);
    this.send(asked.asker, { kind: 'query-cancel-result', ref: asked.ref, found });
  }
}

/** A worker's side: asks through the primary, and answers what the primary passes on. */
export function workerQueryCancelPeers(send: (message: WorkerMessage) => void): QueryCancelPeers {
  let next = 1;
  const waiting = new Map<number, (found: boolean) => void>();
  // Answered even before the service has registered its queries (it has none yet then).
  let handler: (user: string, id: string) => boolean = () => false;
  process.on('message', (m: unknown) => {
    if (!isMessage<PrimaryMessage>(m)) return;
    if (m.kind === 'query-cancel') send({ kind: 'query-cancel-result', ref: m.ref, found: handler(m.user, m.id) });
    else if (m.kind === 'query-cancel-result') waiting.get(m.ref)?.(m.found);
  });
  return {
    cancel: (user, id) =>
      new Promise((resolve) => {
        const ref = next++;
        const done = (found: boolean) => {
          clearTimeout(timer);
          waiting.delete(ref);
          resolve(found);
        };
        const timer = setTimeout(() => done(false), WORKER_WAIT_MS);
        waiting.set(ref, done);
        send({ kind: 'query-cancel', ref, user, id });
      }),
    listen: (h) => {
      handler = h;
    },
  };
}

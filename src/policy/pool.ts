// Large query strings are analysed in a worker thread so they do not stall the event loop for
// every other client. Measured here (2 cores, Node 20, compiled, best of 3), parse + analysis of
// 1 MiB: 10 ms for one string literal, 89 ms for a multi-row INSERT of wide rows, 105 ms for a
// long IN list, 241 ms for an INSERT of tiny rows, 451 ms for 1 MiB of short statements; the
// first large parse of a process also grows the WASM memory and took up to 2.7 s. 8 KiB of short
// statements (the worst shape) takes 2.7 ms, a typical client query 10–100 µs: hence the default
// threshold of 8 KiB (PolicyOptions.workerThresholdBytes).
//
// One worker, started on first use and unref'd while idle. The worker runs the compiled
// `worker.js`; when running from TypeScript sources (tests under vitest) there is none, and the
// analysis runs in-process on a later tick instead.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import type { Reading } from './analyse.js';
import type { Analysis } from './facts.js';

export interface WorkerRequest {
  id: number;
  sql: string;
  reading: Reading;
}

export type WorkerReply = { id: number; analysis: Analysis } | { id: number; failed: string };

export interface ParsePool {
  /** True when analyses really run in a worker thread. */
  readonly threaded: boolean;
  analyse(sql: string, reading: Reading): Promise<Analysis>;
  close(): Promise<void>;
}

interface Pending {
  sql: string;
  reading: Reading;
  resolve: (a: Analysis) => void;
  reject: (err: unknown) => void;
}

/** A one-worker pool; `inProcess` is the same analysis, used when no worker can run it. */
export function createParsePool(inProcess: (sql: string, reading: Reading) => Analysis, workerUrl = new URL('./worker.js', import.meta.url)): ParsePool {
  const threaded = workerUrl.protocol === 'file:' && existsSync(fileURLToPath(workerUrl));
  const pending = new Map<number, Pending>();
  let worker: Worker | undefined;
  let nextId = 0;

  const runHere = (p: Pending): void => {
    setImmediate(() => {
      try {
        p.resolve(inProcess(p.sql, p.reading));
      } catch (err: unknown) {
        p.reject(err);
      }
    });
  };

  const start = (): Worker => {
    const w = new Worker(workerUrl);
    w.on('message', (reply: WorkerReply) => {
      const p = pending.get(reply.id);
      pending.delete(reply.id);
      if (pending.size === 0) w.unref();
      if (p === undefined) return;
      if ('analysis' in reply) p.resolve(reply.analysis);
      else runHere(p);
    });
    // A dead worker hands its queue back to the main thread; the next large query starts anew.
    const fail = (): void => {
      if (worker === w) worker = undefined;
      for (const p of pending.values()) runHere(p);
      pending.clear();
    };
    w.on('error', fail);
    w.on('exit', fail);
    return w;
  };

  return {
    threaded,
    analyse(sql, reading) {
      return new Promise<Analysis>((resolve, reject) => {
        const p = { sql, reading, resolve, reject };
        if (!threaded) {
          runHere(p);
          return;
        }
        worker ??= start();
        worker.ref();
        const id = nextId++;
        pending.set(id, p);
        worker.postMessage({ id, sql, reading } satisfies WorkerRequest);
      });
    },
    async close() {
      const w = worker;
      worker = undefined;
      if (w !== undefined) await w.terminate();
    },
  };
}

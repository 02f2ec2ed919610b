// Worker thread entry: analyses large query strings off the event loop (see pool.ts).
import { parentPort } from 'node:worker_threads';
import { analyse } from './analyse.js';
import { loadParsers } from './parse.js';
import type { WorkerReply, WorkerRequest } from './pool.js';

await loadParsers();

parentPort?.on('message', (request: WorkerRequest) => {
  let reply: WorkerReply;
  try {
    reply = { id: request.id, analysis: analyse(request.sql, request.reading) };
  } catch (err: unknown) {
    // The caller redoes the work in-process, where the error surfaces with its stack.
    reply = { id: request.id, failed: String(err) };
  }
  parentPort?.postMessage(reply);
});

/**
 * Queries run in the background, for the SQL page: a page of a stored result read as it streams
 * (the same NDJSON as a statement's answer, so rows keep every digit Postgres printed), its CSV,
 * and how long a query took.
 */
import { send, type QueryInfo } from '../api.ts';
import { errorOf, readAnswer, type Outcome, type StreamHandlers } from './run.ts';

/** Rows per page of a stored result. */
export const PAGE_ROWS = 1000;

const resultPath = (id: string) => `/queries/${encodeURIComponent(id)}/result`;

/** Rows `offset` to `offset + limit` of query `id`'s stored result, handed to `handlers` as they arrive. */
export async function readResultPage(id: string, offset: number, limit: number, signal: AbortSignal, handlers: StreamHandlers): Promise<Outcome> {
  const res = await send('GET', `${resultPath(id)}?offset=${offset}&limit=${limit}`, { headers: { Accept: 'application/x-ndjson' }, signal });
  return readAnswer(res, signal, handlers);
}

/** Query `id`'s whole stored result as a CSV file. */
export async function resultCsv(id: string): Promise<Blob> {
  const res = await send('GET', resultPath(id), { headers: { Accept: 'text/csv' } });
  if (!res.ok) throw await errorOf(res);
  return res.blob();
}

export const isActive = (q: QueryInfo) => q.status === 'queued' || q.status === 'running';

/** Whether its stored result can be read (a query run in the background that succeeded, its result not yet deleted). */
export const hasResult = (q: QueryInfo) => q.async && q.status === 'succeeded' && q.result_expires_at !== null;

/** How long it ran, or has been running (ms); null before it started. */
export function durationOf(q: QueryInfo, now = Date.now()): number | null {
  if (q.started_at === null) return null;
  return (q.finished_at === null ? now : Date.parse(q.finished_at)) - Date.parse(q.started_at);
}

export function elapsed(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export const count = (n: number, one: string, many: string) => `${n.toLocaleString()} ${n === 1 ? one : many}`;

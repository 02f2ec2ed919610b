/**
 * Async queries from the command line: `query --async` prints the new query's id alone (for
 * `ID=$(…)`), `queries` lists your queries — async ones and the history of `POST /query/` —
 * `query-result <id>` writes a stored result in the formats of `query`, and `query-cancel <id>`
 * cancels a running query or deletes one that ended with its result.
 */
import { Command, InvalidArgumentError } from 'commander';
import { PgError, SqlState } from '../shared/errors.js';
import { csvField } from '../upstream/query-encode.js';
import { writeAnswer } from './client-answer.js';
import { createClient, withClientOptions, type ClientOptions } from './client-http.js';
import { defaultFormat, formatOption, type CliFormat } from './client-render.js';
import type { CliContext } from './context.js';
import { formatTable } from './table.js';

interface QueryJson {
  id: string;
  status: string;
  async: boolean;
  query_string: string;
  submitted_at: string;
  started_at: string | null;
  finished_at: string | null;
  row_count: number | null;
  error: { code: string; message: string } | null;
}

const STATUSES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'];
const POLL_MS = 500;

function count(value: string): number {
  if (!/^\d+$/.test(value)) throw new InvalidArgumentError('expected a whole number');
  return Number(value);
}

/** Submits `sql` as an async query and prints its id. */
export async function submitAsync(ctx: CliContext, opts: ClientOptions, sql: string): Promise<void> {
  const res = await createClient(ctx, opts).request('POST', '/query/', { query_string: sql, async: true });
  ctx.out(`${((await res.json()) as { id: string }).id}\n`);
}

/** How long it ran (so far): `0.42 s`. */
function duration(q: QueryJson): string {
  if (q.started_at === null) return '';
  const ms = (q.finished_at === null ? Date.now() : Date.parse(q.finished_at)) - Date.parse(q.started_at);
  return `${(ms / 1000).toFixed(2)} s`;
}

/** One line of the statement, cut for a terminal. */
function shortSql(sql: string): string {
  const line = sql.replace(/\s+/g, ' ').trim();
  return line.length > 60 ? `${line.slice(0, 59)}…` : line;
}

function listRows(queries: readonly QueryJson[], short: boolean): string[][] {
  return queries.map((q) => [
    q.id,
    q.status,
    q.async ? 'async' : 'sync',
    q.submitted_at,
    duration(q),
    q.row_count === null ? '' : String(q.row_count),
    q.error ? `${q.error.code} ${q.error.message}` : '',
    short ? shortSql(q.query_string) : q.query_string,
  ]);
}

/** Waits until query `id` has ended (polling its state). */
async function ended(ctx: CliContext, opts: ClientOptions, id: string): Promise<void> {
  const client = createClient(ctx, opts);
  for (;;) {
    const q = (await (await client.request('GET', `/queries/${encodeURIComponent(id)}`)).json()) as QueryJson;
    if (q.status !== 'queued' && q.status !== 'running') return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

/** `queries`, `query-result` and `query-cancel`. */
export function queryCommands(ctx: CliContext): Command[] {
  const queries = withClientOptions(
    new Command('queries')
      .description('list your queries, newest first: async ones and every query of the last days')
      .option('--status <status>', `only those ${STATUSES.join(', ')}`)
      .option('--limit <n>', 'at most this many (default 100)', count)
      .addOption(formatOption('table')),
  ).action(async (opts: ClientOptions & { status?: string; limit?: number; format?: CliFormat }) => {
    const params = new URLSearchParams();
    if (opts.status !== undefined) params.set('status', opts.status);
    if (opts.limit !== undefined) params.set('limit', String(opts.limit));
    const res = await createClient(ctx, opts).request('GET', `/queries/${params.size ? `?${params}` : ''}`);
    const text = await res.text();
    const { queries: list } = JSON.parse(text) as { queries: QueryJson[] };
    const headers = ['id', 'status', 'kind', 'submitted', 'duration', 'rows', 'error', 'query'];
    if (opts.format === 'json') ctx.out(text.endsWith('\n') ? text : `${text}\n`);
    else if (opts.format === 'csv') ctx.out([headers, ...listRows(list, false)].map((r) => r.map(csvField).join(',')).join('\n') + '\n');
    else ctx.out(formatTable(headers, listRows(list, true)));
  });

  const result = withClientOptions(
    new Command('query-result')
      .description("write an async query's stored result")
      .argument('<id>', 'the id query --async printed')
      .option('--offset <n>', 'from this row (0-based)', count)
      .option('--limit <n>', 'at most this many rows', count)
      .option('--wait', 'wait for the query to end first')
      .addOption(formatOption('table on a terminal, csv otherwise')),
  ).action(async (id: string, opts: ClientOptions & { offset?: number; limit?: number; wait?: boolean; format?: CliFormat }) => {
    if (opts.wait) await ended(ctx, opts, id);
    const params = new URLSearchParams();
    if (opts.offset !== undefined) params.set('offset', String(opts.offset));
    if (opts.limit !== undefined) params.set('limit', String(opts.limit));
    const path = `/queries/${encodeURIComponent(id)}/result${params.size ? `?${params}` : ''}`;
    const res = await createClient(ctx, opts).request('GET', path, undefined, 'application/x-ndjson');
    await writeAnswer(ctx, res, opts.format ?? defaultFormat());
  });

  const cancel = withClientOptions(
    new Command('query-cancel')
      .description('cancel a queued or running async query, or delete one that ended with its result')
      .argument('<id>', 'the query'),
  ).action(async (id: string, opts: ClientOptions) => {
    const res = await createClient(ctx, opts).request('DELETE', `/queries/${encodeURIComponent(id)}`);
    if (res.status === 204) return ctx.out(`deleted ${id}\n`);
    const q = (await res.json()) as QueryJson;
    if (q.status !== 'cancelled') throw new PgError(SqlState.InternalError, `unexpected answer: the query is ${q.status}`);
    ctx.out(`cancelled ${id}\n`);
  });
  return [queries, result, cancel];
}

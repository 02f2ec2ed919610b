/**
 * `repobase upload FILE --repo <user>/<repo>`: streams the file to `POST /import/` as
 * multipart/form-data (never read whole into memory), shows progress on a terminal (bytes sent;
 * rows loaded once the server answers with a job), then prints the table and its inferred
 * schema. `--dry-run` asks `/import/preview` instead and prints the columns and first rows.
 */
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { basename } from 'node:path';
import { Readable } from 'node:stream';
import { Command, Option } from 'commander';
import { PgError, SqlState } from '../shared/errors.js';
import { clientKey, createClient, DEFAULT_URL, fromJson, type ClientOptions } from './client-http.js';
import { withClientOptions } from './client-http.js';
import { UsageError, type CliContext } from './context.js';
import { formatTable } from './table.js';

interface UploadFlags extends ClientOptions {
  repo?: string;
  table?: string;
  mode?: string;
  format?: string;
  header?: string;
  delimiter?: string;
  encoding?: string;
  nullValue?: string[];
  dryRun?: boolean;
  async?: boolean;
}

interface Column {
  name: string;
  type: string;
}
interface Job {
  id: string;
  status: 'RECEIVED' | 'PROCESSING' | 'DONE' | 'FAILED';
  repo: string;
  table_name: string;
  bytes: number;
  rows: number;
  columns: Column[] | null;
  error: Record<string, unknown> | null;
}

const mb = (n: number) => `${(n / 1048576).toFixed(1)} MB`;

/** The multipart body: fields, then the file streamed from disk, counting bytes as they leave. */
function multipartBody(fields: [string, string][], file: string, size: number, sent: (n: number) => void): { body: Readable; type: string; length: number } {
  const boundary = `----repobase${randomBytes(12).toString('hex')}`;
  const head = fields.map(([k, v]) => `--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`).join('');
  // filename* (RFC 5987) carries any name exactly; the plain one is for servers that only read it.
  const name = basename(file);
  const plain = name.replace(/[^\x20-\x7e]|"/g, '_');
  const fileHead = `--${boundary}\r\ncontent-disposition: form-data; name="file"; filename="${plain}"; filename*=UTF-8''${encodeURIComponent(name)}\r\ncontent-type: application/octet-stream\r\n\r\n`;
  const tail = `\r\n--${boundary}--\r\n`;
  async function* parts(): AsyncGenerator<Buffer> {
    yield Buffer.from(head + fileHead);
    let total = 0;
    for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 })) {
      total += (chunk as Buffer).length;
      sent(total);
      yield chunk as Buffer;
    }
    yield Buffer.from(tail);
  }
  const length = Buffer.byteLength(head + fileHead) + size + Buffer.byteLength(tail);
  return { body: Readable.from(parts()), type: `multipart/form-data; boundary=${boundary}`, length };
}

function fieldsOf(flags: UploadFlags, dryRun: boolean): [string, string][] {
  const fields: [string, string][] = [];
  if (!dryRun) fields.push(['repo', flags.repo!]);
  if (flags.table !== undefined) fields.push(['table_name', flags.table]);
  if (flags.mode !== undefined) fields.push(['mode', flags.mode]);
  for (const k of ['format', 'header', 'delimiter', 'encoding'] as const) if (flags[k] !== undefined) fields.push([k, flags[k]!]);
  for (const v of flags.nullValue ?? []) fields.push(['null_values', v]);
  if (flags.async) fields.push(['async', 'true']);
  return fields;
}

async function send(ctx: CliContext, flags: UploadFlags, file: string, path: string, show: (line: string) => void, onJob: (id: string) => void): Promise<Response> {
  const key = clientKey(ctx, flags);
  if (!key) throw new UsageError('no API key: pass -k/--key <key> or set REPOBASE_API_KEY');
  const base = (flags.url || ctx.env.REPOBASE_URL || DEFAULT_URL).replace(/\/+$/, '');
  let size: number;
  try {
    size = (await stat(file)).size;
  } catch (err: unknown) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
  const { body, type, length } = multipartBody(fieldsOf(flags, path !== '/import/'), file, size, (n) => show(`sent ${mb(n)} of ${mb(size)} (${size ? Math.floor((n / size) * 100) : 100}%)`));
  let res: Response;
  try {
    res = await fetch(`${base}/api/v1beta${path}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': type, 'content-length': String(length) },
      body: Readable.toWeb(body) as ReadableStream<Uint8Array>,
      duplex: 'half',
    } as RequestInit);
  } catch (err: unknown) {
    const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
    throw new PgError(SqlState.ConnectionFailure, `cannot reach repobase at ${base}: ${cause}`, { hint: 'start it with `repobase serve`, or point --url / REPOBASE_URL at it' });
  }
  if (!res.ok) {
    const text = await res.text();
    try {
      const e = (JSON.parse(text) as { error?: Record<string, unknown> }).error;
      if (e) throw fromJson(e);
    } catch (err: unknown) {
      if (err instanceof PgError) throw err;
    }
    throw new PgError(SqlState.InternalError, `HTTP ${res.status}: ${text.slice(0, 200)}`);
  }
  const id = res.headers.get('location')?.split('/').pop();
  if (res.status === 202 && id) onJob(id);
  return res;
}

function printSchema(ctx: CliContext, columns: Column[]): void {
  ctx.out(formatTable(['column', 'type'], columns.map((c) => [c.name, c.type])).replace(/\(\d+ rows?\)\n$/, ''));
}

export function uploadCommand(ctx: CliContext): Command {
  return withClientOptions(
    new Command('upload')
      .description('upload a CSV, TSV, JSON, NDJSON or XLSX file into a table; its column types are inferred')
      .argument('<file>', 'the file')
      .option('--repo <user/repo>', 'the repo to create the table in')
      .option('--table <name>', 'table name (default: the file name without extension)')
      .addOption(new Option('--mode <mode>', 'create a new table, replace one, or append to one').choices(['create', 'replace', 'append']))
      .addOption(new Option('--format <format>', 'file format (default: from the name and content)').choices(['csv', 'tsv', 'json', 'ndjson', 'xlsx']))
      .addOption(new Option('--header <header>', 'does the first row name the columns').choices(['auto', 'first_row', 'none']))
      .option('--delimiter <char>', 'CSV delimiter (default: detected)')
      .option('--encoding <label>', 'text encoding (default: utf-8)')
      .option('--null-value <text>', 'unquoted text read as NULL (repeatable; default: the empty field)', (v: string, prev: string[] = []) => [...prev, v])
      .option('--async', 'answer with a job at once (the server does so by itself for large files)')
      .option('--dry-run', 'show the inferred columns and the first rows; create nothing'),
  ).action(async (file: string, flags: UploadFlags) => {
    const tty = process.stderr.isTTY === true;
    let status = '';
    let rows = '';
    let last = 0;
    const show = (line: string, force = false) => {
      status = line;
      const now = Date.now();
      if (!tty || (!force && now - last < 100)) return;
      last = now;
      process.stderr.write(`\r\x1b[2K${status}${rows}`);
    };
    if (flags.dryRun) {
      const res = await send(ctx, flags, file, '/import/preview', show, () => undefined);
      const p = (await res.json()) as { format: string; header: boolean; columns: Column[]; rows: number; data: (string | null)[][] };
      if (tty) process.stderr.write('\r\x1b[2K');
      ctx.out(`${p.format}, ${p.rows} rows, ${p.header ? 'first row is the header' : 'no header row'}\n`);
      printSchema(ctx, p.columns);
      ctx.out(formatTable(p.columns.map((c) => c.name), p.data.map((r) => r.map((v) => v ?? ''))));
      return;
    }
    if (!flags.repo) throw new UsageError('--repo <user>/<repo> is required');
    const client = createClient(ctx, flags);
    let poller: ReturnType<typeof setInterval> | undefined;
    const poll = async (id: string): Promise<Job> => (await (await client.request('GET', `/import/${id}`)).json()) as Job;
    let jobId: string | undefined;
    const res = await send(ctx, flags, file, '/import/', show, (id) => {
      jobId = id;
      poller = setInterval(() => {
        void poll(id).then((j) => {
          rows = `, ${j.rows} rows loaded`;
          show(status, true);
        }, () => undefined);
      }, 1000);
    });
    let job = (await res.json()) as Job;
    clearInterval(poller);
    while (jobId && (job.status === 'RECEIVED' || job.status === 'PROCESSING')) {
      await new Promise((r) => setTimeout(r, 500));
      job = await poll(jobId);
      rows = `, ${job.rows} rows loaded, building the table`;
      show(status, true);
    }
    if (tty) process.stderr.write('\r\x1b[2K');
    if (job.status === 'FAILED') throw fromJson(job.error ?? { code: 'XX000', message: 'the import failed' });
    ctx.out(`"${job.repo}"."${job.table_name}": ${job.rows} rows\n`);
    printSchema(ctx, job.columns ?? []);
  });
}

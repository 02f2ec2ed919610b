/**
 * The CLI's side of the REST API: where the server is, which key to send, and the server's
 * errors turned back into PgErrors (so they print as `ERROR <SQLSTATE>: message`).
 */
import type { Command } from 'commander';
import { PgError, SqlState } from '../shared/errors.js';
import { UsageError, type CliContext } from './context.js';

export const DEFAULT_URL = 'http://127.0.0.1:8080';

export interface ClientOptions {
  key?: string;
  url?: string;
}

/** `-k/--key` and `--url` on a client command. */
export function withClientOptions(cmd: Command): Command {
  return cmd
    .option('-k, --key <key>', 'API key (default: $REPOBASE_API_KEY)')
    .option('--url <url>', 'repobase server (default: $REPOBASE_URL or http://127.0.0.1:8080)');
}

export interface Client {
  /** A request to `/api/v1beta<path>`; a non-2xx answer is thrown as its PgError. */
  request(method: string, path: string, body?: unknown, accept?: string): Promise<Response>;
}

/** The key from `-k/--key` or REPOBASE_API_KEY, if any (decides client vs admin for `repo create`). */
export function clientKey(ctx: CliContext, opts: ClientOptions): string | undefined {
  return opts.key || ctx.env.REPOBASE_API_KEY || undefined;
}

/** A client for the server given by `--url`/REPOBASE_URL with the key of `-k`/REPOBASE_API_KEY (usage error without one). */
export function createClient(ctx: CliContext, opts: ClientOptions): Client {
  const key = clientKey(ctx, opts);
  if (!key) throw new UsageError('no API key: pass -k/--key <key> or set REPOBASE_API_KEY');
  const base = (opts.url || ctx.env.REPOBASE_URL || DEFAULT_URL).replace(/\/+$/, '');
  if (!/^https?:\/\/[^/]/.test(base)) throw new UsageError(`invalid server URL "${base}": expected http://host:port or https://…`);
  return {
    async request(method, path, body, accept = 'application/json') {
      let res: Response;
      try {
        res = await fetch(`${base}/api/v1beta${path}`, {
          method,
          headers: { authorization: `Bearer ${key}`, accept, ...(body !== undefined && { 'content-type': 'application/json' }) },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
      } catch (err: unknown) {
        const cause = err instanceof Error && err.cause instanceof Error ? err.cause.message : String(err);
        throw new PgError(SqlState.ConnectionFailure, `cannot reach repobase at ${base}: ${cause}`, { hint: 'start it with `repobase serve`, or point --url / REPOBASE_URL at it' });
      }
      if (!res.ok) throw await errorOf(res);
      return res;
    },
  };
}

/** The PgError of a failed answer; a body that is not ours still gives a message with the status. */
async function errorOf(res: Response): Promise<PgError> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: { code?: unknown; message?: unknown; detail?: unknown; hint?: unknown; position?: unknown } };
    const e = body.error;
    if (e && typeof e.code === 'string' && typeof e.message === 'string') return fromJson(e);
  } catch {
    // not JSON: fall through
  }
  return new PgError(SqlState.InternalError, `HTTP ${res.status} ${res.statusText}: ${text.slice(0, 200)}`);
}

/** `{"code","message","detail","hint","position"}` → PgError. */
export function fromJson(e: { code?: unknown; message?: unknown; detail?: unknown; hint?: unknown; position?: unknown }): PgError {
  return new PgError(String(e.code), String(e.message), {
    detail: typeof e.detail === 'string' ? e.detail : undefined,
    hint: typeof e.hint === 'string' ? e.hint : undefined,
    position: typeof e.position === 'number' ? e.position : undefined,
  });
}

/** The lines of a streamed body, as they arrive. */
export async function* lines(res: Response): AsyncGenerator<string> {
  if (!res.body) return;
  const decoder = new TextDecoder();
  let pending = '';
  for await (const chunk of res.body) {
    pending += decoder.decode(chunk as Uint8Array, { stream: true });
    let start = 0;
    for (let nl = pending.indexOf('\n'); nl >= 0; nl = pending.indexOf('\n', start)) {
      yield pending.slice(start, nl);
      start = nl + 1;
    }
    pending = pending.slice(start);
  }
  pending += decoder.decode();
  if (pending) yield pending;
}

/**
 * The only place where a driver error becomes a PgError: every Postgres field is kept, and
 * connection failures get the SQLSTATE class 08 with a reason.
 */
import { PgError, SqlState, type Severity } from '../shared/errors.js';

interface DriverError {
  code?: string;
  message: string;
  severity?: string;
  detail?: string;
  hint?: string;
  position?: string;
  where?: string;
  schema?: string;
  table?: string;
  column?: string;
  dataType?: string;
  constraint?: string;
}

const connectionCodes = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'EAI_AGAIN']);

/** Converts whatever `pg` threw into a PgError; returns undefined for errors that are not Postgres' or the network's. */
export function fromDriverError(err: unknown): PgError | undefined {
  if (err instanceof PgError) return err;
  if (!(err instanceof Error)) return undefined;
  const e = err as Error & DriverError;
  if (e.code && /^[0-9A-Z]{5}$/.test(e.code)) {
    const extra: Record<string, string> = {};
    for (const k of ['where', 'schema', 'table', 'column', 'dataType', 'constraint'] as const) {
      const v = e[k];
      if (v !== undefined) extra[k] = v;
    }
    return new PgError(e.code, e.message, {
      detail: e.detail,
      hint: e.hint,
      position: e.position !== undefined ? Number(e.position) : undefined,
      severity: (e.severity as Severity | undefined) ?? 'ERROR',
      extra: Object.keys(extra).length ? extra : undefined,
      fromUpstream: true,
    });
  }
  if ((e.code && connectionCodes.has(e.code)) || /Connection terminated|connection timeout|timeout expired/i.test(e.message)) {
    return new PgError(SqlState.ConnectionFailure, `upstream Postgres unavailable: ${e.message}`);
  }
  return undefined;
}

/**
 * `repobase audit` and `repobase usage`: the operator reads the audit log and per-user usage on
 * the control plane directly (like the other admin commands), as a table or as JSON lines.
 */
import { Command } from 'commander';
import type { AuditEntry } from '../control/audit.js';
import type { ControlPlane } from '../control/control-plane.js';
import { parseSince } from '../control/since.js';
import type { UsageRow } from '../control/usage.js';
import { isPgError } from '../shared/errors.js';
import type { Config } from '../shared/config.js';
import { UsageError, type CliContext, type ConfigOf, type WithControl } from './context.js';
import { formatTable } from './table.js';

const SQL_SHOWN = 60;

function since(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  try {
    return parseSince(text);
  } catch (err: unknown) {
    throw isPgError(err) ? new UsageError(`--since: ${err.message} (${err.hint ?? ''})`) : err;
  }
}

function positive(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1) throw new UsageError(`--limit: expected a positive integer, got "${text}"`);
  return n;
}

/** One line of SQL for the table: whitespace runs as one space, cut. */
function shortSql(sql: string | null): string {
  if (sql === null) return '';
  const line = sql.replace(/\s+/g, ' ').trim();
  return line.length > SQL_SHOWN ? line.slice(0, SQL_SHOWN - 1) + '…' : line;
}

function auditJson(e: AuditEntry): string {
  return JSON.stringify({
    at: e.at.toISOString(),
    user: e.user,
    login_name: e.loginName,
    source: e.source,
    front_end: e.frontEnd,
    request_id: e.requestId,
    key_id: e.keyId,
    key_name: e.keyName,
    action: e.action,
    target: e.target,
    detail: e.detail,
    sqlstate: e.sqlstate,
    sql: e.sql,
  });
}

function usageJson(r: UsageRow): string {
  return JSON.stringify({
    user: r.user,
    hour: r.hour.toISOString(),
    statements: r.statements,
    rows_returned: r.rowsReturned,
    bytes_in: r.bytesIn,
    bytes_out: r.bytesOut,
    upload_bytes: r.uploadBytes,
    queued_ms: r.queuedMs,
  });
}

export function auditCommands(ctx: CliContext, configOf: ConfigOf, withControl: WithControl): Command[] {
  const audit = new Command('audit')
    .description('show the audit log, newest first: log-ins, denied statements, DDL, repo, sharing and key changes')
    .option('--user <name>', 'only rows of this user (also failed log-ins that tried this name)')
    .option('--since <time>', 'only rows from this time: ISO 8601, or a span back from now (30m, 1h, 7d)')
    .option('--limit <n>', 'at most this many rows', '100')
    .option('--json', 'one JSON object per line, with the whole SQL text')
    .action(async (opts: { user?: string; since?: string; limit: string; json?: boolean }, cmd: Command) => {
      const filter = { user: opts.user, since: since(opts.since), limit: positive(opts.limit) };
      const rows = await withControl(ctx, configOf(cmd), (c) => c.auditEntries(filter));
      if (opts.json) return ctx.out(rows.map((r) => auditJson(r) + '\n').join(''));
      ctx.out(
        formatTable(
          ['time', 'user', 'key', 'front end', 'source', 'request', 'action', 'target', 'detail', 'sqlstate', 'sql'],
          rows.map((r) => [
            r.at.toISOString(),
            r.user ?? (r.loginName === null ? '' : `(${r.loginName})`),
            r.keyId === null ? '' : r.keyName ? `rb_${r.keyId} ${r.keyName}` : `rb_${r.keyId}`,
            r.frontEnd,
            r.source ?? '',
            r.requestId ?? '',
            r.action,
            r.target ?? '',
            r.detail ?? '',
            r.sqlstate ?? '',
            shortSql(r.sql),
          ]),
        ),
      );
    });

  const usage = new Command('usage')
    .description('show usage per user and hour, oldest first: statements, rows returned, bytes in and out, upload bytes, time waited in the queue')
    .argument('[user]', 'only this user')
    .option('--since <time>', 'from the hour holding this time: ISO 8601, or a span back from now (1h, 7d)')
    .option('--json', 'one JSON object per line')
    .action(async (user: string | undefined, opts: { since?: string; json?: boolean }, cmd: Command) => {
      const filter = { user, since: since(opts.since) };
      const rows = await withControl(ctx, configOf(cmd), (c) => c.usageRows(filter));
      if (opts.json) return ctx.out(rows.map((r) => usageJson(r) + '\n').join(''));
      ctx.out(
        formatTable(
          ['hour', 'user', 'statements', 'rows returned', 'bytes in', 'bytes out', 'upload bytes', 'queued ms'],
          rows.map((r) => [r.hour.toISOString(), r.user, String(r.statements), String(r.rowsReturned), String(r.bytesIn), String(r.bytesOut), String(r.uploadBytes), String(r.queuedMs)]),
        ),
      );
    });

  return [audit, usage];
}

/**
 * `repobase user limits <name> [--connections N] [--active N] [--statement-timeout 5m]
 * [--idle-in-transaction-timeout 5m] [--storage 10GiB] [--time-budget 20s] [--reset]` sets a
 * user's limits (each value, or `default` to go back to the configuration's; 0 is no limit), and
 * `repobase user show <name>` shows a user with their limits and what they use. Both on the
 * control plane directly, as the other admin commands; running services take new limits within
 * a moment (control/limits.ts).
 */
import { Command } from 'commander';
import type { ControlPlane } from '../control/control-plane.js';
import type { Config } from '../shared/config.js';
import { PgError, SqlState } from '../shared/errors.js';
import { LIMIT_NAMES, type LimitName, type LimitOverrides, type UserLimits } from '../shared/limits.js';
import { formatDuration, formatSize, parseDuration, parseSize } from '../shared/units.js';
import { UsageError, type CliContext, type ConfigOf, type WithControl } from './context.js';
import { formatTable } from './table.js';

/** Each limit's flag, how its value is read and shown, and what it means. */
const LIMITS: Readonly<Record<LimitName, { flag: string; kind: 'count' | 'duration' | 'size'; meaning: string }>> = {
  connections: { flag: 'connections', kind: 'count', meaning: 'wire connections open at once' },
  active: { flag: 'active', kind: 'count', meaning: 'transactions running upstream at once' },
  statementTimeoutMs: { flag: 'statement-timeout', kind: 'duration', meaning: 'statement timeout, wire and REST' },
  idleInTransactionTimeoutMs: { flag: 'idle-in-transaction-timeout', kind: 'duration', meaning: 'a wire client idle in a transaction is ended after' },
  storageBytes: { flag: 'storage', kind: 'size', meaning: 'storage quota of their repos' },
  timeBudgetMs: { flag: 'time-budget', kind: 'duration', meaning: 'upstream time per minute before being slowed' },
};

/** Commander's camel-case name of a flag. */
const optionKey = (flag: string) => flag.replace(/-([a-z])/g, (_, c: string) => c.toUpperCase());

/** A limit's value as shown: `none` for 0. */
export function showLimit(name: LimitName, value: number): string {
  if (value === 0) return 'none';
  const kind = LIMITS[name].kind;
  return kind === 'size' ? formatSize(value) : kind === 'duration' ? formatDuration(value) : String(value);
}

function parseLimit(name: LimitName, text: string): number | null {
  if (text === 'default') return null;
  const { flag, kind } = LIMITS[name];
  const value = kind === 'size' ? parseSize(text) : kind === 'duration' ? parseDuration(text) : /^\d+$/.test(text) ? Number(text) : undefined;
  if (value === undefined) {
    const form = kind === 'size' ? 'a size (10GiB, 500MB)' : kind === 'duration' ? 'a duration (30s, 5m, 1h)' : 'a whole number';
    throw new UsageError(`--${flag}: expected ${form}, 0 for no limit, or "default"; got "${text}"`);
  }
  return value;
}

/** The limits table: each limit, its value, and whether it is the default or set for this user. */
function limitRows(limits: UserLimits, overrides: LimitOverrides | undefined): string[][] {
  return LIMIT_NAMES.map((n) => [LIMITS[n].flag, showLimit(n, limits[n]), overrides?.[n] !== undefined ? 'set' : 'default', LIMITS[n].meaning]);
}

async function existing(control: ControlPlane, name: string): Promise<{ name: string; createdAt: Date; repos: number; keys: number }> {
  const user = (await control.listUsers()).find((u) => u.name === name);
  if (user === undefined) throw new PgError(SqlState.UndefinedObject, `user "${name}" does not exist`);
  return user;
}

/** Adds `limits` and `show` to the `user` command. */
export function addLimitCommands(user: Command, ctx: CliContext, configOf: ConfigOf, withControl: WithControl, checkUser: (name: string) => string): void {
  const limits = user
    .command('limits <name>')
    .description("set a user's limits (a value, 0 for none, or \"default\"); without options, show them")
    .option('--reset', 'every limit back to the default');
  for (const n of LIMIT_NAMES) limits.option(`--${LIMITS[n].flag} <value>`, LIMITS[n].meaning);
  limits.action(async (name: string, opts: Record<string, string | boolean | undefined>, cmd: Command) => {
    checkUser(name);
    const change: LimitOverrides = {};
    for (const n of LIMIT_NAMES) {
      const text = opts[optionKey(LIMITS[n].flag)];
      if (opts.reset) change[n] = null;
      if (typeof text === 'string') change[n] = parseLimit(n, text);
    }
    const shown = await withControl(ctx, configOf(cmd), async (c) => {
      if (Object.keys(change).length > 0) await c.setLimits(name, change);
      else await existing(c, name);
      return { limits: c.limits.of(name), overrides: c.limits.overridesOf(name) };
    });
    ctx.out(formatTable(['limit', 'value', 'from', 'meaning'], limitRows(shown.limits, shown.overrides)));
  });

  user
    .command('show <name>')
    .description('show a user: repos, keys, limits, what they store and how long they waited in the queue in the last hour')
    .option('--json', 'print JSON')
    .action(async (name: string, opts: { json?: boolean }, cmd: Command) => {
      checkUser(name);
      const shown = await withControl(ctx, configOf(cmd), async (c) => {
        const info = await existing(c, name);
        const [storage, usage] = await Promise.all([c.storage(name), c.usageRows({ user: name, since: new Date(Date.now() - 3_600_000) })]);
        return { info, storage, queuedMs: usage.reduce((sum, r) => sum + r.queuedMs, 0), limits: c.limits.of(name), overrides: c.limits.overridesOf(name) };
      });
      const { info, storage, limits } = shown;
      if (opts.json) {
        return ctx.out(
          `${JSON.stringify(
            {
              name: info.name,
              created_at: info.createdAt.toISOString(),
              repos: info.repos,
              keys: info.keys,
              limits: Object.fromEntries(LIMIT_NAMES.map((n) => [LIMITS[n].flag.replace(/-/g, '_'), { value: limits[n], set: shown.overrides?.[n] !== undefined }])),
              storage_bytes: storage.repoBytes,
              queued_ms_last_hour: shown.queuedMs,
            },
            null,
            2,
          )}\n`,
        );
      }
      const quota = limits.storageBytes > 0 ? ` of ${formatSize(limits.storageBytes)}` : ' (no quota)';
      ctx.out(
        [
          `user ${info.name}, created ${info.createdAt.toISOString()}: ${info.repos} repos, ${info.keys} keys`,
          `stores ${formatSize(storage.repoBytes)}${quota}; waited ${formatDuration(Math.round(shown.queuedMs))} in the queue since the hour before this one began`,
          '',
          formatTable(['limit', 'value', 'from', 'meaning'], limitRows(limits, shown.overrides)),
        ].join('\n'),
      );
    });
}

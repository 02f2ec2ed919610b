/**
 * `repobase key create|list|revoke` and `repobase keys`: API keys with their scope (name, repos,
 * access, expiry). With a key (`-k` or REPOBASE_API_KEY) they go through the REST API as that
 * key's user — which needs a full key; without one, `key create <user>`, `key list <user>` and
 * `key revoke <id>` are the operator's, on the control plane directly, like the other admin
 * commands.
 */
import { Command, Option } from 'commander';
import type { ControlPlane, KeyInfo } from '../control/control-plane.js';
import type { KeyAccess, KeyRequest } from '../control/key-scope.js';
import { parseUntil } from '../control/since.js';
import { userNameProblem } from '../control/names.js';
import { isPgError } from '../shared/errors.js';
import type { Config } from '../shared/config.js';
import { clientKey, createClient, withClientOptions, type ClientOptions } from './client-http.js';
import { UsageError, type CliContext, type ConfigOf, type WithControl } from './context.js';
import { formatTable } from './table.js';

interface ScopeOptions {
  name?: string;
  repo: string[];
  access?: KeyAccess;
  expires?: string;
}

/** A key as the API lists it. */
interface KeyJson {
  id: string;
  prefix: string;
  name: string;
  repos: string[] | null;
  access: KeyAccess;
  expires_at: string | null;
  expired?: boolean;
  created_at: string;
  last_used_at: string | null;
}

function expiry(text: string | undefined): Date | undefined {
  if (text === undefined) return undefined;
  try {
    return parseUntil(text);
  } catch (err: unknown) {
    throw isPgError(err) ? new UsageError(`--expires: ${err.message} (${err.hint ?? ''})`) : err;
  }
}

function request(opts: ScopeOptions): KeyRequest {
  return { name: opts.name, repos: opts.repo.length > 0 ? opts.repo : undefined, access: opts.access, expiresAt: expiry(opts.expires) };
}

/** The listing's table: what each key may reach, and until when. */
function keyTable(keys: readonly KeyJson[], now = Date.now()): string {
  return formatTable(
    ['id', 'prefix', 'name', 'access', 'repos', 'expires', 'created', 'last used'],
    keys.map((k) => [
      k.id,
      k.prefix,
      k.name,
      k.access,
      k.repos === null ? '(every repo)' : k.repos.join(', '),
      k.expires_at === null ? '-' : (k.expired ?? Date.parse(k.expires_at) <= now) ? `expired ${k.expires_at}` : k.expires_at,
      k.created_at,
      k.last_used_at ?? 'never',
    ]),
  );
}

function asJson(k: KeyInfo): KeyJson {
  return {
    id: k.id,
    prefix: k.prefix,
    name: k.name,
    repos: k.repos === null ? null : [...k.repos],
    access: k.access,
    expires_at: k.expiresAt?.toISOString() ?? null,
    created_at: k.createdAt.toISOString(),
    last_used_at: k.lastUsedAt?.toISOString() ?? null,
  };
}

function checkUser(name: string): string {
  const problem = userNameProblem(name);
  if (problem) throw new UsageError(`invalid user name "${name}": ${problem}`);
  return name;
}

export function keyCommands(ctx: CliContext, configOf: ConfigOf, withControl: WithControl): Command[] {
  const key = new Command('key').description('manage API keys: create (optionally for some repos only, read or write, expiring), list, revoke');
  withClientOptions(
    key
      .command('create [user]')
      .description('create an API key; prints it alone on stdout (it is not shown again). With a key: your own, through the API; without: <user>\'s, as the operator')
      .option('--name <name>', 'what the key is for, e.g. dashboard')
      .option('--repo <user/repo>', 'a repo the key may reach (repeat for more); without: every repo', (v: string, prev: string[]) => [...prev, v], [] as string[])
      .addOption(new Option('--access <access>', 'read, write or full (default: read with --repo, else full)').choices(['read', 'write', 'full']))
      .option('--expires <when>', 'when it stops working: a span from now (30m, 12h, 30d, 2w) or an ISO time (2027-01-01T00:00:00Z)'),
  ).action(async (user: string | undefined, opts: ClientOptions & ScopeOptions, cmd: Command) => {
    const scope = request(opts);
    if (clientKey(ctx, opts)) {
      if (user !== undefined) throw new UsageError('with a key, keys are made for its own user: leave out <user> (or use no key, as the operator)');
      const body = { name: scope.name, repos: scope.repos, access: scope.access, expires_at: scope.expiresAt?.toISOString() };
      const made = (await (await createClient(ctx, opts).request('POST', '/keys/', body)).json()) as { key: string };
      return ctx.out(`${made.key}\n`);
    }
    if (user === undefined) throw new UsageError('whose key? give <user> (as the operator), or a key with -k / REPOBASE_API_KEY');
    checkUser(user);
    const made = await withControl(ctx, configOf(cmd), async (c) => {
      const k = await c.keys.create(user, scope);
      c.audit.record({ action: 'key_create', user, frontEnd: 'cli', source: null, requestId: null, target: k.id, detail: k.access });
      return k;
    });
    ctx.out(`${made.key}\n`);
  });

  key
    .command('list <user>')
    .description("list a user's keys that were not revoked, as the operator: name, access, repos, expiry, last use (never secrets)")
    .option('--json', 'print JSON')
    .action(async (user: string, opts: { json?: boolean }, cmd: Command) => {
      checkUser(user);
      const keys = (await withControl(ctx, configOf(cmd), (c) => c.keys.list(user))).map(asJson);
      ctx.out(opts.json ? `${JSON.stringify({ keys })}\n` : keyTable(keys));
    });

  withClientOptions(key.command('revoke <key-id>').description('revoke a key: it stops working at once, and its open sessions end. With a key: one of its user\'s, through the API')).action(
    async (id: string, opts: ClientOptions, cmd: Command) => {
      if (clientKey(ctx, opts)) {
        await createClient(ctx, opts).request('DELETE', `/keys/${encodeURIComponent(id)}`);
      } else {
        await withControl(ctx, configOf(cmd), async (c) => {
          await c.keys.revoke(id);
          c.audit.record({ action: 'key_revoke', user: null, frontEnd: 'cli', source: null, requestId: null, target: id });
        });
      }
      ctx.err(`revoked key ${id}\n`);
    },
  );

  const keys = withClientOptions(new Command('keys').description('list your keys (through the API, with a full key): name, access, repos, expiry, last use').option('--json', 'print JSON')).action(
    async (opts: ClientOptions & { json?: boolean }) => {
      const body = (await (await createClient(ctx, opts).request('GET', '/keys/')).json()) as { keys: KeyJson[] };
      ctx.out(opts.json ? `${JSON.stringify(body)}\n` : keyTable(body.keys));
    },
  );

  return [key, keys];
}

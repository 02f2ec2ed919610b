/**
 * Admin commands: the control plane directly, with the same config as `serve`. They work whether
 * or not `serve` runs: the embedded cluster is started for the command when it is not running.
 * The control plane, the cluster and the Postgres driver are imported when a command runs, not
 * when the CLI starts: the client commands beside these start in a fifth of the time.
 */
import { Command } from 'commander';
import type { ControlPlane } from '../control/control-plane.js';
import { repoNameProblem, userNameProblem } from '../control/names.js';
import { UsageError, type CliContext, type ConfigOf, type WithControl } from './context.js';
import { formatTable } from './table.js';
import { auditCommands } from './audit.js';
import { keyCommands } from './keys.js';
import { addLimitCommands } from './limits.js';
import { createRepoViaApi } from './client.js';
import { clientKey, withClientOptions, type ClientOptions } from './client-http.js';
import { PgError, SqlState } from '../shared/errors.js';

const withControl: WithControl = async (ctx, configured, fn) => {
  const [config, { pino }, { createLogger }, { openCluster }, { ControlPlane }, { defaultLimits }] = await Promise.all([
    configured,
    import('pino'),
    import('../shared/logger.js'),
    import('../upstream/cluster.js'),
    import('../control/control-plane.js'),
    import('../shared/limits.js'),
  ]);
  // Logs go to stderr so stdout carries only the command's output (a key, a table).
  const level = ctx.env.REPOBASE_LOG_LEVEL ? config.logLevel : 'warn';
  const log = createLogger(level, pino.destination(2));
  const cluster = await openCluster(config, log);
  try {
    const control = await ControlPlane.open(cluster, log, { listen: false, defaultLimits: defaultLimits(config) });
    try {
      return await fn(control);
    } finally {
      await control.close();
    }
  } finally {
    await cluster.close();
  }
};

function checkUser(name: string): string {
  const problem = userNameProblem(name);
  if (problem) throw new UsageError(`invalid user name "${name}": ${problem}`);
  return name;
}

function checkRepoRef(text: string): { owner: string; repo: string } {
  const slash = text.indexOf('/');
  if (slash < 0) throw new UsageError(`invalid repo "${text}": expected <user>/<repo>`);
  const owner = checkUser(text.slice(0, slash));
  const repo = text.slice(slash + 1);
  const problem = repoNameProblem(repo);
  if (problem) throw new UsageError(`invalid repo name "${repo}": ${problem}`);
  return { owner, repo };
}

const iso = (d: Date | null) => (d ? d.toISOString() : '-');

/**
 * The first line of `input` without its line ending. A password is read from stdin, never from
 * the command line: arguments show in `ps` and in shell history.
 */
async function readFirstLine(input: NodeJS.ReadableStream): Promise<string> {
  // Bytes first, decoded once: a character split across two chunks must not be garbled.
  const chunks: Buffer[] = [];
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    chunks.push(bytes);
    if (bytes.includes(0x0a)) break;
  }
  const text = Buffer.concat(chunks).toString('utf8');
  return (text.split('\n')[0] ?? '').replace(/\r$/, '');
}

/** The password read from stdin (after a prompt on a terminal), checked as the console checks one. */
async function readPassword(ctx: CliContext, name: string): Promise<string> {
  const { PASSWORD_MAX_CHARS, PASSWORD_MIN_CHARS } = await import('../control/accounts.js');
  if (process.stdin.isTTY) ctx.err(`password for ${name} (at least ${PASSWORD_MIN_CHARS} characters), then Enter:\n`);
  const password = await readFirstLine(process.stdin);
  const chars = [...password].length;
  if (chars < PASSWORD_MIN_CHARS) throw new UsageError(`the password is too short: at least ${PASSWORD_MIN_CHARS} characters`);
  if (chars > PASSWORD_MAX_CHARS) throw new UsageError(`the password is too long: at most ${PASSWORD_MAX_CHARS} characters`);
  return password;
}

export function adminCommands(ctx: CliContext, configOf: ConfigOf): Command[] {
  const user = new Command('user').description('manage users (each is a Postgres role)');
  user
    .command('create <name>')
    .description('create a user; prints its first API key alone on stdout')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      checkUser(name);
      const key = await withControl(ctx, configOf(cmd), (c) => c.createUser(name));
      ctx.out(`${key.key}\n`);
    });
  user
    .command('list')
    .description('list users')
    .action(async (_o: unknown, cmd: Command) => {
      const users = await withControl(ctx, configOf(cmd), (c) => c.listUsers());
      ctx.out(formatTable(['name', 'repos', 'keys', 'created'], users.map((u) => [u.name, String(u.repos), String(u.keys), iso(u.createdAt)])));
    });
  user
    .command('set-password <name>')
    .description('set the password a user logs in to the web console with, read from the first line of stdin; ends their console sessions')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      checkUser(name);
      const password = await readPassword(ctx, name);
      await withControl(ctx, configOf(cmd), (c) => c.people.setPassword(name, password));
      ctx.err(`password set for user ${name}\n`);
    });
  addLimitCommands(user, ctx, configOf, withControl, checkUser);
  user
    .command('delete <name>')
    .description('delete a user with its repos (and their data), keys and role')
    .action(async (name: string, _o: unknown, cmd: Command) => {
      checkUser(name);
      await withControl(ctx, configOf(cmd), (c) => c.deleteUser(name));
      ctx.err(`deleted user ${name}\n`);
    });

  const repo = new Command('repo').description('manage repos');
  withClientOptions(
    repo
      .command('create <repo>')
      .description('create repo <user>/<repo> (private unless --public); through the REST API when a key is given, else on the control plane directly')
      .option('--public', 'readable by every user')
      .option('--description <text>', 'description', ''),
  ).action(async (text: string, opts: ClientOptions & { public?: boolean; description: string }, cmd: Command) => {
    const ref = checkRepoRef(text);
    // A key means a user acting through the server; without one, the operator on the control plane.
    if (clientKey(ctx, opts)) return createRepoViaApi(ctx, opts, ref, !opts.public, opts.description);
    const info = await withControl(ctx, configOf(cmd), async (c) => {
      const made = await c.createRepo(ref, { isPrivate: !opts.public, description: opts.description });
      c.audit.record({ action: 'repo_create', user: ref.owner, frontEnd: 'cli', source: null, requestId: null, target: made.name, detail: made.isPrivate ? 'private' : 'public' });
      return made;
    });
    ctx.out(`${info.name}\n`);
  });

  repo
    .command('move <repo>')
    .description('move repo <user>/<repo> to another Citus worker, online (writes to it pause, nothing fails)')
    .requiredOption('--to <host:port>', 'the worker, as `repobase nodes` lists it')
    .action(async (text: string, opts: { to: string }, cmd: Command) => {
      const ref = checkRepoRef(text);
      const { moveRepo, nodeName, parseNode } = await import('../upstream/citus.js');
      const to = parseNode(opts.to);
      const done = await withControl(ctx, configOf(cmd), async (c) => {
        await requireCitus(c);
        if (!(await c.getRepo(ref))) throw new PgError(SqlState.InvalidSchemaName, `repo "${ref.owner}/${ref.repo}" does not exist`);
        return moveRepo(c.admin, `${ref.owner}/${ref.repo}`, to);
      });
      ctx.out(done === 'moved' ? `moved ${ref.owner}/${ref.repo} to ${nodeName(to)}\n` : `${ref.owner}/${ref.repo} is already on ${nodeName(to)}\n`);
    });

  const nodes = new Command('nodes')
    .description('list the Citus nodes with the repos each holds and their size')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const { listNodes, nodeName } = await import('../upstream/citus.js');
      const list = await withControl(ctx, configOf(cmd), async (c) => {
        await requireCitus(c);
        return listNodes(c.admin);
      });
      if (opts.json) return ctx.out(`${JSON.stringify(list, null, 2)}\n`);
      ctx.out(formatTable(['NODE', 'ROLE', 'ACTIVE', 'REPOS', 'SIZE'], list.map((n) => [nodeName(n), n.role, n.active ? 'yes' : 'no', String(n.repos), n.size])));
    });

  return [user, ...keyCommands(ctx, configOf, withControl), repo, nodes, ...auditCommands(ctx, configOf, withControl)];
}

async function requireCitus(control: ControlPlane): Promise<void> {
  const { hasCitus } = await import('../upstream/citus.js');
  if (!(await hasCitus(control.admin))) {
    throw new PgError(SqlState.FeatureNotSupported, 'the upstream is not a Citus coordinator: there is one node and nothing to move', {
      hint: 'repos live on worker nodes only when REPOBASE_UPSTREAM_URL points at a Citus coordinator with schema-based sharding',
    });
  }
}

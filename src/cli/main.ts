/**
 * The `repobase` command. Exit codes: 0 success, 1 the operation failed (message on stderr),
 * 2 usage error.
 */
import { Command, CommanderError, Option } from 'commander';
import type { Config, ConfigKey } from '../shared/config.js';
import { configKeyNames, envName, flagName } from '../shared/config-keys.js';
import { isPgError } from '../shared/errors.js';
import { adminCommands } from './admin.js';
import { clientCommands } from './client.js';
import { uploadCommand } from './upload.js';
import { serveCommand } from './serve.js';
import { UsageError, type CliContext } from './context.js';

/**
 * Adds one hidden `--kebab-key <value>` flag per configuration key, to every command. The keys are
 * read by name; the schema and its validator are loaded only when a command reads the
 * configuration (`configFrom`), so that the client commands start in about 0.2 s, not 0.9.
 */
function addConfigFlags(cmd: Command): void {
  for (const key of configKeyNames()) cmd.addOption(new Option(`--${flagName(key)} <value>`, `see docs/configuration.md (env ${envName(key)})`).hideHelp());
}

async function configFrom(cmd: Command): Promise<Config> {
  const { configKeys, loadConfig } = await import('../shared/config.js');
  const opts = cmd.optsWithGlobals<Record<string, unknown>>();
  const flags: Partial<Record<ConfigKey, unknown>> = {};
  for (const key of configKeys) if (opts[key] !== undefined) flags[key] = opts[key];
  return loadConfig(process.env, flags);
}

export function buildProgram(ctx: CliContext): Command {
  const program = new Command('repobase')
    .description('repobase: SQL repos behind the Postgres wire protocol and a REST API')
    .exitOverride()
    .configureOutput({ writeOut: (s) => ctx.out(s), writeErr: (s) => ctx.err(s) })
    .showHelpAfterError();
  addConfigFlags(program);
  for (const cmd of [serveCommand(ctx, configFrom), ...adminCommands(ctx, configFrom), ...clientCommands(ctx), uploadCommand(ctx)]) program.addCommand(cmd);
  for (const cmd of program.commands) {
    cmd.exitOverride();
    for (const sub of cmd.commands) sub.exitOverride();
  }
  return program;
}

function printError(ctx: CliContext, err: unknown): void {
  if (isPgError(err)) {
    ctx.err(`ERROR ${err.code}: ${err.message}\n`);
    if (err.detail) ctx.err(`DETAIL: ${err.detail}\n`);
    if (err.hint) ctx.err(`HINT: ${err.hint}\n`);
  } else {
    ctx.err(`ERROR: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}

/** Runs the CLI on `argv` (without node and script); resolves to the exit code. */
export async function main(argv: string[], ctx: CliContext = defaultContext()): Promise<number> {
  const program = buildProgram(ctx);
  try {
    await program.parseAsync(argv, { from: 'user' });
    return 0;
  } catch (err: unknown) {
    if (err instanceof CommanderError) {
      // help and version are successful exits
      return err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof UsageError) {
      ctx.err(`error: ${err.message}\n`);
      return 2;
    }
    printError(ctx, err);
    // Config problems are usage errors: they name the key to fix.
    return isPgError(err) && err.code === '22023' && err.message.startsWith('invalid configuration') ? 2 : 1;
  }
}

function defaultContext(): CliContext {
  return {
    out: (s) => void process.stdout.write(s),
    err: (s) => void process.stderr.write(s),
    env: process.env,
  };
}

import { Command } from 'commander';
import { startService } from '../main.js';
import { createLogger } from '../shared/logger.js';
import type { CliContext, ConfigOf } from './context.js';

/** `repobase serve`: runs until SIGINT/SIGTERM, then stops the servers and Postgres, in that order. */
export function serveCommand(ctx: CliContext, configOf: ConfigOf): Command {
  return new Command('serve').description('start the service (REST API, embedded Postgres unless REPOBASE_UPSTREAM_URL is set)').action(async (_opts: unknown, cmd: Command) => {
    const config = configOf(cmd);
    const log = createLogger(config.logLevel);
    const service = await startService(config, log);
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    ctx.out(
      [
        'repobase is running',
        `  REST API:  ${service.httpUrl}/api/v1beta/`,
        `  Postgres:  postgresql://<user>:<API_KEY>@${host}:${service.pgPort}/${config.serviceDatabase}?sslmode=require`,
        `  health:    ${service.httpUrl}/healthz`,
        '  a user and its first API key: repobase user create <name>',
        '',
      ].join('\n'),
    );
    await new Promise<void>((resolve) => {
      let stopping = false;
      const onSignal = (signal: NodeJS.Signals) => {
        if (stopping) {
          log.warn({ signal }, 'second signal: exiting now');
          process.exit(1);
        }
        stopping = true;
        log.info({ signal }, 'shutting down');
        service.stop().then(resolve, (err: unknown) => {
          log.error({ err }, 'shutdown failed');
          resolve();
        });
      };
      process.on('SIGINT', onSignal);
      process.on('SIGTERM', onSignal);
    });
  });
}

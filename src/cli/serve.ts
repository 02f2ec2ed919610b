import cluster from 'node:cluster';
import { Command } from 'commander';
import type { Logger } from '../shared/logger.js';
import { workerCount } from '../workers/messages.js';
import type { RunningService } from '../workers/primary.js';
import type { Service } from '../main.js';
import type { CliContext, ConfigOf } from './context.js';

/**
 * `repobase serve`: runs until SIGINT/SIGTERM, then drains (new connections refused, `/healthz`
 * 503, work in flight given `drainTimeoutMs` to finish) and stops the servers and Postgres, in
 * that order; a second signal exits at once. With several workers this process is their primary,
 * and each worker runs this command again as a worker. The service itself is imported only where it runs: a primary that loaded
 * fastify, the parsers and the ingest code for nothing would hold ~45 MB more, and every other
 * command would start slower.
 */
export function serveCommand(ctx: CliContext, configOf: ConfigOf): Command {
  return new Command('serve').description('start the service (REST API, embedded Postgres unless REPOBASE_UPSTREAM_URL is set)').action(async (_opts: unknown, cmd: Command) => {
    const config = await configOf(cmd);
    const { createLogger, serverLogDestination } = await import('../shared/logger.js');
    if (cluster.isWorker) {
      const { runWorker } = await import('../workers/worker.js');
      const code = await runWorker(config, createLogger(config.logLevel, await serverLogDestination()).child({ worker: cluster.worker!.id }));
      if (code !== 0) process.exitCode = code;
      return;
    }
    const log = createLogger(config.logLevel, await serverLogDestination());
    const count = workerCount(config);
    const service: RunningService = count > 1 ? await (await import('../workers/primary.js')).startPrimary(config, log, count) : drainingStop(await (await import('../main.js')).startService(config, log));
    const host = config.host === '0.0.0.0' || config.host === '::' ? '127.0.0.1' : config.host;
    ctx.out(
      [
        `repobase is running${count > 1 ? ` (${count} workers)` : ''}`,
        `  console:   ${service.httpUrl}/`,
        `  REST API:  ${service.httpUrl}/api/v1beta/`,
        `  Postgres:  postgresql://<user>:<API_KEY>@${host}:${service.pgPort}/${config.serviceDatabase}?sslmode=require`,
        `  health:    ${service.httpUrl}/healthz`,
        '  sign up in the console, or make a user and its first API key: repobase user create <name>',
        '',
      ].join('\n'),
    );
    await untilSignal(service, log);
  });
}

/** The service, with a stop that drains it first. */
function drainingStop(service: Service): RunningService {
  return {
    httpUrl: service.httpUrl,
    pgPort: service.pgPort,
    stop: async () => {
      await service.drain();
      await service.stop();
    },
  };
}

function untilSignal(service: RunningService, log: Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    let stopping = false;
    const onSignal = (signal: NodeJS.Signals) => {
      if (stopping) {
        log.warn({ signal }, 'second signal: exiting now');
        process.exit(1);
      }
      stopping = true;
      log.info({ signal }, 'shutting down: draining (a second signal stops at once)');
      service.stop().then(resolve, (err: unknown) => {
        log.error({ err }, 'shutdown failed');
        resolve();
      });
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
  });
}

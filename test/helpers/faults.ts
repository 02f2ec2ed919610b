/**
 * A Postgres of one test file's own, for faults that take the whole upstream down (a restart, an
 * outage at start-up): the shared test cluster must never be stopped. Started as repobase starts
 * its embedded cluster, in a temporary data dir on a free port, and stopped and started again on
 * the same data dir and port.
 */
import { randomBytes } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { loadConfig } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { startEmbedded, type EmbeddedCluster } from '../../src/upstream/embedded.js';
import { readOrCreateSecretFile } from '../../src/upstream/secret-file.js';
import { freePort } from './ports.js';
import { startTestServiceWith, type TestService } from './service.js';

const log = createLogger('warn');

export class PrivateCluster {
  private running: EmbeddedCluster | undefined;

  private constructor(
    private readonly dataDir: string,
    readonly port: number,
  ) {}

  /** A fresh cluster; running unless `started` is false (then only its port is chosen). */
  static async create(started = true): Promise<PrivateCluster> {
    const dataDir = await mkdtemp(join(tmpdir(), 'repobase-fault-pg-'));
    await chmod(dataDir, 0o755);
    const cluster = new PrivateCluster(dataDir, await freePort());
    if (started) await cluster.start();
    return cluster;
  }

  /** Starts the postmaster (initialising the data dir on first use). */
  async start(): Promise<void> {
    this.running = await startEmbedded({ dataDir: this.dataDir, port: this.port, database: 'postgres', log });
  }

  /** `pg_ctl stop -m fast`: every backend is terminated (57P01), then the postmaster exits. */
  async stop(): Promise<void> {
    await this.running?.stop();
    this.running = undefined;
  }

  /** The superuser password, chosen before the first start by `preparePassword` (the embedded start reads the same file). */
  private password: string | undefined;

  /** Lets `adminUrl` answer before the first start: for a service started while nothing listens yet. */
  async preparePassword(): Promise<void> {
    this.password = await readOrCreateSecretFile(join(this.dataDir, 'pg-superuser-password'));
  }

  /** Superuser URL of `database` (known once started, or after `preparePassword`). */
  adminUrl(database = 'postgres'): string {
    if (!this.running && !this.password) throw new Error('the private cluster has never been started');
    const url = new URL(this.running?.adminUrl ?? `postgresql://postgres:${encodeURIComponent(this.password!)}@127.0.0.1:${this.port}/`);
    url.pathname = `/${database}`;
    return url.toString();
  }

  /** Creates a database for a service; returns its superuser URL. */
  async createDatabase(): Promise<string> {
    const db = `faults_${randomBytes(4).toString('hex')}`;
    const client = new pg.Client({ connectionString: this.adminUrl() });
    await client.connect();
    try {
      await client.query(`CREATE DATABASE ${db}`);
    } finally {
      await client.end();
    }
    return this.adminUrl(db);
  }

  async destroy(): Promise<void> {
    await this.stop();
    await rm(this.dataDir, { recursive: true, force: true });
  }
}

/** A repobase service on `upstreamUrl` (any cluster), with ports chosen by the OS. */
export async function startServiceOn(upstreamUrl: string, overrides: Record<string, unknown> = {}): Promise<TestService> {
  const dataDir = await mkdtemp(join(tmpdir(), 'repobase-fault-data-'));
  return startTestServiceWith(loadConfig({}, { upstreamUrl, dataDir, httpPort: 0, pgPort: 0, logLevel: 'warn', secret: randomBytes(16).toString('hex'), ...overrides }));
}

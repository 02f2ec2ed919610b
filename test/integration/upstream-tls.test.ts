/**
 * An external cluster that requires TLS (`sslmode=require` in REPOBASE_UPSTREAM_URL): the control
 * plane, the REST pools and the wire front end's raw upstream sessions all encrypt.
 */
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import selfsigned from 'selfsigned';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startService, type Service } from '../../src/main.js';
import { loadConfig } from '../../src/shared/config.js';
import { createLogger } from '../../src/shared/logger.js';
import { startEmbedded, type EmbeddedCluster } from '../../src/upstream/embedded.js';
import { freePort } from '../helpers/ports.js';

let dir: string;
let cluster: EmbeddedCluster;
let service: Service;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'repobase-tls-upstream-'));
  await chmod(dir, 0o755);
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'localhost' }], { keyType: 'ec', curve: 'P-256', algorithm: 'sha256' });
  const cert = join(dir, 'server.crt');
  const key = join(dir, 'server.key');
  await writeFile(cert, pems.cert);
  await writeFile(key, pems.private, { mode: 0o600 });
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString());
    await chown(key, uid, gid);
    await chown(cert, uid, gid);
  }
  const port = await freePort();
  cluster = await startEmbedded({ dataDir: join(dir, 'data'), port, database: 'tls', log: createLogger('silent'), settings: { ssl: 'on', ssl_cert_file: `'${cert}'`, ssl_key_file: `'${key}'` } });
  const url = new URL(cluster.adminUrl);
  url.searchParams.set('sslmode', 'require');
  const config = loadConfig({}, { upstreamUrl: url.toString(), dataDir: join(dir, 'service'), httpPort: 0, pgPort: 0, logLevel: 'silent', secret: randomBytes(8).toString('hex') });
  service = await startService(config, createLogger('silent'));
});

afterAll(async () => {
  await service?.stop();
  await cluster?.stop();
  await rm(dir, { recursive: true, force: true });
});

it('wire sessions to an upstream with sslmode=require are encrypted', async () => {
  const { key } = await service.control.createUser('tlsuser');
  const client = new pg.Client({ host: '127.0.0.1', port: service.pgPort, user: 'tlsuser', password: key, database: 'repobase' });
  await client.connect();
  try {
    const res = await client.query('SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()');
    expect(res.rows).toEqual([{ ssl: true }]);
    // Every connection the service holds (control plane, its listener, this session) is encrypted.
    const all = await service.control.admin.query<{ ssl: boolean; n: string }>(
      'SELECT s.ssl, count(*) AS n FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.client_addr IS NOT NULL GROUP BY s.ssl',
    );
    expect(all.rows.map((r) => r.ssl)).toEqual([true]);
  } finally {
    await client.end();
  }
});

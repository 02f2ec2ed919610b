/**
 * TLS material of the wire front end: the configured certificate, else a self-signed one
 * generated once into the data dir (so psql's `sslmode=require` works out of the box; clients
 * wanting `verify-full` configure a real certificate with pgTlsCert/pgTlsKey).
 */
import { readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import { createSecureContext, type SecureContext } from 'node:tls';
import selfsigned from 'selfsigned';
import type { Config } from '../shared/config.js';
import { PgError, SqlState } from '../shared/errors.js';

export interface TlsMaterial {
  cert: string;
  key: string;
  context: SecureContext;
}

async function readPair(certFile: string, keyFile: string): Promise<{ cert: string; key: string }> {
  try {
    return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') };
  } catch (err: unknown) {
    throw new PgError(SqlState.InvalidParameterValue, `cannot read the TLS certificate or key: ${(err as Error).message}`, {
      hint: 'check REPOBASE_PG_TLS_CERT and REPOBASE_PG_TLS_KEY',
    });
  }
}

async function generated(dataDir: string): Promise<{ cert: string; key: string }> {
  const certFile = join(resolve(dataDir), 'tls-cert.pem');
  const keyFile = join(resolve(dataDir), 'tls-key.pem');
  try {
    return { cert: await readFile(certFile, 'utf8'), key: await readFile(keyFile, 'utf8') };
  } catch {
    // first start: generate below
  }
  const notAfter = new Date();
  notAfter.setFullYear(notAfter.getFullYear() + 10);
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'repobase' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notAfterDate: notAfter,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 2, value: hostname() },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  await writeFile(keyFile, pems.private, { mode: 0o600 });
  await writeFile(certFile, pems.cert, { mode: 0o644 });
  return { cert: pems.cert, key: pems.private };
}

export async function loadTls(config: Config): Promise<TlsMaterial> {
  if (Boolean(config.pgTlsCert) !== Boolean(config.pgTlsKey)) {
    throw new PgError(SqlState.InvalidParameterValue, 'set both REPOBASE_PG_TLS_CERT and REPOBASE_PG_TLS_KEY, or neither');
  }
  const pair = config.pgTlsCert ? await readPair(config.pgTlsCert, config.pgTlsKey) : await generated(config.dataDir);
  return { ...pair, context: createSecureContext(pair) };
}

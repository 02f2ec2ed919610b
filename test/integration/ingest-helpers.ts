/**
 * Helpers of the upload tests: multipart uploads over real HTTP, and the resulting tables read
 * back from the catalog (types as format_type spells them) and with SQL.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { packageRoot } from '../../src/shared/package-root.js';
import type { TestService } from '../helpers/service.js';

export const FIXTURES = join(packageRoot, 'test', 'fixtures', 'ingest');

export function fixture(name: string): Buffer {
  return readFileSync(join(FIXTURES, name));
}

export interface Answer {
  status: number;
  // eslint-style loose JSON: assertions pick fields
  body: Record<string, unknown> & { error?: { code: string; message: string; line?: number | null } | null };
}

/** `POST /api/v1beta<path>` with form `fields` first, then the file. */
export async function upload(svc: TestService, key: string, fields: Record<string, string | string[]>, file: { name: string; data: Buffer | string }, path = '/import/'): Promise<Answer> {
  const form = new FormData();
  for (const [k, v] of Object.entries(fields)) for (const one of ([] as string[]).concat(v)) form.append(k, one);
  form.append('file', new Blob([typeof file.data === 'string' ? Buffer.from(file.data) : file.data]), file.name);
  const res = await fetch(`${svc.httpUrl}/api/v1beta${path}`, { method: 'POST', headers: { authorization: `Bearer ${key}` }, body: form });
  const text = await res.text();
  return { status: res.status, body: JSON.parse(text) as Answer['body'] };
}

/** Column name → type (format_type) of a table, in order; {} when there is no such table. */
export async function columnsOf(svc: TestService, schema: string, table: string): Promise<Record<string, string>> {
  const res = await svc.control.admin.query<{ name: string; type: string }>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type FROM pg_attribute a
      JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [schema, table],
  );
  return Object.fromEntries(res.rows.map((r) => [r.name, r.type]));
}

/** Rows of a query as the admin, values as Postgres' text. */
export async function rows(svc: TestService, sql: string): Promise<(string | null)[][]> {
  const client = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await client.connect();
  try {
    const res = await client.query({ text: sql, rowMode: 'array', types: { getTypeParser: () => (v: string) => v } });
    return res.rows as (string | null)[][];
  } finally {
    await client.end();
  }
}

/** Tables (any kind, temporary ones included) whose name starts with the service's reserved prefix. */
export async function leftovers(svc: TestService): Promise<string[]> {
  const res = await svc.control.admin.query<{ relname: string }>(`SELECT relname FROM pg_class WHERE relname LIKE '\\_repobase\\_%' AND relkind = 'r'`);
  return res.rows.map((r) => r.relname);
}

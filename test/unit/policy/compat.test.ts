// What real clients send (captured from psql, node-postgres, postgres.js and pgbench against a
// real server by test/fixtures/policy/capture-client-queries.mjs) must all be allowed for a user
// working in her own repo; catalog reads are redirected to the filtered catalog views.
import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import { informationSchemaRelations, pgCatalogRelations } from '../../../src/policy/catalog.js';
import { decide, summary } from './fixture.js';

interface Capture {
  client: string;
  statements: string[];
}

const fixtures = new URL('../../fixtures/policy/', import.meta.url);
const corpus = JSON.parse(readFileSync(new URL('client-queries.json', fixtures), 'utf8')) as { searchPath: string[]; captures: Capture[] };
const catalog = JSON.parse(readFileSync(new URL('catalog-relations.json', fixtures), 'utf8')) as { pg_catalog: string[]; information_schema: string[] };

describe('client compatibility', () => {
  const session = { searchPath: corpus.searchPath };
  const cases = corpus.captures.flatMap((c) => c.statements.map((sql, i): [string, number, string] => [c.client, i, sql]));

  test('the corpus covers every client', () => {
    const clients = new Set(corpus.captures.filter((c) => c.statements.length > 0).map((c) => c.client.split(' ')[0]));
    expect([...clients].sort()).toEqual(['node-postgres', 'pgbench', 'postgres.js', 'psql']);
    expect(cases.length).toBeGreaterThan(200);
  });

  test.each(cases)('%s #%i is allowed', async (_client, _i, sql) => {
    const d = await decide(sql, session);
    expect(['allow', 'rewrite'], summary(d)).toContain(d.kind);
    // Forwarded as it is only when it reads no filtered catalog relation.
    if (d.kind === 'rewrite') expect(d.sql).toMatch(/repobase_(catalog|information_schema)\./);
    else expect(sql).not.toMatch(/\bpg_catalog\.pg_(class|namespace|attribute|proc|type|roles|description|constraint|index)\b/);
  });
});

test('the catalog relation lists match the capture server', () => {
  expect([...pgCatalogRelations]).toEqual(catalog.pg_catalog);
  expect([...informationSchemaRelations]).toEqual(catalog.information_schema);
});

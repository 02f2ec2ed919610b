/**
 * Private catalogs at scale: a cluster with `repos` repos of other users (a table with a primary
 * key each), and the bench user with 5 repos. psql's `\dn`, `\dt`, `\d "table"` (its first
 * query, the lookup by name) and pgjdbc's `getTables` run through repobase as the user (redirected
 * to the filtered views) and, as the same text, directly as the admin (the plain catalogs): rows
 * returned and median time of each.
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import type { BenchEnv } from '../env.js';
import { fmt } from '../lib/stats.js';

export interface CatalogStatement {
  name: string;
  filtered: { rows: number; ms: number };
  unfiltered: { rows: number; ms: number };
}

export interface CatalogResult {
  otherRepos: number;
  userRepos: number;
  rounds: number;
  statements: CatalogStatement[];
}

const PREFIX = 'catbench';
const OWNERS = 100;

/** pgjdbc 42.7's DatabaseMetaData.getTables(null, null, "%", {"TABLE", "VIEW"}). */
export const JDBC_GET_TABLES = `SELECT NULL AS TABLE_CAT, n.nspname AS TABLE_SCHEM, c.relname AS TABLE_NAME,  CASE n.nspname ~ '^pg_' OR n.nspname = 'information_schema'  WHEN true THEN CASE  WHEN n.nspname = 'pg_catalog' OR n.nspname = 'information_schema' THEN CASE c.relkind   WHEN 'r' THEN 'SYSTEM TABLE'   WHEN 'v' THEN 'SYSTEM VIEW'   WHEN 'i' THEN 'SYSTEM INDEX'   ELSE NULL   END  WHEN n.nspname = 'pg_toast' THEN CASE c.relkind   WHEN 'r' THEN 'SYSTEM TOAST TABLE'   WHEN 'i' THEN 'SYSTEM TOAST INDEX'   ELSE NULL   END  ELSE CASE c.relkind   WHEN 'r' THEN 'TEMPORARY TABLE'   WHEN 'p' THEN 'TEMPORARY TABLE'   WHEN 'i' THEN 'TEMPORARY INDEX'   WHEN 'S' THEN 'TEMPORARY SEQUENCE'   WHEN 'v' THEN 'TEMPORARY VIEW'   ELSE NULL   END  END  WHEN false THEN CASE c.relkind  WHEN 'r' THEN 'TABLE'  WHEN 'p' THEN 'PARTITIONED TABLE'  WHEN 'i' THEN 'INDEX'  WHEN 'S' THEN 'SEQUENCE'  WHEN 'v' THEN 'VIEW'  WHEN 'c' THEN 'TYPE'  WHEN 'f' THEN 'FOREIGN TABLE'  WHEN 'm' THEN 'MATERIALIZED VIEW'  ELSE NULL  END  ELSE NULL  END  AS TABLE_TYPE, d.description AS REMARKS,  '' as TYPE_CAT, '' as TYPE_SCHEM, '' as TYPE_NAME, '' AS SELF_REFERENCING_COL_NAME, '' AS REF_GENERATION  FROM pg_catalog.pg_namespace n, pg_catalog.pg_class c  LEFT JOIN pg_catalog.pg_description d ON (c.oid = d.objoid AND d.objsubid = 0  and d.classoid = 'pg_class'::regclass)  WHERE c.relnamespace = n.oid  AND c.relname LIKE '%'  AND (false  OR ( c.relkind IN ('r','p') AND n.nspname !~ '^pg_' AND n.nspname <> 'information_schema' )  OR ( c.relkind = 'v' AND n.nspname <> 'pg_catalog' AND n.nspname <> 'information_schema' ) )  ORDER BY TABLE_TYPE,TABLE_SCHEM,TABLE_NAME `;

/** psql 15's queries (test/fixtures/policy/client-queries.json), \d for the table `orders`. */
const STATEMENTS: Array<[string, string]> = [
  ['\\dn', `SELECT n.nspname AS "Name",\n\t  pg_catalog.pg_get_userbyid(n.nspowner) AS "Owner"\n\tFROM pg_catalog.pg_namespace n\n\tWHERE n.nspname !~ '^pg_' AND n.nspname <> 'information_schema'\n\tORDER BY 1;`],
  ['\\dt', `SELECT n.nspname as "Schema",\n\t  c.relname as "Name",\n\t  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'v' THEN 'view' WHEN 'm' THEN 'materialized view' WHEN 'i' THEN 'index' WHEN 'S' THEN 'sequence' WHEN 't' THEN 'TOAST table' WHEN 'f' THEN 'foreign table' WHEN 'p' THEN 'partitioned table' WHEN 'I' THEN 'partitioned index' END as "Type",\n\t  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"\n\tFROM pg_catalog.pg_class c\n\t     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n\t     LEFT JOIN pg_catalog.pg_am am ON am.oid = c.relam\n\tWHERE c.relkind IN ('r','p','')\n\t      AND n.nspname <> 'pg_catalog'\n\t      AND n.nspname !~ '^pg_toast'\n\t      AND n.nspname <> 'information_schema'\n\t  AND pg_catalog.pg_table_is_visible(c.oid)\n\tORDER BY 1,2;`],
  ['\\dt *.*', `SELECT n.nspname as "Schema",\n\t  c.relname as "Name",\n\t  CASE c.relkind WHEN 'r' THEN 'table' WHEN 'p' THEN 'partitioned table' END as "Type",\n\t  pg_catalog.pg_get_userbyid(c.relowner) as "Owner"\n\tFROM pg_catalog.pg_class c\n\t     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n\tWHERE c.relkind IN ('r','p','')\n\tORDER BY 1,2;`],
  ['\\d "orders"', `SELECT c.oid,\n\t  n.nspname,\n\t  c.relname\n\tFROM pg_catalog.pg_class c\n\t     LEFT JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace\n\tWHERE c.relname OPERATOR(pg_catalog.~) '^(orders)$' COLLATE pg_catalog.default\n\t  AND pg_catalog.pg_table_is_visible(c.oid)\n\tORDER BY 2, 3;`],
  ['JDBC getTables', JDBC_GET_TABLES],
];

/**
 * psql 15's whole `\d "Orders 2024"` (9 queries, the table's oid in them) and `\df`, as captured
 * in test/fixtures/policy/client-queries.json; `\d` is pointed at the bench's `orders`.
 */
function capturedStatements(): Array<[string, (oid: string) => string[]]> {
  const corpus = JSON.parse(readFileSync(new URL('../../../test/fixtures/policy/client-queries.json', import.meta.url), 'utf8')) as { captures: Array<{ client: string; statements: string[] }> };
  const of = (client: string) => corpus.captures.find((c) => c.client === client)?.statements ?? [];
  const describe = of('psql \\d "Orders 2024"');
  const oid = /c\.oid = '(\d+)'/.exec(describe.join('\n'))?.[1] ?? '';
  return [
    ['\\d "orders" (all 9 queries)', (orders) => describe.map((sql) => sql.replaceAll(`'${oid}'`, `'${orders}'`).replaceAll('Orders 2024', 'orders'))],
    ['\\df', () => of('psql \\df')],
  ];
}

/** Other users' repos, made once per cluster (kept for later runs: they take a while). */
async function populate(admin: pg.Client, repos: number, log: (s: string) => void): Promise<void> {
  const have = await admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM pg_namespace WHERE nspname LIKE '${PREFIX}\\_%/%'`);
  if ((have.rows[0]?.n ?? 0) >= repos) return;
  log(`catalog: creating ${repos} repos of ${OWNERS} other users`);
  for (let o = 0; o < OWNERS; o++) await admin.query(`DO $$ BEGIN CREATE ROLE ${PREFIX}_${o} NOLOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$`);
  const batch = 250; // locks per transaction stay within max_locks_per_transaction
  for (let from = have.rows[0]?.n ?? 0; from < repos; from += batch) {
    await admin.query(`DO $$
      DECLARE s text; o text;
      BEGIN
        FOR i IN ${from}..${Math.min(repos, from + batch) - 1} LOOP
          o := '${PREFIX}_' || (i % ${OWNERS});
          s := o || '/repo' || i;
          EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I AUTHORIZATION %I', s, o);
          EXECUTE format('CREATE TABLE IF NOT EXISTS %I.orders (id int PRIMARY KEY, note text)', s);
          EXECUTE format('ALTER TABLE %I.orders OWNER TO %I', s, o);
        END LOOP;
      END $$`);
  }
}

/** Median time of the statements run one after the other, and the rows of the last. */
async function timed(client: pg.Client, sql: string | string[], rounds: number): Promise<{ rows: number; ms: number }> {
  const all = typeof sql === 'string' ? [sql] : sql;
  let rows = 0;
  for (let i = 0; i < 2; i++) for (const one of all) rows = (await client.query(one)).rowCount ?? 0;
  const times: number[] = [];
  for (let i = 0; i < rounds; i++) {
    const t = process.hrtime.bigint();
    for (const one of all) await client.query(one);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { rows, ms: times[Math.floor(times.length / 2)] ?? NaN };
}

export async function runCatalog(env: BenchEnv, opts: { repos: number; rounds: number }, log: (s: string) => void): Promise<CatalogResult> {
  const admin = new pg.Client({ connectionString: env.adminUrl });
  await admin.connect();
  const user = env.repobase.user;
  const path = env.repobase.dbname;
  try {
    await populate(admin, opts.repos, log);
    // The user's world: the pgbench repo and 4 more, one with the table `\d` looks up.
    for (let i = 1; i <= 4; i++) {
      const s = `${user}/cat${i}`;
      await admin.query(`CREATE SCHEMA IF NOT EXISTS "${s}" AUTHORIZATION "${user}"`);
      await admin.query(`CREATE TABLE IF NOT EXISTS "${s}".t${i} (id int PRIMARY KEY)`);
      await admin.query(`ALTER TABLE "${s}".t${i} OWNER TO "${user}"`);
    }
    await admin.query(`CREATE TABLE IF NOT EXISTS "${path}".orders (id int PRIMARY KEY)`);
    await admin.query(`ALTER TABLE "${path}".orders OWNER TO "${user}"`);
    await admin.query('ANALYZE pg_catalog.pg_class, pg_catalog.pg_namespace');
    await admin.query(`SET search_path = "${path}"`);
    const asUser = new pg.Client({ host: env.repobase.host, port: env.repobase.port, user, password: env.repobase.password, database: path });
    await asUser.connect();
    try {
      const statements: CatalogStatement[] = [];
      for (const [name, sql] of STATEMENTS) {
        log(`catalog: ${name}`);
        statements.push({ name, filtered: await timed(asUser, sql, opts.rounds), unfiltered: await timed(admin, sql, opts.rounds) });
      }
      const orders = (await admin.query<{ oid: string }>(`SELECT '"${path}".orders'::regclass::oid::text AS oid`)).rows[0]!.oid;
      for (const [name, sql] of capturedStatements()) {
        log(`catalog: ${name}`);
        statements.push({ name, filtered: await timed(asUser, sql(orders), opts.rounds), unfiltered: await timed(admin, sql(orders), opts.rounds) });
      }
      return { otherRepos: opts.repos, userRepos: 5, rounds: opts.rounds, statements };
    } finally {
      await asUser.end();
    }
  } finally {
    await admin.end();
  }
}

/** The report's table. */
export function catalogLines(r: CatalogResult): string[] {
  return [
    `Private catalogs: ${r.otherRepos} repos of other users in the cluster, the user has ${r.userRepos}; median of ${r.rounds} runs. Filtered: through repobase as the user (redirected to the filtered views); unfiltered: the same text directly as the admin.`,
    '',
    '| statement | filtered rows | filtered ms | unfiltered rows | unfiltered ms | filtered / unfiltered time |',
    '|---|---|---|---|---|---|',
    ...r.statements.map((s) => `| ${s.name.replaceAll('|', '\\|')} | ${s.filtered.rows} | ${fmt(s.filtered.ms, 2)} | ${s.unfiltered.rows} | ${fmt(s.unfiltered.ms, 2)} | ${fmt(s.filtered.ms / s.unfiltered.ms, 2)} |`),
  ];
}

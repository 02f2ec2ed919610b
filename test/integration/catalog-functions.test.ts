/**
 * Catalog functions that take an object, and reg* casts, as another tenant would try them: bob
 * calls every stand-in of a checked function (one per overload of the running Postgres) with the
 * oid or name of each of alice's private objects of the matching kind, over the wire (simple and
 * extended protocol) and REST, and must get exactly what he gets for an oid that names nothing.
 * Each call counts only where alice, calling it the same way, gets something else: a call that
 * could not leak proves nothing. Also: the classification against pg_proc of this Postgres.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkedFunctions, classifyFunction, regTypes, type ObjectKind } from '../../src/policy/catalog-functions.js';
import { startTestService, type TestService } from '../helpers/service.js';

type Who = { name: string; key: string };
let svc: TestService;
let admin: pg.Client;
let alice: Who;
let bob: Who;
const clients: pg.Client[] = [];

/** What alice keeps in her private repo, and what must never reach bob. */
const SECRETS = ['payroll', 'margin', 'raise_', '31337', '2027-03-14', 'mood_', 'secret comment', 'pay_', 'alice'];

async function connect(who: Who, database?: string): Promise<pg.Client> {
  const client = new pg.Client(svc.pgOptions(who.name, who.key, database));
  client.on('error', () => undefined);
  await client.connect();
  clients.push(client);
  return client;
}

/** An answer as text: rows, or the error's SQLSTATE and message. */
type Answer = string;

async function wire(client: pg.Client, sql: string, extended: boolean): Promise<Answer> {
  try {
    const r = extended ? await client.query({ text: sql, values: [] , rowMode: 'array' }) : await client.query({ text: sql, rowMode: 'array' });
    return JSON.stringify(r.rows);
  } catch (err: unknown) {
    const e = err as { code?: string; message?: string };
    return `ERROR ${e.code} ${e.message}`;
  }
}

async function rest(who: Who, sql: string): Promise<Answer> {
  const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
    method: 'POST',
    headers: { authorization: `Bearer ${who.key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ query_string: sql }),
  });
  const body = (await res.json()) as { data?: unknown; error?: { code: string; message: string } };
  return body.error ? `ERROR ${body.error.code} ${body.error.message}` : JSON.stringify(body.data);
}

/** Functions whose answer for a missing role shows its oid in an aclitem. */
const aclFunctions = new Set(['acldefault', 'makeaclitem']);

/** An oid that names nothing. */
const MISSING = 4294967000;

/** Alice's objects by kind: [oid, catalog, qualified name (for text arguments)]. */
type Obj = { oid: number; catalog: string; name: string };
const objects = new Map<ObjectKind, Obj[]>();

/** Bob's own objects that some calls need beside hers (a node tree, a role). */
let bobRole = 0;

/** Privilege names that make each has_*_privilege call mean something. */
const privilegeOf: Record<string, string> = {
  has_table_privilege: 'SELECT', has_sequence_privilege: 'USAGE', has_any_column_privilege: 'SELECT',
  has_column_privilege: 'SELECT', has_function_privilege: 'EXECUTE', has_schema_privilege: 'USAGE',
  has_type_privilege: 'USAGE', has_database_privilege: 'CONNECT', has_foreign_data_wrapper_privilege: 'USAGE',
  has_language_privilege: 'USAGE', has_server_privilege: 'USAGE', has_tablespace_privilege: 'CREATE',
  has_parameter_privilege: 'SET', pg_has_role: 'MEMBER',
};

interface Overload {
  name: string;
  argTypes: string[];
  argNames: string[];
}

/**
 * The argument lists to try for one overload, with alice's objects at its object positions:
 * each returned call uses `target` for the object, or MISSING in its baseline twin.
 */
function calls(o: Overload): Array<{ sql: (target: number | string) => string; targets: Array<number | string> }> {
  const spec = checkedFunctions.get(o.name);
  const argc = o.argTypes.length;
  const positions = new Map((spec?.args[argc] ?? []).map((a) => [a.at, a]));
  o.argTypes.forEach((t, i) => {
    const kind = regTypes.get(t);
    if (kind !== undefined && !positions.has(i)) positions.set(i, { at: i, kind });
  });
  // The first object position but a role is the one probed (a role if there is nothing else);
  // other roles are bob's own.
  const probeable = [...positions.values()].filter((p) => ['oid', 'oidvector', 'text', 'name'].includes(o.argTypes[p.at] ?? '') || regTypes.has(o.argTypes[p.at] ?? ''));
  const probed = probeable.find((p) => p.kind !== 'role') ?? probeable[probeable.length - 1];
  if (probed === undefined) return [];
  const kind = probed.kind;
  const pool = kind === 'object' || kind === 'shared' ? [...objects.values()].flat() : (objects.get(kind === 'types' ? 'type' : kind) ?? []);
  const out: Array<{ sql: (target: number | string) => string; targets: Array<number | string> }> = [];
  for (const obj of pool) {
    if (kind === 'shared' && obj.catalog !== 'pg_authid') continue;
    const byName = ['text', 'name'].includes(o.argTypes[probed.at] ?? '');
    const args = (target: number | string): string[] => o.argTypes.map((t, i) => {
      if (i === probed.at) {
        // Computed, so the policy cannot check a constant name: the stand-in must.
        const text = target === MISSING ? (kind === 'role' ? 'no_such_role' : `"${alice.name}/nosuch".no_such_thing${kind === 'proc' ? '()' : ''}`) : String(target);
        if (byName) return `(SELECT '${text.replaceAll("'", "''")}'::text)`;
        if (t === 'oidvector') return `'${target}'::oidvector`;
        // An oid coerced to a reg* type by the call, not by a cast (a cast is wrapped on its own).
        return `${target}::oid`;
      }
      const p = positions.get(i);
      if (p?.kind === 'role') return t === 'oid' ? `${bobRole}::oid` : `current_user`;
      if (i === probed.classAt) return `'${obj.catalog}'::regclass::oid`;
      if (i === probed.catalogNameAt) return `'${obj.catalog}'`;
      if (t === 'text' && privilegeOf[o.name]) return `'${privilegeOf[o.name]}'`;
      if (t === 'pg_node_tree') return `(SELECT conbin FROM pg_catalog.pg_constraint WHERE conname = 'probe_check')`;
      switch (t) {
        case 'integer': return '1';
        case 'smallint': return '1::smallint';
        case 'bigint': return '1::bigint';
        case 'boolean': return 'true';
        case 'text': return `'hello world'`;
        case 'name': return `'pg_class'`;
        case 'tsquery': return `'hello'::tsquery`;
        case 'json': return `'{"a": "hello world"}'::json`;
        case 'jsonb': return `'{"a": "hello world"}'::jsonb`;
        case '"char"': return `'r'::"char"`;
        default: return `NULL::${t}`;
      }
    });
    const target = byName ? obj.name : obj.oid;
    out.push({ sql: (t) => `SELECT ${o.name}(${args(t).join(', ')})`, targets: [target] });
  }
  return out;
}

beforeAll(async () => {
  svc = await startTestService();
  admin = new pg.Client({ connectionString: svc.config.upstreamUrl });
  await admin.connect();
  [alice, bob] = await Promise.all([svc.user('alice'), svc.user('bob')]);
  await svc.control.createRepo({ owner: alice.name, repo: 'secret' });
  await svc.control.createRepo({ owner: bob.name, repo: 'mine' });
  const a = await connect(alice, `${alice.name}/secret`);
  for (const sql of [
    'CREATE TABLE payroll (id serial PRIMARY KEY, pay_amount numeric CONSTRAINT pay_cap CHECK (pay_amount < 31337), pay_note text)',
    'CREATE INDEX payroll_note_idx ON payroll (pay_note)',
    'CREATE INDEX payroll_brin ON payroll USING brin (id)',
    'CREATE TABLE payroll_parts (id int, pay_day date) PARTITION BY RANGE (pay_day)',
    "CREATE TABLE payroll_2027 PARTITION OF payroll_parts FOR VALUES FROM ('2027-01-01') TO ('2028-01-01')",
    'CREATE VIEW margins AS SELECT id, pay_amount * 0.42 AS margin FROM payroll',
    "CREATE FUNCTION raise_pay(x numeric) RETURNS numeric LANGUAGE sql AS $$ SELECT x * 1.1 WHERE now() < '2027-03-14' $$",
    "CREATE FUNCTION raise_all() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.pay_note := '2027-03-14'; RETURN NEW; END $$",
    'CREATE TRIGGER raise_trigger BEFORE INSERT ON payroll FOR EACH ROW EXECUTE FUNCTION raise_all()',
    "CREATE TYPE mood_secret AS ENUM ('payroll_sad')",
    'CREATE TYPE pay_pair AS (a int, b text)',
    'CREATE STATISTICS pay_stats ON id, pay_amount FROM payroll',
    "COMMENT ON TABLE payroll IS 'secret comment'",
    "COMMENT ON FUNCTION raise_pay(numeric) IS 'secret comment'",
    "INSERT INTO payroll (pay_amount) SELECT g FROM generate_series(1, 300) g",
    'ANALYZE payroll',
    'SELECT count(*) FROM payroll',
    "SELECT nextval('payroll_id_seq')",
    "UPDATE payroll SET pay_note = 'x' WHERE id < 10",
    'DELETE FROM payroll WHERE id > 290',
    "SELECT raise_pay(1)",
    'CREATE TABLE probe (x int CONSTRAINT probe_check CHECK (x > 0))',
  ]) await a.query(sql);
  // Its statistics reach the shared counters when the session ends.
  await a.end();
  const b = await connect(bob, `${bob.name}/mine`);
  await b.query('CREATE TABLE probe (x int CONSTRAINT probe_check CHECK (x > 0))');
  const ns = `"${alice.name}/secret"`;
  const rows = await admin.query<{ kind: ObjectKind; oid: number; catalog: string; name: string }>(`
    SELECT 'class' AS kind, c.oid::int, 'pg_class' AS catalog, format('%s.%I', $1::text, c.relname) AS name FROM pg_class c WHERE c.relnamespace = $2::regnamespace
    UNION ALL SELECT 'type', t.oid::int, 'pg_type', format('%s.%I', $1::text, t.typname) FROM pg_type t WHERE t.typnamespace = $2::regnamespace
    UNION ALL SELECT 'proc', p.oid::int, 'pg_proc', p.oid::regprocedure::text FROM pg_proc p WHERE p.pronamespace = $2::regnamespace
    UNION ALL SELECT 'constraint', o.oid::int, 'pg_constraint', o.conname FROM pg_constraint o WHERE o.connamespace = $2::regnamespace
    UNION ALL SELECT 'trigger', t.oid::int, 'pg_trigger', t.tgname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid WHERE c.relnamespace = $2::regnamespace
    UNION ALL SELECT 'rule', r.oid::int, 'pg_rewrite', r.rulename FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class WHERE c.relnamespace = $2::regnamespace
    UNION ALL SELECT 'statistics', s.oid::int, 'pg_statistic_ext', s.stxname FROM pg_statistic_ext s WHERE s.stxnamespace = $2::regnamespace
    UNION ALL SELECT 'namespace', $2::regnamespace::oid::int, 'pg_namespace', $1::text
    UNION ALL SELECT 'role', r.oid::int, 'pg_authid', quote_ident(r.rolname) FROM pg_roles r WHERE r.rolname = $3`, [ns, `${alice.name}/secret`, alice.name]);
  for (const r of rows.rows) objects.set(r.kind, [...(objects.get(r.kind) ?? []), { oid: r.oid, catalog: r.catalog, name: r.name }]);
  bobRole = (await admin.query<{ oid: number }>('SELECT oid::int FROM pg_roles WHERE rolname = $1', [bob.name])).rows[0]!.oid;
}, 120_000);

afterAll(async () => {
  for (const c of clients) await c.end().catch(() => undefined);
  await admin?.end();
  await svc.stop();
});

/** Every overload of the checked functions, as the stand-ins of this Postgres have them. */
async function overloads(): Promise<Overload[]> {
  const res = await admin.query<Overload>(`
    SELECT p.proname AS name,
           coalesce(array_agg(format_type(t, NULL) ORDER BY n) FILTER (WHERE t IS NOT NULL), '{}') AS "argTypes",
           '{}'::text[] AS "argNames"
      FROM pg_proc p LEFT JOIN LATERAL unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, n) ON true
     WHERE p.pronamespace = 'repobase_catalog'::regnamespace AND p.proname <> 'visible' AND p.proname NOT LIKE 'visible\\_%'
       AND p.proname NOT IN ('not_found', 'no_relation', 'pg_notify')
     GROUP BY p.oid, p.proname ORDER BY 1, 2`);
  return res.rows;
}

describe('classification', () => {
  it('classifies every pg_catalog function a user can execute', async () => {
    const res = await admin.query<{ name: string }>(`
      SELECT DISTINCT proname AS name FROM pg_proc p
       WHERE pronamespace = 'pg_catalog'::regnamespace AND (proacl IS NULL OR aclcontains(proacl, makeaclitem(0, proowner, 'EXECUTE', false)))`);
    const missing = res.rows.map((r) => r.name).filter((n) => classifyFunction(n) === undefined);
    expect(missing, 'classify these in src/policy/catalog-functions.ts (and catalog-function-names.ts)').toEqual([]);
  });

  it('checks every oid, reg* and oidvector argument of a function that is not refused', async () => {
    // Plain although they take an oid: oid arithmetic and comparison, large objects (their own
    // privileges), and objects of the whole server (databases, tablespaces, access methods).
    const plainWithOids = /^(btoid|hashoid|oid|int8$|max$|min$|nameconcatoid$|lo_|pg_database_|pg_tablespace_|pg_indexam_|pg_stat_get_db_|pg_stat_get_subscription|pg_typeof$)/;
    const res = await admin.query<{ name: string; types: string[] }>(`
      SELECT proname AS name, array_agg(format_type(t, NULL) ORDER BY n) AS types
        FROM pg_proc p, unnest(p.proargtypes::oid[]) WITH ORDINALITY AS u(t, n)
       WHERE pronamespace = 'pg_catalog'::regnamespace AND (proacl IS NULL OR aclcontains(proacl, makeaclitem(0, proowner, 'EXECUTE', false)))
         AND NOT 'internal'::regtype::oid = ANY (p.proargtypes::oid[])
       GROUP BY p.oid, proname`);
    const unchecked: string[] = [];
    for (const { name, types } of res.rows) {
      const c = classifyFunction(name);
      if (c?.kind === 'refused') continue;
      types.forEach((t, i) => {
        if (t !== 'oid' && t !== 'oidvector' && !regTypes.has(t)) return;
        const covered = c?.kind === 'checked' && ((c.spec.args[types.length] ?? []).some((a) => a.at === i || a.classAt === i) || regTypes.has(t));
        if (!covered && !(c?.kind === 'plain' && plainWithOids.test(name))) unchecked.push(`${name}(${types.join(', ')}) argument ${i + 1}`);
      });
    }
    expect(unchecked).toEqual([]);
  });

  it('has a stand-in for every overload of every checked function', async () => {
    const res = await admin.query<{ name: string; n: number }>(`
      SELECT p.proname AS name, count(w.oid)::int AS n FROM pg_proc p
        LEFT JOIN pg_proc w ON w.pronamespace = 'repobase_catalog'::regnamespace AND w.proname = p.proname AND w.proargtypes = p.proargtypes
       WHERE p.pronamespace = 'pg_catalog'::regnamespace AND p.prokind = 'f' AND p.proname = ANY ($1)
         AND (p.proacl IS NULL OR aclcontains(p.proacl, makeaclitem(0, p.proowner, 'EXECUTE', false)))
       GROUP BY p.oid, p.proname`, [[...checkedFunctions.keys()]]);
    expect(res.rows.filter((r) => r.n !== 1).map((r) => r.name)).toEqual([]);
  });
});

describe('bob probes alice\'s private objects through every checked function', () => {
  it('gets what an oid that names nothing gets, by every front end; alice gets more', async () => {
    const aliceClient = await connect(alice, `${alice.name}/secret`);
    const bobSimple = await connect(bob, `${bob.name}/mine`);
    const bobExtended = await connect(bob, `${bob.name}/mine`);
    const meaningful: string[] = [];
    const vacuous: string[] = [];
    const leaks: string[] = [];
    for (const o of await overloads()) {
      const tries = calls(o);
      let found = false;
      for (const { sql, targets } of tries) {
        const target = targets[0]!;
        const own = await wire(aliceClient, sql(target), false);
        const none = await wire(aliceClient, sql(MISSING), false);
        const norm = (answer: string, t: number | string) => answer.replaceAll(String(t), '<oid>');
        if (norm(own, target) === norm(none, MISSING)) continue;
        found = true;
        const wireBaseline = norm(await wire(bobSimple, sql(MISSING), false), MISSING);
        const restBaseline = norm(await rest(bob, sql(MISSING)), MISSING);
        for (const [how, answer, baseline] of [
          ['wire simple', await wire(bobSimple, sql(target), false), wireBaseline],
          ['wire extended', await wire(bobExtended, sql(target), true), wireBaseline],
          ['REST', await rest(bob, sql(target)), restBaseline],
        ] as const) {
          const shown = norm(answer, target);
          // A name bob wrote himself may come back in an error: her user name is no secret then.
          const secrets = typeof target === 'string' ? SECRETS.filter((s) => s !== 'alice' && !target.includes(s)) : SECRETS;
          const secret = secrets.find((s) => shown.includes(s === 'alice' ? alice.name : s));
          // Errors name what was asked for: the SQLSTATE must match. An aclitem shows a missing
          // role as its oid, which a value cannot do for a role that exists: those answer NULL.
          const same = shown === baseline
            || (shown.startsWith('ERROR') && baseline.startsWith('ERROR') && shown.split(' ')[1] === baseline.split(' ')[1])
            || (aclFunctions.has(o.name) && shown === '[[null]]');
          if (!same || secret !== undefined) leaks.push(`${how}: ${sql(target)} → ${answer} (baseline ${baseline})`);
        }
        meaningful.push(`${o.name}(${o.argTypes.join(', ')})`);
        break;
      }
      if (!found && tries.length > 0) vacuous.push(`${o.name}(${o.argTypes.join(', ')})`);
    }
    expect(leaks).toEqual([]);
    // Every call that could leak was tried. Most answer something for alice and nothing for bob;
    // some statistics counters may still be 0 for both when the server is slow to count.
    expect(meaningful.length, `vacuous: ${vacuous.join('; ')}`).toBeGreaterThan(110);
  }, 300_000);

  it('sees no name of hers through reg* casts of her oids, by every front end', async () => {
    const bobClient = await connect(bob, `${bob.name}/mine`);
    const oids = [...objects.values()].flat().map((o) => o.oid);
    const casts = [...regTypes.keys()].map((t) => `SELECT o::${t}::text, CAST(o AS pg_catalog.${t})::text, ARRAY[o]::${t}[] FROM unnest('{${oids.join(',')}}'::oid[]) o`);
    for (const sql of [...casts, `SELECT array_agg(o::regclass) FROM unnest('{${oids.join(',')}}'::oid[]) o`]) {
      for (const answer of [await wire(bobClient, sql, false), await wire(bobClient, sql, true), await rest(bob, sql)]) {
        expect(answer).not.toMatch(/ERROR/);
        for (const s of SECRETS) expect(answer, sql).not.toContain(s === 'alice' ? alice.name : s);
      }
    }
    // Her own casts still show her names; bob's own objects show his.
    const aliceClient = await connect(alice, `${alice.name}/secret`);
    // (Her table payroll, found by name: catalog rows come in no set order.)
    const payroll = objects.get('class')!.find((o) => o.name.endsWith('.payroll'))!;
    expect(await wire(aliceClient, `SELECT ${payroll.oid}::regclass::text`, false)).toContain('payroll');
    expect(await wire(bobClient, "SELECT c.oid::regclass::text FROM pg_class c WHERE relname = 'probe'", false)).toContain('probe');
    // Output columns keep the names Postgres gives them.
    const named = await bobClient.query("SELECT tableoid::regclass, c.oid::regclass, c.oid::regclass::text, 1259::regclass FROM pg_class c WHERE relname = 'probe'");
    expect(named.fields.map((f) => f.name)).toEqual(['tableoid', 'oid', 'oid', 'regclass']);
    const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query_string: "SELECT tableoid::regclass, relname FROM pg_class WHERE relname = 'probe'" }),
    });
    expect(Object.keys(((await res.json()) as { fields: Record<string, string> }).fields)).toEqual(['tableoid', 'relname']);
  });
});

describe('errors of a rewritten statement', () => {
  it('point at the client\'s own text, by wire and REST', async () => {
    const sql = 'SELECT pg_get_viewdef(c.oid), c.oid::regclass, no_such_column FROM pg_catalog.pg_class c';
    const at = sql.indexOf('no_such_column') + 1;
    const client = await connect(bob, `${bob.name}/mine`);
    const wireError = await client.query(sql).catch((err: unknown) => err as { position?: string });
    expect(Number((wireError as { position?: string }).position)).toBe(at);
    const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bob.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query_string: sql }),
    });
    expect(((await res.json()) as { error: { position: number } }).error.position).toBe(at);
  });
});

/**
 * The isolation attack corpus (test/fixtures/isolation-attacks.ts) run again with a read key and a
 * write key of alice on alice's own repo: through the wire (simple and extended protocol), REST,
 * and directly upstream as the keys' own roles (the second wall alone, no policy). No write of the
 * read key and no reach outside the scope passes: the secret never shows, and nothing outside the
 * scope — nor, for the read key, inside it — changes.
 */
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { keyRoleName } from '../../src/control/key-roles.js';
import { rolePassword } from '../../src/upstream/roles.js';
import { ATTACKS, SECRET, fill, type Attack } from '../fixtures/isolation-attacks.js';
import { startTestService, type TestService } from '../helpers/service.js';

let svc: TestService;
let alice: { name: string; key: string };
let bob: { name: string; key: string };
let names: { scope: string; outside: string; foreign: string; user: string };
const keys: Record<'read' | 'write', { id: string; key: string }> = {} as never;

interface Outcome {
  ok: boolean;
  /** Everything the client saw: rows, notices, the error. */
  text: string;
}

type Runner = (sql: string) => Promise<Outcome>;

/** A pg client whose every answer and notice is kept as text. */
async function wire(options: pg.ClientConfig, extended: boolean): Promise<{ run: Runner; end(): Promise<void> }> {
  let client: pg.Client;
  let notices = '';
  const open = async () => {
    client = new pg.Client(options);
    client.on('error', () => undefined);
    client.on('notice', (n) => (notices += ` ${n.message}`));
    await client.connect();
  };
  await open();
  return {
    run: async (sql) => {
      notices = '';
      try {
        const r = await client.query(extended ? ({ text: sql, queryMode: 'extended' } as pg.QueryConfig) : sql);
        return { ok: true, text: JSON.stringify(r) + notices };
      } catch (err: unknown) {
        const text = `${(err as Error).message} ${notices}`;
        // A transaction left open by an attack (BEGIN READ WRITE…) or a broken session is not carried on.
        await client.query('ROLLBACK').catch(() => undefined);
        if ((client as unknown as { _ending?: boolean })._ending || !(client as unknown as { _connected?: boolean })._connected) await open();
        return { ok: false, text };
      }
    },
    end: async () => void (await client.end().catch(() => undefined)),
  };
}

function rest(key: string): Runner {
  return async (sql) => {
    const res = await fetch(`${svc.httpUrl}/api/v1beta/query/`, {
      method: 'POST',
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ query_string: sql }),
    });
    const text = await res.text();
    return { ok: res.status === 200 && !text.includes('"error"'), text };
  };
}

/** What the attacks must leave as it was. */
async function state(): Promise<unknown> {
  const q = async (sql: string) => (await svc.control.admin.query(sql)).rows;
  return {
    outside: await q(`SELECT v FROM "${names.outside}".secret`),
    foreign: await q(`SELECT v FROM "${names.foreign}".secret`),
    objects: await q(`SELECT c.relname, c.relkind, pg_get_userbyid(c.relowner) AS owner, c.relacl::text AS acl FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname IN ('${names.outside}', '${names.foreign}') ORDER BY 1`),
    repos: await q(`SELECT nspname, nspacl::text AS acl FROM pg_namespace WHERE nspname LIKE '${names.user}/%' OR nspname LIKE '${bob.name}/%' ORDER BY 1`),
    keyRolesOwn: await q(`SELECT count(*)::int AS n FROM pg_shdepend WHERE deptype = 'o' AND refobjid IN (SELECT oid FROM pg_roles WHERE rolname LIKE '${names.user}#%')`),
    roles: await q(`SELECT rolname, rolsuper, rolcanlogin FROM pg_roles WHERE rolname LIKE '${names.user}%' OR rolname = 'escape' ORDER BY 1`),
    members: await q(`SELECT count(*)::int AS n FROM pg_auth_members WHERE member IN (SELECT oid FROM pg_roles WHERE rolname LIKE '${names.user}#%')`),
  };
}

async function scopeState(): Promise<unknown> {
  const q = async (sql: string) => (await svc.control.admin.query(sql)).rows;
  return {
    rows: await q(`SELECT id, v FROM "${names.scope}".t ORDER BY id`),
    objects: await q(`SELECT relname, relkind, relacl::text AS acl FROM pg_class WHERE relnamespace = '"${names.scope}"'::regnamespace ORDER BY 1`),
    sequence: await q(`SELECT last_value FROM "${names.scope}".s`),
    comment: await q(`SELECT obj_description('"${names.scope}".t'::regclass) AS c`),
  };
}

beforeAll(async () => {
  svc = await startTestService();
  alice = await svc.user('alice');
  bob = await svc.user('bob');
  names = { scope: `${alice.name}/sales`, outside: `${alice.name}/other`, foreign: `${bob.name}/hidden`, user: alice.name };
  await svc.control.createRepo({ owner: alice.name, repo: 'sales' });
  await svc.control.createRepo({ owner: alice.name, repo: 'other' });
  await svc.control.createRepo({ owner: bob.name, repo: 'hidden' });
  const setup = async (who: { name: string; key: string }, sql: string) => {
    const c = new pg.Client(svc.pgOptions(who.name, who.key));
    await c.connect();
    await c.query(sql);
    await c.end();
  };
  await setup(alice, `CREATE TABLE "${names.scope}".t (id int, v text); INSERT INTO "${names.scope}".t VALUES (1, 'a'), (2, 'b'); CREATE SEQUENCE "${names.scope}".s`);
  await setup(alice, `CREATE TABLE "${names.outside}".secret (v text); INSERT INTO "${names.outside}".secret VALUES ('${SECRET}')`);
  await setup(alice, `CREATE VIEW "${names.outside}".v AS SELECT * FROM "${names.outside}".secret; CREATE FUNCTION "${names.outside}".f() RETURNS text LANGUAGE sql AS $$ SELECT v FROM "${names.outside}".secret $$`);
  await setup(bob, `CREATE TABLE "${names.foreign}".secret (v text); INSERT INTO "${names.foreign}".secret VALUES ('${SECRET}')`);
  keys.read = await svc.control.keys.create(alice.name, { name: 'reader', repos: [names.scope], access: 'read' });
  keys.write = await svc.control.keys.create(alice.name, { name: 'writer', repos: [names.scope], access: 'write' });
});

afterAll(async () => {
  await svc?.stop();
});

/**
 * Runs every attack with `run`; returns those that passed where they must not. `extended`: node-
 * postgres answers a COPY FROM STDIN it has no stream for with CopyFail and then waits for ever
 * by the extended protocol (against Postgres itself too), so those are sent by the simple one only.
 */
async function attack(run: Runner, access: 'read' | 'write', extended = false): Promise<string[]> {
  const passed: string[] = [];
  for (const a of ATTACKS as Attack[]) {
    if (extended && a.sql.startsWith('COPY') && a.sql.includes('FROM STDIN')) continue;
    const sql = fill(a.sql, names);
    const out = await run(sql);
    expect(out.text, sql).not.toContain(SECRET);
    const allowed = access === 'write' && a.writeKeyMay === true;
    if (out.ok && !allowed) passed.push(`${sql} → ${out.text.slice(0, 200)}`);
  }
  return passed;
}

describe.each(['read', 'write'] as const)('the attack corpus with a %s key of alice', (access) => {
  it('through the wire, simple protocol', async () => {
    const before = await state();
    const scope = await scopeState();
    const c = await wire(svc.pgOptions(alice.name, keys[access].key), false);
    try {
      expect(await attack(c.run, access)).toEqual([]);
    } finally {
      await c.end();
    }
    expect(await state()).toEqual(before);
    if (access === 'read') expect(await scopeState()).toEqual(scope);
  });

  it('through the wire, extended protocol', async () => {
    const before = await state();
    const scope = await scopeState();
    const c = await wire(svc.pgOptions(alice.name, keys[access].key), true);
    try {
      expect(await attack(c.run, access, true)).toEqual([]);
    } finally {
      await c.end();
    }
    expect(await state()).toEqual(before);
    if (access === 'read') expect(await scopeState()).toEqual(scope);
  });

  it('through REST', async () => {
    const before = await state();
    const scope = await scopeState();
    expect(await attack(rest(keys[access].key), access)).toEqual([]);
    expect(await state()).toEqual(before);
    if (access === 'read') expect(await scopeState()).toEqual(scope);
  });

  it('directly upstream as the key\'s own role, without the policy (the second wall alone)', async () => {
    const before = await state();
    const scope = await scopeState();
    const c = await wire(roleConnection(keyRoleName(alice.name, keys[access].id)), false);
    try {
      const passed = await attack(c.run, access);
      // Without the policy a few statements pass in Postgres that change nothing but the key's own
      // sessions: turning read-only off (for this session, or as its role's default: a role may
      // set its own defaults), which leaves it no privilege to write — as the rest of the corpus,
      // run in that read-write session, shows; and a bare VACUUM, which processes only what the
      // role owns: nothing.
      const ownSession = /^(SET default_transaction_read_only|SET SESSION CHARACTERISTICS|BEGIN READ WRITE|SELECT set_config\('default_transaction_read_only'|ALTER ROLE CURRENT_USER SET default_transaction_read_only|VACUUM →)/;
      // And, a known limit (docs/wire.md), a large object: any role may make one in Postgres. It
      // is the key role's until the key is revoked (then its user's), and reaches nothing else.
      const largeObject = /^SELECT lo_(create|from_bytea)\(/;
      expect(passed.filter((p) => !ownSession.test(p) && !largeObject.test(p))).toEqual([]);
    } finally {
      await c.end();
    }
    const role = keyRoleName(alice.name, keys[access].id);
    await svc.control.admin.query('SELECT lo_unlink(oid) FROM pg_largeobject_metadata WHERE lomowner = $1::regrole', [`"${role}"`]);
    expect(await state()).toEqual(before);
    if (access === 'read') expect(await scopeState()).toEqual(scope);
  });
});

/** Upstream as `role`, with its derived password: no repobase in between. */
function roleConnection(role: string): pg.ClientConfig {
  const url = new URL(svc.config.upstreamUrl);
  return { host: url.hostname, port: Number(url.port), database: url.pathname.slice(1), user: role, password: rolePassword(svc.config.secret, role) };
}

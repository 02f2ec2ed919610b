import pg from 'pg';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestService, type TestService } from '../helpers/service.js';
let svc: TestService; let alice: { name: string; key: string };
const N = Number(process.env.LEAK_CLIENTS ?? 40);
const MS = Number(process.env.LEAK_MS ?? 8000);
beforeAll(async () => { svc = await startTestService({ pgSessionsPerUser: Number(process.env.LEAK_BACKENDS ?? 2) }); alice = await svc.user('alice'); await svc.control.createRepo({ owner: alice.name, repo: 'load' });
  const c = new pg.Client(svc.pgOptions(alice.name, alice.key, `${alice.name}/load`)); await c.connect(); await c.query('CREATE TABLE counters (id int PRIMARY KEY, n int NOT NULL DEFAULT 0)'); await c.query(`INSERT INTO counters SELECT g FROM generate_series(0, ${N * 3}) g`); await c.end(); });
afterAll(async () => { await svc?.stop(); });
const ZONES = ['UTC', 'Europe/Paris', 'America/New_York', 'Asia/Tokyo', 'Australia/Sydney', 'Africa/Cairo', 'America/Lima', 'Europe/Berlin'];
const SETTINGS = "current_setting('TimeZone') AS tz, current_setting('application_name') AS app, current_setting('app.client', true) AS me, current_setting('work_mem') AS wm";
it('leak', async () => {
  const leaks: unknown[] = []; const errors: string[] = []; let commits = 0; const want = new Map<number, number>();
  const stopAt = Date.now() + MS;
  async function open(c: number, gen: number) {
    const tz = ZONES[(c + gen) % 8]!; const app = `app-${c}-${gen}`; const me = `me${c}-${gen}`; const viaStartup = (c + gen) % 2 === 0; const wm = `${64 + c}kB`;
    const client = new pg.Client({ ...svc.pgOptions(alice.name, alice.key, `${alice.name}/load`), application_name: viaStartup ? app : undefined, options: viaStartup ? `-c TimeZone=${tz} -c app.client=${me} -c work_mem=${wm}` : undefined });
    const told = new Map<string, string>();
    (client as unknown as { connection: NodeJS.EventEmitter }).connection.on('parameterStatus', (m: { parameterName: string; parameterValue: string }) => told.set(m.parameterName, m.parameterValue));
    client.on('error', (e) => errors.push(`${c}: ${String(e)}`));
    await client.connect();
    if (!viaStartup) { await client.query(`SET TIME ZONE '${tz}'`); await client.query(`SET application_name = '${app}'`); await client.query(`SELECT set_config('app.client', '${me}', false)`); await client.query(`SET work_mem = '${wm}'`); }
    return { client, exp: { tz, app, me, wm }, told };
  }
  const clearer = setInterval(() => void svc.control.createRepo({ owner: alice.name, repo: `r${Math.random().toString(36).slice(2, 8)}` }), 700);
  await Promise.all(Array.from({ length: N }, async (_, c) => {
    let gen = 0; let s = await open(c, gen);
    const check = (row: Record<string, unknown>, where: string) => {
      const got = { tz: row.tz, app: row.app, me: row.me, wm: row.wm };
      if (got.tz !== s.exp.tz || got.app !== s.exp.app || got.me !== s.exp.me || got.wm !== s.exp.wm) leaks.push({ c, where, want: s.exp, got });
      if (s.told.get('TimeZone') !== s.exp.tz || s.told.get('application_name') !== s.exp.app) leaks.push({ c, where: `${where} told`, want: s.exp, told: Object.fromEntries(s.told) });
    };
    let i = 0;
    while (Date.now() < stopAt) {
      i++;
      const kind = (c + i) % 6;
      const id = c * 3 + (i % 3);
      try {
        if (kind === 0) {
          await s.client.query('BEGIN');
          const r = await s.client.query({ name: 'bump', text: `UPDATE counters SET n = n + 1 WHERE id = $1 RETURNING n, ${SETTINGS}`, values: [id] });
          await s.client.query('COMMIT'); commits++; want.set(id, (want.get(id) ?? 0) + 1);
          check(r.rows[0], 'named');
        } else if (kind === 1) {
          const r = await s.client.query(`BEGIN; UPDATE counters SET n = n + 1 WHERE id = ${id}; SELECT ${SETTINGS}; COMMIT`) as unknown as pg.QueryResult[];
          commits++; want.set(id, (want.get(id) ?? 0) + 1);
          check(r[2]!.rows[0], 'simple');
        } else if (kind === 2) {
          await s.client.query('BEGIN'); await s.client.query("SET TIME ZONE 'Pacific/Auckland'"); await s.client.query("SET application_name = 'rolledback'"); await s.client.query("SELECT set_config('app.client', 'rb', false)"); await s.client.query("SET work_mem = '1MB'"); await s.client.query('ROLLBACK');
          const r = await s.client.query({ text: `SELECT $1::int AS x, ${SETTINGS}`, values: [c] });
          check(r.rows[0], 'after rollback');
        } else if (kind === 3) {
          const r = await s.client.query({ name: `own${c % 4}`, text: `SELECT $1::int + ${c} AS x, ${SETTINGS}`, values: [i] });
          if (r.rows[0].x !== i + c) leaks.push({ c, where: 'own stmt', x: r.rows[0].x, want: i + c });
          check(r.rows[0], 'own');
        } else if (kind === 4) {
          const r = await s.client.query(`SELECT ${SETTINGS}`);
          check(r.rows[0], 'plain');
          if (i % 4 === 0) { await s.client.query('CREATE TEMP TABLE tt (x int)'); if (i % 8 === 0) { await s.client.end(); gen++; s = await open(c, gen); } else await s.client.query('DISCARD TEMP'); }
          if (i % 4 === 1) { await s.client.query({ text: 'SELECT set_config($1, $2, false)', values: ['app.client', s.exp.me] }); }
        } else {
          if (i % 5 === 0) { await s.client.end(); gen++; s = await open(c, gen); }
          const r = await s.client.query({ text: `SELECT ${SETTINGS}` });
          check(r.rows[0], 'reconnected');
        }
      } catch (e) { errors.push(`${c}/${kind}: ${String(e)}`); try { await s.client.query('ROLLBACK'); } catch {} }
      if (process.env.LEAK_THINK) await new Promise((r) => setTimeout(r, Math.random() * Number(process.env.LEAK_THINK)));
    }
    await s.client.end();
  }));
  clearInterval(clearer);
  const c = new pg.Client(svc.pgOptions(alice.name, alice.key, `${alice.name}/load`)); await c.connect();
  const { rows } = await c.query('SELECT id, n FROM counters WHERE n > 0'); await c.end();
  const lost = rows.filter((r) => r.n !== want.get(r.id)).length;
  console.log('leaks', leaks.length, JSON.stringify(leaks.slice(0, 5)), 'errors', errors.length, errors.slice(0, 5), 'commits', commits, 'lost', lost);
  expect(errors).toEqual([]);
  expect(leaks).toEqual([]);
  expect(lost).toBe(0);
}, 120_000);

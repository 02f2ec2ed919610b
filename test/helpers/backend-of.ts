/**
 * The process id of the upstream backend that ran a wire client's latest statement. The client
 * cannot tell it: pg_backend_pid() shows it the id of its BackendKeyData, whichever backend serves
 * it. Found from the admin's side, by a statement whose text only this client runs.
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';

export async function backendOf(client: pg.Client, admin: Pick<pg.Client, 'query'>): Promise<number> {
  const text = `SELECT 'backend of ${randomUUID()}'`;
  await client.query(text);
  const { rows } = await admin.query<{ pid: number }>('SELECT pid FROM pg_stat_activity WHERE query = $1', [text]);
  if (rows.length !== 1) throw new Error(`${rows.length} backends ran ${text}`);
  return rows[0]!.pid;
}

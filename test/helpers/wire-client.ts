/** A node-postgres client of a test user on the service's wire front end. */
import pg from 'pg';
import type { TestService } from './service.js';

/** Connected; an error event (a backend ended under it) is left for the test to see in its queries. */
export async function wireClient(svc: Pick<TestService, 'pgOptions'>, who: { name: string; key: string }): Promise<pg.Client> {
  const c = new pg.Client(svc.pgOptions(who.name, who.key));
  c.on('error', () => undefined);
  await c.connect();
  return c;
}

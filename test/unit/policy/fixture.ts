// The fixed principal of the policy tests, and helpers to decide and describe decisions.
import { createPolicy, type Decision, type Policy, type Rights, type Session } from '../../../src/policy/index.js';

/** alice owns alice/sales and alice/empty, writes carol/shared, reads dave/readonly and the public erin/public; bob/secret is private. */
export const alice: Rights = {
  user: 'alice',
  repos: new Map([
    ['alice/sales', 'own'],
    ['alice/empty', 'own'],
    ['carol/shared', 'write'],
    ['dave/readonly', 'read'],
    ['erin/public', 'read'],
  ]),
};

export const inSales: Session = { searchPath: ['alice/sales'] };

let shared: Promise<Policy> | undefined;

/** One policy per test file (loading the WASM once). */
export function policy(): Promise<Policy> {
  shared ??= createPolicy({ maxStatementBytes: 1024 * 1024 });
  return shared;
}

/** Decides with alice in alice/sales unless told otherwise. */
export async function decide(sql: string, session: Session = inSales, rights: Rights = alice): Promise<Decision> {
  return (await policy()).decide(sql, rights, session);
}

/** A short description for failure messages. */
export function summary(d: Decision): string {
  switch (d.kind) {
    case 'deny':
      return `deny ${d.error.code} ${d.error.message}`;
    case 'rewrite':
      return `rewrite ${d.sql}`;
    case 'handled':
      return `handled ${JSON.stringify(d.action)}`;
    case 'allow':
      return `allow ${JSON.stringify(d.changes)}`;
  }
}

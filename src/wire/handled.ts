/**
 * Statements the control plane performs instead of Postgres (the policy's `handled` decision:
 * CREATE SCHEMA / DROP SCHEMA of a repo, GRANT as sharing), on the wire. They take effect at
 * once, so not inside a transaction block.
 */
import type { ControlPlane } from '../control/control-plane.js';
import type { AuditEvent, AuditOrigin } from '../control/audit.js';
import { performHandled } from '../control/handled.js';
import type { Decision } from '../policy/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import { buildCommandComplete } from '../protocol/index.js';

type Handled = Extract<Decision, { kind: 'handled' }>;

/** Runs `d` for `user`; resolves with its CommandCompletes, or rejects with the error the client gets. */
export async function runHandled(d: Handled, user: string, sql: string, status: string, control: ControlPlane, audit: (e: Omit<AuditEvent, 'user' | keyof AuditOrigin>) => void): Promise<Buffer[]> {
  if (status !== 'I') {
    throw new PgError(SqlState.ActiveSqlTransaction, `${d.commandTags[0] ?? ''} of a repo cannot run inside a transaction block`, { hint: 'repos and their sharing change at once; run it outside BEGIN … COMMIT' });
  }
  for (const change of await performHandled(control, user, d.action)) audit({ ...change, sql });
  return d.commandTags.map((tag) => buildCommandComplete(tag));
}

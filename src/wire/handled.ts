/**
 * Statements the control plane performs instead of Postgres: `CREATE SCHEMA` / `DROP SCHEMA` of a
 * repo (the policy's `handled` decision), which keep the control plane's records and the grants
 * in step. They take effect at once, so not inside a transaction block.
 */
import type { ControlPlane } from '../control/control-plane.js';
import type { AuditEvent, AuditOrigin } from '../control/audit.js';
import type { Decision } from '../policy/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import { buildCommandComplete } from '../protocol/index.js';

type Handled = Extract<Decision, { kind: 'handled' }>;

/** Runs `d`; resolves with its CommandComplete, or rejects with the error the client gets. */
export async function runHandled(d: Handled, sql: string, status: string, control: ControlPlane, audit: (e: Omit<AuditEvent, 'user' | keyof AuditOrigin>) => void): Promise<Buffer> {
  if (status !== 'I') {
    throw new PgError(SqlState.ActiveSqlTransaction, `${d.commandTag} of a repo cannot run inside a transaction block`, { hint: 'creating and dropping repos takes effect at once; run it outside BEGIN … COMMIT' });
  }
  const { action } = d;
  const ref = { owner: action.owner, repo: action.repo };
  try {
    if (action.kind === 'create_repo') await control.createRepo(ref);
    else await control.deleteRepo(ref);
    audit({ action: action.kind === 'create_repo' ? 'repo_create' : 'repo_delete', target: `${action.owner}/${action.repo}`, sql });
  } catch (err: unknown) {
    const skip = err instanceof PgError && ((action.kind === 'create_repo' && action.ifNotExists && err.code === SqlState.DuplicateSchema) || (action.kind === 'drop_repo' && action.ifExists && err.code === SqlState.InvalidSchemaName));
    if (!skip) throw err;
  }
  return buildCommandComplete(d.commandTag);
}

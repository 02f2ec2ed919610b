/**
 * Statements the control plane performs instead of Postgres (the policy's `handled` decisions),
 * for both front ends: CREATE SCHEMA / DROP SCHEMA of a repo, and GRANT / ALTER DEFAULT
 * PRIVILEGES as sharing. Answers as Postgres would for the same statement; what changed is
 * returned for the audit log.
 */
import type { HandledAction } from '../policy/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import { schemaHasObjects } from '../upstream/query-catalog.js';
import type { AuditAction } from './audit.js';
import type { ControlPlane } from './control-plane.js';

/** An audit row of a change made. */
export interface HandledChange {
  action: AuditAction;
  target: string;
  detail?: string;
}

function assertNever(x: never): never {
  throw new Error(`unexpected action ${JSON.stringify(x)}`);
}

/** Performs `action` for `user`; the changes it made (none for IF [NOT] EXISTS that found nothing to do). */
export async function performHandled(control: ControlPlane, user: string, action: HandledAction): Promise<HandledChange[]> {
  switch (action.kind) {
    case 'create_repo': {
      const ref = { owner: action.owner, repo: action.repo };
      if (action.owner !== user) throw new PgError(SqlState.InsufficientPrivilege, `permission denied for repo "${action.owner}/${action.repo}"`);
      if (action.ifNotExists && (await control.getRepo(ref)) !== undefined) return [];
      await control.createRepo(ref, { isPrivate: true });
      return [{ action: 'repo_create', target: `${action.owner}/${action.repo}` }];
    }
    case 'drop_repo': {
      const ref = { owner: action.owner, repo: action.repo };
      const name = `${action.owner}/${action.repo}`;
      if (action.owner !== user) throw new PgError(SqlState.InsufficientPrivilege, `permission denied for repo "${name}"`);
      if ((await control.getRepo(ref)) === undefined) {
        if (action.ifExists) return [];
        throw new PgError(SqlState.InvalidSchemaName, `schema "${name}" does not exist`);
      }
      if (!action.cascade && (await schemaHasObjects(control.admin, name))) {
        throw new PgError('2BP01' /* dependent_objects_still_exist */, `cannot drop schema "${name}" because other objects depend on it`, {
          hint: 'Use DROP ... CASCADE to drop the dependent objects too.',
        });
      }
      await control.deleteRepo(ref);
      return [{ action: 'repo_delete', target: name }];
    }
    case 'share':
      return share(control, user, action);
    default:
      return assertNever(action);
  }
}

/** Each grantee gets at least its level: a collaborator is raised to write, never lowered; PUBLIC makes the repo public. */
async function share(control: ControlPlane, user: string, action: Extract<HandledAction, { kind: 'share' }>): Promise<HandledChange[]> {
  const changes: HandledChange[] = [];
  for (const { repo, grantee, level } of action.grants) {
    const ref = { owner: user, repo };
    const name = `${user}/${repo}`;
    const info = await control.getRepo(ref);
    if (info === undefined) throw new PgError(SqlState.InvalidSchemaName, `schema "${name}" does not exist`);
    if (grantee === null) {
      if (!info.isPrivate) continue;
      await control.updateRepo(ref, { isPrivate: false });
      changes.push({ action: 'repo_visibility', target: name, detail: 'public' });
      continue;
    }
    const current = (await control.listCollaborators(ref)).find((c) => c.user === grantee)?.permission;
    if (current === level || current === 'write') continue;
    await control.setCollaborator(ref, grantee, level);
    changes.push({ action: 'share_set', target: name, detail: `${grantee}:${level}` });
  }
  return changes;
}

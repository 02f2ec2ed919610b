/**
 * `/repos/…`: list, create, read, change and delete repos, and share them. Only the owner
 * changes a repo. Someone who cannot read a repo learns nothing about it: a private repo of
 * another user answers 404 exactly like a missing one; a repo they can read but do not own
 * answers 403 to changes. A scoped key lists and reads the repos of its scope (others are 404)
 * and changes none (403).
 */
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { ControlPlane, Principal, RepoAccess, RepoInfo, RepoRef } from '../../control/control-plane.js';
import { schemaName } from '../../control/names.js';
import { PgError, SqlState } from '../../shared/errors.js';
import { listTables, type TableInfo } from '../../upstream/query-catalog.js';
import { fullPrincipalOf, principalOf } from '../auth.js';
import { audit } from '../metering.js';
import {
  CollaboratorList,
  CollaboratorParams,
  Collaborator,
  CreateRepo,
  Repo,
  RepoDetail,
  RepoList,
  RepoListQuery,
  RepoParams,
  SetCollaborator,
  UpdateRepo,
} from '../schemas.js';

/** The API's spelling of a repo, with the access the caller has to it. */
export function repoJson(info: RepoInfo, permission: RepoAccess): Repo {
  return {
    name: info.name,
    owner: info.owner,
    repo: info.repo,
    is_private: info.isPrivate,
    description: info.description,
    created_at: info.createdAt.toISOString(),
    permission,
  };
}

/** The API's spelling of a table of the catalog. */
function tableJson(t: TableInfo): RepoDetail['tables'][number] {
  return { name: t.name, row_estimate: t.rowEstimate, primary_key: t.primaryKey, columns: t.columns };
}

function notFound(ref: RepoRef): PgError {
  return new PgError(SqlState.InvalidSchemaName, `repo "${schemaName(ref)}" does not exist`);
}

/** The repo if the principal may read it (a scoped key: in its scope); otherwise 404, whether it exists or not. */
async function readable(control: ControlPlane, who: Principal, ref: RepoRef): Promise<{ info: RepoInfo; access: RepoAccess }> {
  const access = (await control.rights(who)).repos.get(schemaName(ref));
  const info = access ? await control.getRepo(ref) : undefined;
  if (!access || !info) throw notFound(ref);
  return { info, access };
}

/** The repo if the principal's user owns it and the principal is not a scoped key; 403 if they can only read it, 404 if not even that. */
async function owned(control: ControlPlane, req: import('fastify').FastifyRequest, ref: RepoRef, what: string): Promise<RepoInfo> {
  const { info, access } = await readable(control, principalOf(req), ref);
  fullPrincipalOf(req, what);
  if (access !== 'own') {
    throw new PgError(SqlState.InsufficientPrivilege, `only the owner can change repo "${info.name}"`, {
      hint: `you have ${access} access; ask ${info.owner} to make the change`,
    });
  }
  return info;
}

/** Routes under `/repos/`. */
export const repoRoutes: FastifyPluginAsyncTypebox<{ control: ControlPlane }> = async (app, { control }) => {
  app.get(
    '/repos/',
    { schema: { summary: 'your repos; with ?include=shared also those shared with you', tags: ['repos'], querystring: RepoListQuery, response: { 200: RepoList } } },
    async (req) => {
      const who = principalOf(req);
      const repos = await control.listReposWithAccess(who.user, { shared: req.query.include === 'shared' });
      if (who.key === undefined || who.key.access === 'full') return { repos: repos.map((r) => repoJson(r.info, r.access)) };
      // A scoped key lists the repos of its scope, with the access it has there.
      const rights = await control.rights(who);
      return { repos: repos.flatMap((r) => (rights.key?.repos === null || rights.key?.repos.includes(r.info.name) ? [repoJson(r.info, rights.repos.get(r.info.name) ?? r.access)] : [])) };
    },
  );

  app.post('/repos/', { schema: { summary: 'create a repo', tags: ['repos'], body: CreateRepo, response: { 201: Repo } } }, async (req, reply) => {
    const user = fullPrincipalOf(req, 'creating repos').user;
    const slash = req.body.name.indexOf('/');
    const owner = slash < 0 ? user : req.body.name.slice(0, slash);
    if (owner !== user) {
      throw new PgError(SqlState.InsufficientPrivilege, `repos are created in your own namespace "${user}/", not "${owner}/"`);
    }
    const info = await control.createRepo(
      { owner, repo: req.body.name.slice(slash + 1) },
      { isPrivate: req.body.is_private ?? true, description: req.body.description ?? '' },
    );
    audit(control, req, { action: 'repo_create', target: info.name, detail: info.isPrivate ? 'private' : 'public' });
    return reply.code(201).send(repoJson(info, 'own'));
  });

  app.get(
    '/repos/:owner/:repo/',
    { schema: { summary: 'a repo with its tables: columns, primary key, estimated rows', tags: ['repos'], params: RepoParams, response: { 200: RepoDetail } } },
    async (req) => {
      const { info, access } = await readable(control, principalOf(req), req.params);
      // The admin pool sees every schema: reached only after the read check above.
      return { ...repoJson(info, access), tables: (await listTables(control.admin, info.name)).map(tableJson) };
    },
  );

  app.patch(
    '/repos/:owner/:repo/',
    { schema: { summary: 'change visibility or description (owner only)', tags: ['repos'], params: RepoParams, body: UpdateRepo, response: { 200: Repo } } },
    async (req) => {
      const before = await owned(control, req, req.params, "changing a repo's settings");
      const info = await control.updateRepo(req.params, { isPrivate: req.body.is_private, description: req.body.description });
      if (info.isPrivate !== before.isPrivate) audit(control, req, { action: 'repo_visibility', target: info.name, detail: info.isPrivate ? 'private' : 'public' });
      return repoJson(info, 'own');
    },
  );

  app.delete('/repos/:owner/:repo/', { schema: { summary: 'delete a repo with its tables (owner only)', tags: ['repos'], params: RepoParams } }, async (req, reply) => {
    await owned(control, req, req.params, 'deleting repos');
    await control.deleteRepo(req.params);
    audit(control, req, { action: 'repo_delete', target: schemaName(req.params) });
    return reply.code(204).send();
  });

  app.get(
    '/repos/:owner/:repo/collaborators/',
    { schema: { summary: 'who the repo is shared with (owner only)', tags: ['repos'], params: RepoParams, response: { 200: CollaboratorList } } },
    async (req) => {
      await owned(control, req, req.params, "listing a repo's collaborators");
      return { collaborators: await control.listCollaborators(req.params) };
    },
  );

  app.put(
    '/repos/:owner/:repo/collaborators/:user',
    {
      schema: { summary: 'share the repo: read or write (owner only)', tags: ['repos'], params: CollaboratorParams, body: SetCollaborator, response: { 200: Collaborator } },
    },
    async (req) => {
      const ref = { owner: req.params.owner, repo: req.params.repo };
      await owned(control, req, ref, 'sharing repos');
      await control.setCollaborator(ref, req.params.user, req.body.permission);
      audit(control, req, { action: 'share_set', target: schemaName(ref), detail: `${req.params.user}:${req.body.permission}` });
      return { user: req.params.user, permission: req.body.permission };
    },
  );

  app.delete(
    '/repos/:owner/:repo/collaborators/:user',
    { schema: { summary: 'stop sharing the repo with a user (owner only)', tags: ['repos'], params: CollaboratorParams } },
    async (req, reply) => {
      const ref = { owner: req.params.owner, repo: req.params.repo };
      await owned(control, req, ref, 'sharing repos');
      await control.removeCollaborator(ref, req.params.user);
      audit(control, req, { action: 'share_remove', target: schemaName(ref), detail: req.params.user });
      return reply.code(204).send();
    },
  );
};

// GRANT and ALTER DEFAULT PRIVILEGES as sharing: access to repos is the control plane's
// (collaborators read or write, public repos), so a grant on the objects of one's own repo that
// the collaborator model can express is performed by it as sharing the repo — what a restored
// pg_dump script (`GRANT USAGE ON SCHEMA "alice/shop" TO bob`, `GRANT SELECT ON TABLE … TO bob`)
// needs. The level is the smallest that covers the privileges: USAGE on the repo and SELECT on a
// table read; INSERT, UPDATE, DELETE on a table, USAGE or SELECT on a sequence write (what write
// collaborators hold). Anything else — REVOKE, column privileges, WITH GRANT OPTION, TRUNCATE,
// REFERENCES, TRIGGER, CREATE, functions, roles other than users or PUBLIC — stays refused, with
// the sharing API in the hint.
import type { ShareGrant } from './facts.js';
import { arr, fieldsOf, str, stringNode, type Json, type JsonObject } from './json.js';
import { refusals } from './refusals.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

type Level = ShareGrant['level'];

/** The role of a scoped key (`alice#0123456789ab`, control/key-roles.ts). */
const KEY_ROLE = /^[a-z][a-z0-9_]{1,38}#[0-9a-f]{12}$/;

/**
 * Grants to the roles of scoped keys, whatever the privileges: a pg_dump of a repo a key reaches
 * holds the key's grants, which the control plane keeps in step itself. Recorded as shares, they
 * are nothing to do for the caller's own keys and refused for anyone else's (decide.ts).
 */
function toKeyRoles(grantees: Array<string | null> | undefined): boolean {
  return grantees !== undefined && grantees.length > 0 && grantees.every((g) => g !== null && KEY_ROLE.test(g));
}

const levels: Readonly<Record<string, Readonly<Record<string, Level>>>> = {
  OBJECT_SCHEMA: { usage: 'read' },
  OBJECT_TABLE: { select: 'read', insert: 'write', update: 'write', delete: 'write' },
  OBJECT_SEQUENCE: { usage: 'write', select: 'write' },
};

/** The level the privileges need, or undefined when the model cannot express them. */
function levelOf(objtype: string, privileges: Json | undefined): Level | undefined {
  const table = levels[objtype];
  const privs = arr(privileges);
  if (table === undefined || privs.length === 0) return undefined; // ALL: more than any level
  let level: Level = 'read';
  for (const p of privs) {
    const priv = fieldsOf(p, 'AccessPriv');
    const name = str(priv?.priv_name);
    const needed = name === undefined ? undefined : table[name];
    if (needed === undefined || priv?.cols !== undefined) return undefined;
    if (needed === 'write') level = 'write';
  }
  return level;
}

/** Users by name, or null for PUBLIC; undefined when a grantee is anything else. */
function granteesOf(list: Json | undefined): Array<string | null> | undefined {
  const out: Array<string | null> = [];
  for (const g of arr(list)) {
    const spec = fieldsOf(g, 'RoleSpec');
    const type = str(spec?.roletype);
    if (type === 'ROLESPEC_PUBLIC') out.push(null);
    else if (type === 'ROLESPEC_CSTRING') out.push(str(spec?.rolename) ?? '');
    else return undefined;
  }
  return out;
}

function share(w: Walker, schemas: string[], grantees: Array<string | null>, level: Level, command: string): void {
  for (const schema of schemas) {
    w.ref({ kind: 'schema', schema, name: '', need: 'own', create: false, temp: false });
    for (const grantee of grantees) w.facts.shares.push({ schema, grantee, level });
  }
  w.facts.shareCommand = command;
}

function grant(w: Walker, n: JsonObject, scope: Scope): void {
  const what = n.is_grant === true ? 'GRANT' : 'REVOKE';
  const refused = refusals.grant(what);
  const objtype = str(n.objtype) ?? '';
  const grantees = granteesOf(n.grantees);
  const level = toKeyRoles(grantees) && objtype in levels ? 'read' : levelOf(objtype, n.privileges);
  if (n.is_grant !== true || n.grant_option === true || level === undefined || grantees === undefined) return w.refuse(refused);
  const targtype = str(n.targtype);
  const schemas: string[] = [];
  if (targtype === 'ACL_TARGET_ALL_IN_SCHEMA' || objtype === 'OBJECT_SCHEMA') {
    for (const o of arr(n.objects)) schemas.push(stringNode(o) ?? '');
  } else if (targtype === 'ACL_TARGET_OBJECT') {
    for (const o of arr(n.objects)) {
      const rv = fieldsOf(o, 'RangeVar');
      const schema = str(rv?.schemaname);
      // Shared per repo: the repo must be named (pg_dump always does).
      if (rv === undefined || schema === undefined) return w.refuse({ ...refused, hint: 'name the table with its repo, "<user>/<repo>".table' });
      w.relation(rv, 'own', scope, { target: true });
      schemas.push(schema);
    }
  } else {
    return w.refuse(refused);
  }
  share(w, schemas, grantees, level, 'GRANT');
}

function defaultPrivileges(w: Walker, n: JsonObject): void {
  const refused = refusals.grant('ALTER DEFAULT PRIVILEGES');
  const action = fieldsOf(n.action, 'GrantStmt');
  const grantees = granteesOf(action?.grantees);
  const objtype = str(action?.objtype) ?? '';
  const level = action === undefined ? undefined : toKeyRoles(grantees) && objtype in levels ? 'read' : levelOf(objtype, action.privileges);
  if (action === undefined || action.is_grant !== true || action.grant_option === true || level === undefined || grantees === undefined) return w.refuse(refused);
  let schemas: string[] | undefined;
  for (const option of arr(n.options)) {
    const def = fieldsOf(option, 'DefElem');
    const items = arr(fieldsOf(def?.arg, 'List')?.items);
    if (str(def?.defname) === 'schemas') schemas = items.map((i) => stringNode(i) ?? '');
    // FOR ROLE: only one's own defaults (the owner's: a repo's objects are all the owner's).
    else if (str(def?.defname) === 'roles') for (const role of granteesOf(items) ?? [null]) w.facts.owners.push(role ?? '');
    else return w.refuse(refused);
  }
  if (schemas === undefined) return w.refuse({ ...refused, hint: 'name the repo: ALTER DEFAULT PRIVILEGES IN SCHEMA "<user>/<repo>" …' });
  share(w, schemas, grantees, level, 'ALTER DEFAULT PRIVILEGES');
}

export const grantHandlers: ReadonlyArray<[string, HandlerEntry]> = [
  ['GrantStmt', { handle: grant, command: 'GRANT' }],
  ['AlterDefaultPrivilegesStmt', { handle: (w, n) => defaultPrivileges(w, n), command: 'ALTER DEFAULT PRIVILEGES' }],
];

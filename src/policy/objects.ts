// Statements that name existing objects by type + name list rather than RangeVar: DROP, COMMENT
// ON, ALTER … RENAME, ALTER … SET SCHEMA. The list's shape depends on the object type
// (`DROP TRIGGER tr ON s.t` is ['s', 't', 'tr'], an operator class starts with its index method).
import type { Need, Refusal } from './facts.js';
import { arr, fieldsOf, nameList, nodeOf, str, stringNode, type Json, type JsonObject } from './json.js';
import { refusals } from './refusals.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

const r = refusals;

/** Object types that are not in a repo: the server's, the service's or other users'. */
const globalObjects = new Map<string, (what: string) => Refusal>([
  ['OBJECT_DATABASE', r.database],
  ['OBJECT_ROLE', r.roles],
  ['OBJECT_TABLESPACE', r.tablespace],
  ['OBJECT_EXTENSION', r.extension],
  ['OBJECT_FDW', r.foreignData],
  ['OBJECT_FOREIGN_SERVER', r.foreignData],
  ['OBJECT_USER_MAPPING', r.foreignData],
  ['OBJECT_FOREIGN_TABLE', r.foreignData],
  ['OBJECT_LANGUAGE', r.language],
  ['OBJECT_PUBLICATION', r.replication],
  ['OBJECT_PUBLICATION_NAMESPACE', r.replication],
  ['OBJECT_PUBLICATION_REL', r.replication],
  ['OBJECT_SUBSCRIPTION', r.replication],
  ['OBJECT_EVENT_TRIGGER', r.eventTrigger],
  ['OBJECT_ACCESS_METHOD', r.server],
  ['OBJECT_PARAMETER_ACL', r.server],
  ['OBJECT_TRANSFORM', r.unsupported],
  ['OBJECT_AMOP', r.unsupported],
  ['OBJECT_AMPROC', r.unsupported],
]);

const relationTypes = new Set(['OBJECT_TABLE', 'OBJECT_VIEW', 'OBJECT_MATVIEW', 'OBJECT_INDEX', 'OBJECT_SEQUENCE']);
const onRelationTypes = new Set(['OBJECT_COLUMN', 'OBJECT_TABCONSTRAINT', 'OBJECT_TRIGGER', 'OBJECT_RULE', 'OBJECT_POLICY', 'OBJECT_ATTRIBUTE']);
const routineTypes = new Set(['OBJECT_FUNCTION', 'OBJECT_PROCEDURE', 'OBJECT_ROUTINE', 'OBJECT_AGGREGATE', 'OBJECT_OPERATOR']);

/** `OBJECT_FOREIGN_TABLE` → `FOREIGN TABLE`, for messages. */
function objectWord(type: string): string {
  return type.replace(/^OBJECT_/, '').replaceAll('_', ' ');
}

/** Refuses global object types; true when refused. */
function refuseGlobal(w: Walker, type: string, verb: string): boolean {
  const refusal = globalObjects.get(type);
  if (refusal === undefined) return false;
  w.refuse(refusal(`${verb} ${objectWord(type)}`));
  return true;
}

/** The object an (objtype, object) pair names, as a reference needing `need`. */
export function objectRef(w: Walker, type: string, object: Json | undefined, need: Need, scope: Scope): void {
  const names = nameList(object);
  if (relationTypes.has(type) && names !== undefined) {
    w.qualified('relation', names, need);
  } else if (onRelationTypes.has(type) && names !== undefined) {
    w.qualified('relation', names.slice(0, -1), need);
  } else if (type === 'OBJECT_SCHEMA') {
    w.ref({ kind: 'schema', schema: stringNode(object) ?? names?.[0] ?? '', name: '', need, create: false, temp: false });
  } else if (type === 'OBJECT_OPCLASS' || type === 'OBJECT_OPFAMILY') {
    if (names !== undefined) w.qualified('object', names.slice(1), need);
  } else if (routineTypes.has(type)) {
    const owa = fieldsOf(object, 'ObjectWithArgs');
    const objname = nameList(owa?.objname);
    if (objname !== undefined) w.qualified('object', objname, need);
    if (owa !== undefined) w.rest(owa, ['objname'], 'read', scope);
  } else if (type === 'OBJECT_TYPE' || type === 'OBJECT_DOMAIN' || type === 'OBJECT_DOMCONSTRAINT') {
    // A TypeName, or for a domain constraint [TypeName, constraint name].
    const typeName = nodeOf(object)?.[0] === 'List' ? arr(fieldsOf(object, 'List')?.items)[0] : object;
    const typeNames = nameList(fieldsOf(typeName, 'TypeName')?.names);
    if (typeNames !== undefined) w.qualified('object', typeNames, need);
  } else if (names !== undefined && type !== 'OBJECT_LARGEOBJECT') {
    w.qualified('object', names, need);
  } else {
    w.visit(object, 'read', scope);
  }
}

function drop(w: Walker, n: JsonObject, scope: Scope): void {
  const type = str(n.removeType) ?? '';
  if (refuseGlobal(w, type, 'DROP')) return;
  if (type === 'OBJECT_SCHEMA') {
    if (w.ctx.body) w.refuse(r.schemaInBody);
    const names = arr(n.objects).map((o) => stringNode(o) ?? '');
    w.facts.schema ??= { kind: 'drop', names, ifExists: n.missing_ok === true, cascade: str(n.behavior) === 'DROP_CASCADE' };
    return;
  }
  for (const object of arr(n.objects)) objectRef(w, type, object, 'own', scope);
}

function comment(w: Walker, n: JsonObject, scope: Scope): void {
  const type = str(n.objtype) ?? '';
  if (refuseGlobal(w, type, 'COMMENT ON')) return;
  objectRef(w, type, n.object, 'own', scope);
}

function rename(w: Walker, n: JsonObject, scope: Scope): void {
  const type = str(n.renameType) ?? '';
  if (type === 'OBJECT_SCHEMA') {
    w.refuse(r.renameRepo);
    return;
  }
  if (refuseGlobal(w, type, 'ALTER … RENAME of')) return;
  const rv = fieldsOf(n.relation, 'RangeVar');
  if (rv !== undefined) w.relation(rv, 'own', scope, { target: true });
  else objectRef(w, type, n.object, 'own', scope);
}

function setSchema(w: Walker, n: JsonObject, scope: Scope): void {
  const type = str(n.objectType) ?? '';
  if (refuseGlobal(w, type, 'ALTER … SET SCHEMA of')) return;
  const rv = fieldsOf(n.relation, 'RangeVar');
  if (rv !== undefined) w.relation(rv, 'own', scope, { target: true });
  else objectRef(w, type, n.object, 'own', scope);
  // Moving an object into a schema creates it there.
  w.ref({ kind: 'schema', schema: str(n.newschema) ?? '', name: '', need: 'own', create: true, temp: false });
}

/**
 * `… OWNER TO role`: everything in a repo belongs to its owner, so the only owner allowed is the
 * user (a no-op that pg_dump's output carries); the name is checked at decision time.
 */
export function newOwner(w: Walker, roleSpec: Json | undefined): void {
  const spec = fieldsOf(roleSpec, 'RoleSpec');
  const type = str(spec?.roletype);
  if (type === 'ROLESPEC_CSTRING') w.facts.owners.push(str(spec?.rolename) ?? '');
  else if (type !== 'ROLESPEC_CURRENT_USER' && type !== 'ROLESPEC_CURRENT_ROLE' && type !== 'ROLESPEC_SESSION_USER') w.refuse(r.owner);
}

function alterOwner(w: Walker, n: JsonObject, scope: Scope): void {
  const type = str(n.objectType) ?? '';
  if (refuseGlobal(w, type, 'ALTER … OWNER of')) return;
  const rv = fieldsOf(n.relation, 'RangeVar');
  if (rv !== undefined) w.relation(rv, 'own', scope, { target: true });
  else objectRef(w, type, n.object, 'own', scope);
  newOwner(w, n.newowner);
}

export const objectHandlers: ReadonlyArray<[string, HandlerEntry]> = [
  ['AlterOwnerStmt', { handle: alterOwner, command: 'ALTER … OWNER' }],
  ['DropStmt', { handle: drop, command: 'DROP' }],
  ['CommentStmt', { handle: comment, command: 'COMMENT' }],
  ['RenameStmt', { handle: rename, command: 'ALTER … RENAME' }],
  ['AlterObjectSchemaStmt', { handle: setSchema, command: 'ALTER … SET SCHEMA' }],
];

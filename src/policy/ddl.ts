// Creating and altering objects: the object created or changed needs ownership of its repo;
// what the definition merely uses (LIKE, REFERENCES, column types, functions) is read.
import { target, targets } from './dml.js';
import { arr, fieldsOf, nameList, obj, str, type JsonObject } from './json.js';
import { refusals } from './refusals.js';
import { newOwner } from './objects.js';
import type { HandlerEntry, Scope, Walker } from './walker.js';

function created(w: Walker, n: JsonObject, field: string, scope: Scope): void {
  const rv = fieldsOf(n[field], 'RangeVar');
  if (rv !== undefined) w.relation(rv, 'own', scope, { create: true });
}

function createTable(w: Walker, n: JsonObject, scope: Scope): void {
  created(w, n, 'relation', scope);
  // INHERITS and PARTITION OF: Postgres requires ownership of the parent.
  targets(w, n.inhRelations, 'own', scope);
  w.rest(n, ['relation', 'inhRelations'], 'read', scope);
}

function createTableAs(w: Walker, n: JsonObject, scope: Scope): void {
  const into = obj(n.into);
  if (into !== undefined) {
    created(w, into, 'rel', scope);
    w.rest(into, ['rel'], 'read', scope);
  }
  w.rest(n, ['into'], 'read', scope);
}

function createView(w: Walker, n: JsonObject, scope: Scope): void {
  created(w, n, 'view', scope);
  w.rest(n, ['view'], 'read', scope);
}

function createSequence(w: Walker, n: JsonObject, scope: Scope): void {
  created(w, n, 'sequence', scope);
  w.rest(n, ['sequence'], 'read', scope);
}

function compositeType(w: Walker, n: JsonObject, scope: Scope): void {
  created(w, n, 'typevar', scope);
  w.rest(n, ['typevar'], 'read', scope);
}

/** A statement whose RangeVar field names a relation it changes (owner only). */
function ownsRelation(field: string): (w: Walker, n: JsonObject, scope: Scope) => void {
  return (w, n, scope) => {
    target(w, n[field], 'own', scope);
    w.rest(n, [field], 'read', scope);
  };
}

/** A statement whose name-list field names an object it creates or changes (owner only). */
function ownsObject(field: string, create: boolean): (w: Walker, n: JsonObject, scope: Scope) => void {
  return (w, n, scope) => {
    const names = nameList(n[field]);
    if (names !== undefined) w.qualified('object', names, 'own', { create });
    else w.visit(n[field], 'read', scope);
    w.rest(n, [field], 'read', scope);
  };
}

function alterTable(w: Walker, n: JsonObject, scope: Scope): void {
  target(w, n.relation, 'own', scope);
  for (const item of arr(n.cmds)) {
    const cmd = fieldsOf(item, 'AlterTableCmd');
    if (cmd === undefined) continue;
    const subtype = str(cmd.subtype);
    if (subtype === 'AT_ChangeOwner') newOwner(w, cmd.newowner);
    if (subtype === 'AT_AttachPartition' || subtype === 'AT_DetachPartition' || subtype === 'AT_DetachPartitionFinalize') {
      // The partition joins or leaves the table: Postgres requires owning both.
      const part = fieldsOf(cmd.def, 'PartitionCmd');
      if (part !== undefined) target(w, part.name, 'own', scope);
      w.rest(cmd, ['def'], 'read', scope);
      if (part !== undefined) w.rest(part, ['name'], 'read', scope);
    } else if (subtype === 'AT_AddInherit' || subtype === 'AT_DropInherit') {
      target(w, cmd.def, 'own', scope);
      w.rest(cmd, ['def'], 'read', scope);
    } else {
      w.rest(cmd, [], 'read', scope);
    }
  }
  w.rest(n, ['relation', 'cmds'], 'read', scope);
}

function createTrigger(w: Walker, n: JsonObject, scope: Scope): void {
  target(w, n.relation, 'own', scope);
  w.qualifiedUse(nameList(n.funcname));
  w.rest(n, ['relation', 'funcname'], 'read', scope);
}

function createStats(w: Walker, n: JsonObject, scope: Scope): void {
  const names = nameList(n.defnames);
  if (names !== undefined && names.length > 0) w.qualified('object', names, 'own', { create: true });
  targets(w, n.relations, 'own', scope);
  w.rest(n, ['defnames', 'relations'], 'read', scope);
}

function reindex(w: Walker, n: JsonObject, scope: Scope): void {
  const kind = str(n.kind);
  if (kind === 'REINDEX_OBJECT_SYSTEM' || kind === 'REINDEX_OBJECT_DATABASE') {
    w.refuse(refusals.server(kind === 'REINDEX_OBJECT_SYSTEM' ? 'REINDEX SYSTEM' : 'REINDEX DATABASE'));
    return;
  }
  if (kind === 'REINDEX_OBJECT_SCHEMA') {
    w.ref({ kind: 'schema', schema: str(n.name) ?? '', name: '', need: 'own', create: false, temp: false });
    return;
  }
  target(w, n.relation, 'own', scope);
  w.rest(n, ['relation'], 'read', scope);
}

function alterTsConfig(w: Walker, n: JsonObject, scope: Scope): void {
  ownsObject('cfgname', false)(w, n, scope);
  for (const dict of arr(n.dicts)) w.qualifiedUse(nameList(dict));
}

function createConversion(w: Walker, n: JsonObject, scope: Scope): void {
  const names = nameList(n.conversion_name);
  if (names !== undefined) w.qualified('object', names, 'own', { create: true });
  w.qualifiedUse(nameList(n.func_name));
  w.rest(n, ['conversion_name', 'func_name'], 'read', scope);
}

function alterOperator(w: Walker, n: JsonObject, scope: Scope): void {
  const op = fieldsOf(n.opername, 'ObjectWithArgs');
  const names = nameList(op?.objname);
  if (names !== undefined) w.qualified('object', names, 'own');
  if (op !== undefined) w.rest(op, ['objname'], 'read', scope);
  w.rest(n, ['opername'], 'read', scope);
}

const plain = (w: Walker, n: JsonObject, scope: Scope): void => w.rest(n, [], 'read', scope);

export const ddlHandlers: ReadonlyArray<[string, HandlerEntry]> = [
  ['CreateStmt', { handle: createTable, command: 'CREATE TABLE' }],
  ['CreateTableAsStmt', { handle: createTableAs, command: 'CREATE TABLE AS' }],
  ['ViewStmt', { handle: createView, command: 'CREATE VIEW' }],
  ['CreateSeqStmt', { handle: createSequence, command: 'CREATE SEQUENCE' }],
  ['CompositeTypeStmt', { handle: compositeType, command: 'CREATE TYPE' }],
  ['IndexStmt', { handle: ownsRelation('relation'), command: 'CREATE INDEX' }],
  ['AlterTableStmt', { handle: alterTable, command: 'ALTER TABLE' }],
  ['AlterSeqStmt', { handle: ownsRelation('sequence'), command: 'ALTER SEQUENCE' }],
  ['CreateTrigStmt', { handle: createTrigger, command: 'CREATE TRIGGER' }],
  ['RuleStmt', { handle: ownsRelation('relation'), command: 'CREATE RULE' }],
  ['CreatePolicyStmt', { handle: ownsRelation('table'), command: 'CREATE POLICY' }],
  ['AlterPolicyStmt', { handle: ownsRelation('table'), command: 'ALTER POLICY' }],
  ['RefreshMatViewStmt', { handle: ownsRelation('relation'), command: 'REFRESH MATERIALIZED VIEW' }],
  ['ClusterStmt', { handle: ownsRelation('relation'), command: 'CLUSTER' }],
  ['ReindexStmt', { handle: reindex, command: 'REINDEX' }],
  ['CreateStatsStmt', { handle: createStats, command: 'CREATE STATISTICS' }],
  ['AlterStatsStmt', { handle: ownsObject('defnames', false), command: 'ALTER STATISTICS' }],
  ['CreateEnumStmt', { handle: ownsObject('typeName', true), command: 'CREATE TYPE' }],
  ['CreateRangeStmt', { handle: ownsObject('typeName', true), command: 'CREATE TYPE' }],
  ['CreateDomainStmt', { handle: ownsObject('domainname', true), command: 'CREATE DOMAIN' }],
  ['DefineStmt', { handle: ownsObject('defnames', true), command: 'CREATE' }],
  ['AlterDomainStmt', { handle: ownsObject('typeName', false), command: 'ALTER DOMAIN' }],
  ['AlterEnumStmt', { handle: ownsObject('typeName', false), command: 'ALTER TYPE' }],
  ['AlterTypeStmt', { handle: ownsObject('typeName', false), command: 'ALTER TYPE' }],
  ['AlterCollationStmt', { handle: ownsObject('collname', false), command: 'ALTER COLLATION' }],
  ['AlterTSDictionaryStmt', { handle: ownsObject('dictname', false), command: 'ALTER TEXT SEARCH DICTIONARY' }],
  ['AlterTSConfigurationStmt', { handle: alterTsConfig, command: 'ALTER TEXT SEARCH CONFIGURATION' }],
  ['CreateConversionStmt', { handle: createConversion, command: 'CREATE CONVERSION' }],
  ['AlterOperatorStmt', { handle: alterOperator, command: 'ALTER OPERATOR' }],
  ['CreateCastStmt', { handle: plain, command: 'CREATE CAST' }],
];

/**
 * A client's named prepared statements on whichever backend serves it (pooling by transaction).
 *
 * Each backend holds one server statement per (text, parameter types) — the client's own name
 * when that name is free there, else a name of the proxy's — and each client's Bind, Describe
 * and Close are renamed onto it (see statement-frames.ts). A backend that lacks a client's
 * statement gets it prepared again, unseen, in front of the message that needs it: its
 * ParseComplete is the proxy's, not passed on. So clients of a role share statements, a client
 * finds its statements on any backend, and none can reach a statement it did not prepare.
 *
 * SQL PREPARE / EXECUTE / DEALLOCATE name statements in the text itself: there the server
 * statement must have the client's name, and is made or dropped before the Query that names it.
 */
import type { SessionEffect } from '../policy/index.js';
import { PgError, SqlState } from '../shared/errors.js';
import { buildClose, buildParse, buildSync, FrontendCode, type ParseMessage } from '../protocol/index.js';
import type { BackendState } from './backend-state.js';
import type { ClientState } from './client-state.js';
import { protocolKey, type Prepared } from './prepared-statement.js';
import { quoteIdent } from '../policy/names.js';
import { renamed, statementName, type NamedAt } from './statement-frames.js';
import { statementReprepares } from '../observe/metrics.js';
import { schemaGeneration } from './schema-generation.js';

/** A message to send upstream for a client's message, in order. */
export interface Sent {
  frame: Buffer;
  /** Which answer it gets: a ParseComplete, a CloseComplete, or whatever its kind gives. */
  kind: 'parse' | 'close' | 'other';
  /** Sent by the proxy: its answer is not the client's. */
  ours: boolean;
  /** Undoes what was noted for it, if it is not answered (it failed, or an error before it skipped it). */
  undo?: () => void;
  /** Its error names a statement of the proxy's: this is the error the client must see instead. */
  error?: { names: Buffer; instead: PgError };
}

/** No frame: what `PreparedStatements.read` holds when it holds none. */
const EMPTY = Buffer.alloc(0);

const exists = (name: string) => new PgError(SqlState.DuplicatePreparedStatement, `prepared statement "${name}" already exists`);
const missing = (name: string) => new PgError(SqlState.InvalidSqlStatementName, name === '' ? 'unnamed prepared statement does not exist' : `prepared statement "${name}" does not exist`);

/** Prepares `p` on `backend` under `name` (as a Parse the proxy sends), noting it there as the newest of its text. */
function prepareAgain(backend: BackendState, name: string, p: Prepared): Sent {
  backend.noteServerStatement(name, p.key, true);
  return { frame: buildParse(name, p.sql, p.paramTypes), kind: 'parse', ours: true, undo: () => backend.forgetServerStatement(name) };
}

/** The client's message, sent as it came. */
function asCame(frame: Buffer): Sent {
  return { frame, kind: 'other', ours: false };
}

export class PreparedStatements {
  /** The Bind `boundBy` read last and where it names its statement: `use` reads the same frame next, and does not read it again. */
  private read: { frame: Buffer; at: NamedAt | undefined } = { frame: EMPTY, at: undefined };

  constructor(private readonly client: ClientState) {}

  /** Where `frame` names its statement (`statementName`), read once for `boundBy` and `use` together. */
  private named(code: number, frame: Buffer): NamedAt | undefined {
    const read = this.read;
    if (read.frame === frame) {
      read.frame = EMPTY;
      return read.at;
    }
    return statementName(code, frame);
  }

  /**
   * A client's Parse, with `sql` the text the policy lets through. A name the client holds
   * already is refused as Postgres would (42P05); a name the backend holds with this very text
   * is closed first, so the client's own Parse answers it.
   */
  parse(backend: BackendState, parse: ParseMessage, sql: string, effects: readonly SessionEffect[], frame: Buffer): Sent[] | PgError {
    const client = this.client;
    const generation = schemaGeneration();
    // The unnamed statement made again as it was (the same Parse, decoded once: relay.ts): the same record.
    const same = parse.name === '' ? client.unnamed : undefined;
    const p: Prepared =
      same !== undefined && same.text === parse.sql && same.sql === sql && same.paramTypes === parse.paramTypes && same.effects === effects && same.generation === generation
        ? same
        : { key: protocolKey(sql, parse.paramTypes), kind: 'protocol', sql, text: parse.sql, paramTypes: parse.paramTypes, effects, at: Date.now(), generation };
    const own = sql === parse.sql ? frame : buildParse(parse.name, sql, parse.paramTypes);
    if (parse.name === '') {
      client.unnamed = p;
      backend.unnamed = p;
      return [{ frame: own, kind: 'parse', ours: false, undo: () => void (client.unnamed === p && (client.unnamed = backend.unnamed = undefined)) }];
    }
    const name = parse.name;
    if (client.statements.has(name)) return exists(name);
    client.statements.set(name, p);
    const sent: Sent[] = [];
    let server = name;
    if (backend.keyOf(name) === p.key) sent.push({ frame: buildClose('S', name), kind: 'close', ours: true });
    else if (backend.hasServerStatement(name)) server = backend.nameFor(name);
    backend.noteServerStatement(server, p.key, true);
    sent.push({
      frame: server === name ? own : buildParse(server, sql, parse.paramTypes),
      kind: 'parse',
      ours: false,
      undo: () => {
        if (client.statements.get(name) === p) client.statements.delete(name);
        backend.forgetServerStatement(server);
      },
    });
    return sent;
  }

  /**
   * A client's Bind or Describe: the statement it names, made there if the backend lacks it and
   * renamed onto the backend's. A name the client never prepared is refused (26000), even if the
   * backend holds one of that name: another client's. Also says which statement it is (its
   * effects are the portal's, for a Bind).
   */
  use(backend: BackendState, code: number, frame: Buffer): { sent: Sent[] | undefined; statement: Prepared | undefined } {
    // `sent` undefined: the message goes as it came (the hot path: nothing else allocated).
    const at = this.named(code, frame);
    if (at === undefined) return { sent: undefined, statement: undefined };
    const client = this.client;
    if (at.name === '') {
      const own = client.unnamed;
      if (own === undefined) {
        // Whatever the backend's unnamed statement holds is not this client's: Postgres must find none.
        if (backend.unnamed === undefined) return { sent: undefined, statement: undefined };
        backend.unnamed = undefined;
        return { sent: [{ frame: buildClose('S', ''), kind: 'close', ours: true }, asCame(frame)], statement: undefined };
      }
      if (backend.unnamed === own) return { sent: undefined, statement: own };
      backend.unnamed = own;
      statementReprepares.value++;
      return { sent: [{ frame: buildParse('', own.sql, own.paramTypes), kind: 'parse', ours: true, undo: () => void (backend.unnamed === own && (backend.unnamed = undefined)) }, asCame(frame)], statement: own };
    }
    const p = client.statements.get(at.name);
    if (p === undefined) {
      // Postgres says it does not exist (before it looks at the transaction), under a name it does not hold.
      if (!backend.hasServerStatement(at.name)) return { sent: undefined, statement: undefined };
      const absent = backend.nameFor(at.name);
      return { sent: [{ frame: renamed(frame, at, absent), kind: 'other', ours: false, error: { names: Buffer.from(`"${absent}"`), instead: missing(at.name) } }], statement: undefined };
    }
    let server = backend.serverName(p.key);
    // A server statement made before a schema change the client's own statement came after may
    // plan on what changed (0A000 cached plan must not change result type): it is made again.
    if (server === undefined || (p.generation > backend.madeIn(server) && p.kind === 'protocol')) {
      if (p.kind === 'sql') return { sent: undefined, statement: p }; // made by the Query before (see `beforeQuery`), else Postgres says 26000
      server = backend.nameFor(at.name);
      const again = prepareAgain(backend, server, p);
      statementReprepares.value++;
      return { sent: [again, { frame: server === at.name ? frame : renamed(frame, at, server), kind: 'other', ours: false }], statement: p };
    }
    if (server === at.name) return { sent: undefined, statement: p };
    return { sent: [{ frame: renamed(frame, at, server), kind: 'other', ours: false }], statement: p };
  }

  /** The client's own statement a Bind names (what running it does to the session, its text), or undefined. */
  boundBy(frame: Buffer): Prepared | undefined {
    const at = statementName(FrontendCode.Bind, frame);
    this.read.frame = frame;
    this.read.at = at;
    if (at === undefined) return undefined;
    return at.name === '' ? this.client.unnamed : this.client.statements.get(at.name);
  }

  /**
   * A client's Close of a statement: forgotten by the client and closed on the backend if it
   * holds it; else a Close of a name the backend does not hold, which Postgres answers alike.
   */
  close(backend: BackendState, frame: Buffer): Sent[] {
    const at = statementName(FrontendCode.Close, frame);
    if (at === undefined) return [{ frame, kind: 'close', ours: false }];
    const client = this.client;
    if (at.name === '') {
      client.unnamed = undefined;
      backend.unnamed = undefined;
      return [{ frame, kind: 'close', ours: false }];
    }
    const p = client.statements.get(at.name);
    client.statements.delete(at.name);
    const server = p === undefined ? undefined : backend.serverName(p.key);
    if (server !== undefined) backend.forgetServerStatement(server);
    const target = server ?? (backend.hasServerStatement(at.name) ? backend.nameFor(at.name) : at.name);
    return [{ frame: target === at.name ? frame : renamed(frame, at, target), kind: 'close', ours: false }];
  }

  /**
   * Before a statement that reads pg_prepared_statements: every statement of the client's made on
   * the backend (as `beforeQuery` does for those a Query names), and the list the stand-in shows
   * (src/policy/session-stand-ins.ts): the client's name for each, the backend's, the client's own text.
   */
  listed(backend: BackendState, prepareSql: (p: Prepared) => string | undefined, effects: readonly (readonly SessionEffect[])[], text: string | undefined): { sql: string[]; frames: Buffer[]; undo?: () => void; json: string } {
    const names = [...this.client.statements.keys()];
    // SQL statements under their own name (as EXECUTE needs them), protocol ones under any.
    const sqlNames = names.filter((name) => this.client.statements.get(name)!.kind === 'sql');
    const made = this.beforeQuery(backend, [sqlNames.map((name) => ({ kind: 'execute' as const, name }))], prepareSql) ?? { sql: [], frames: [] };
    const parses: Sent[] = [];
    for (const name of names) {
      const p = this.client.statements.get(name)!;
      if (p.kind === 'protocol' && backend.serverName(p.key) === undefined) parses.push(prepareAgain(backend, backend.nameFor(name), p));
    }
    if (parses.length > 0) {
      statementReprepares.value += parses.length;
      if (made.frames.length === 0) made.frames.push(buildSync());
      made.frames.splice(made.frames.length - 1, 0, ...parses.map((s) => s.frame));
    }
    const list = new Map(
      names.map((name) => {
        const p = this.client.statements.get(name)!;
        return [name, { name, server: p.kind === 'sql' ? name : (backend.serverName(p.key) ?? name), statement: p.text, from_sql: p.kind === 'sql', prepare_time: new Date(p.at).toISOString() }];
      }),
    );
    // Statements the same string prepares or drops before it reads the list.
    for (const statement of effects) {
      if (statement.some((e) => e.kind === 'reads_sessions' && e.what === 'statements')) break;
      for (const e of statement) {
        if (e.kind === 'prepare' && text !== undefined) list.set(e.name, { name: e.name, server: e.name, statement: text, from_sql: true, prepare_time: new Date().toISOString() });
        else if (e.kind === 'deallocate') e.name === null ? list.clear() : list.delete(e.name);
      }
    }
    return { ...made, json: JSON.stringify([...list.values()]) };
  }

  /**
   * What must run before a Query whose statements have `effects`: each statement it names by
   * EXECUTE, PREPARE or DEALLOCATE present on the backend under exactly that name when the client
   * holds it (so that Postgres answers as it would on a backend of the client's own: runs it,
   * or says it exists already), absent when not (so that Postgres says it does not exist, rather
   * than run another client's). `prepareSql` gives the text a SQL PREPARE is made again from.
   * Returns SQL for one Query and the Parses (then a Sync) for protocol statements, and what undoes
   * the notes of statements made should they fail; undefined when nothing must run.
   */
  beforeQuery(backend: BackendState, effects: readonly (readonly SessionEffect[])[], prepareSql: (p: Prepared) => string | undefined): { sql: string[]; frames: Buffer[]; undo?: () => void } | undefined {
    let sql: string[] | undefined;
    let frames: Buffer[] | undefined;
    let made: string[] | undefined;
    for (const list of effects) {
      for (const e of list) {
        if ((e.kind !== 'execute' && e.kind !== 'prepare' && e.kind !== 'deallocate') || e.name === null) continue;
        const p = this.client.statements.get(e.name);
        const held = backend.keyOf(e.name);
        if (p !== undefined && held === p.key && backend.madeIn(e.name) >= p.generation) continue;
        if (held !== undefined) {
          (sql ??= []).push(`DEALLOCATE ${quoteIdent(e.name)}`);
          backend.forgetServerStatement(e.name);
        }
        if (p === undefined) continue;
        statementReprepares.value++;
        backend.noteServerStatement(e.name, p.key);
        (made ??= []).push(e.name);
        if (p.kind === 'protocol') {
          (frames ??= []).push(buildParse(e.name, p.sql, p.paramTypes));
          continue;
        }
        const text = prepareSql(p);
        if (text !== undefined) (sql ??= []).push(text);
      }
    }
    if (sql === undefined && frames === undefined && made === undefined) return undefined;
    if (frames !== undefined) frames.push(buildSync());
    const out = { sql: sql ?? [], frames: frames ?? [] };
    if (made === undefined) return out;
    // Should the statements made fail, the backend holds none of them.
    const names = made;
    return { ...out, undo: () => names.forEach((name) => backend.forgetServerStatement(name)) };
  }
}

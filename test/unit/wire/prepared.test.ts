// A client's named statements on whichever backend serves it: renamed onto the backend's, made
// again where missing, refused where another client's would answer (src/wire/prepared.ts).
import { describe, expect, it } from 'vitest';
import { buildBind, buildClose, buildDescribe, buildParse, decodeBind, decodeParse, FrontendCode } from '../../../src/protocol/index.js';
import { SqlState } from '../../../src/shared/errors.js';
import { BackendState } from '../../../src/wire/backend-state.js';
import { ClientState } from '../../../src/wire/client-state.js';
import { PreparedStatements, type Sent } from '../../../src/wire/prepared.js';
import type { Prepared } from '../../../src/wire/prepared-statement.js';
import { renamed, statementName } from '../../../src/wire/statement-frames.js';

const client = () => new ClientState(new Map([['TimeZone', 'UTC']]), new Map());
const backend = () => new BackendState(new Map([['TimeZone', 'UTC']]));
const bind = (statement: string) => buildBind({ portal: '', statement, paramFormats: [], params: [Buffer.from('1')], resultFormats: [] });

function parse(p: PreparedStatements, b: BackendState, name: string, sql: string): Sent[] {
  const frame = buildParse(name, sql, [23]);
  const sent = p.parse(b, decodeParse(frame), sql, [], frame);
  if (!Array.isArray(sent)) throw sent;
  return sent;
}

/** What a list of sends says, readably: `P name: sql` (a Parse), `C name` (a Close), `B statement`. */
/** PreparedStatements.use, with a message sent as it came (`sent` undefined) shown as itself. */
function use(p: PreparedStatements, b: BackendState, code: number, frame: Buffer): { sent: Sent[]; statement: Prepared | undefined } {
  const used = p.use(b, code, frame);
  return { sent: used.sent ?? [{ frame, kind: 'other', ours: false }], statement: used.statement };
}

function show(sent: readonly Sent[]): string[] {
  return sent.map((s) => {
    const who = s.ours ? 'ours ' : '';
    if (s.frame[0] === FrontendCode.Parse) {
      const m = decodeParse(s.frame);
      return `${who}P ${m.name}: ${m.sql}`;
    }
    if (s.frame[0] === FrontendCode.Bind) return `${who}B ${decodeBind(s.frame).statement}`;
    return `${who}${String.fromCharCode(s.frame[0]!)} ${statementName(s.frame[0]!, s.frame)?.name ?? ''}`;
  });
}

describe('statement frames', () => {
  it('read and rename the statement of a Bind, a Describe and a Close, fixing the length', () => {
    for (const [code, frame] of [
      [FrontendCode.Bind, bind('S_1')],
      [FrontendCode.Describe, buildDescribe('S', 'S_1')],
      [FrontendCode.Close, buildClose('S', 'S_1')],
    ] as const) {
      const at = statementName(code, frame)!;
      expect(at.name).toBe('S_1');
      const out = renamed(frame, at, 'repobase_s12');
      expect(statementName(code, out)!.name).toBe('repobase_s12');
      expect(out.readUInt32BE(1)).toBe(out.length - 1);
    }
    expect(statementName(FrontendCode.Describe, buildDescribe('P', 'x'))).toBeUndefined();
    expect(decodeBind(renamed(bind('a'), statementName(FrontendCode.Bind, bind('a'))!, 'bcd')).params).toEqual([Buffer.from('1')]);
  });
});

describe('one client, backends that have and lack its statements', () => {
  it('a Parse under the client name; a Bind on a backend without it prepares it there first, unseen', () => {
    const c = client();
    const p = new PreparedStatements(c);
    const b1 = backend();
    expect(show(parse(p, b1, 'q', 'SELECT $1'))).toEqual(['P q: SELECT $1']);
    const used = use(p, b1, FrontendCode.Bind, bind('q'));
    expect(show(used.sent)).toEqual(['B q']);
    const b2 = backend();
    expect(show(use(p, b2, FrontendCode.Bind, bind('q')).sent)).toEqual(['ours P q: SELECT $1', 'B q']);
    expect(show(use(p, b2, FrontendCode.Bind, bind('q')).sent)).toEqual(['B q']);
  });

  it("a name the client holds already is refused as Postgres would (42P05); one it never prepared is Postgres' own 26000", () => {
    const c = client();
    const p = new PreparedStatements(c);
    const b = backend();
    parse(p, b, 'q', 'SELECT 1');
    const again = p.parse(b, decodeParse(buildParse('q', 'SELECT 2')), 'SELECT 2', [], buildParse('q', 'SELECT 2'));
    expect(again).toMatchObject({ code: SqlState.DuplicatePreparedStatement });
    expect(show(use(p, b, FrontendCode.Bind, bind('never')).sent)).toEqual(['B never']);
  });

  it('a failed Parse is undone: the client can Parse that name again', () => {
    const c = client();
    const p = new PreparedStatements(c);
    const b = backend();
    const sent = parse(p, b, 'q', 'SELECT nope');
    sent[0]!.undo!();
    expect(c.statements.has('q')).toBe(false);
    expect(b.hasServerStatement('q')).toBe(false);
    expect(show(parse(p, b, 'q', 'SELECT 1'))).toEqual(['P q: SELECT 1']);
  });
});

describe('clients sharing a backend', () => {
  it('the same name with another text: prepared under a name of the proxy, Binds renamed onto it', () => {
    const b = backend();
    const a = new PreparedStatements(client());
    const d = new PreparedStatements(client());
    parse(a, b, 'S_1', 'SELECT $1::int');
    const sent = show(parse(d, b, 'S_1', 'SELECT $1::text'));
    expect(sent).toEqual(['P repobase_s1: SELECT $1::text']);
    expect(show(use(d, b, FrontendCode.Bind, bind('S_1')).sent)).toEqual(['B repobase_s1']);
    expect(show(use(a, b, FrontendCode.Bind, bind('S_1')).sent)).toEqual(['B S_1']);
  });

  it("the same text: the other client's statement serves; a Parse of the same name and text closes it first", () => {
    const b = backend();
    const a = new PreparedStatements(client());
    const d = new PreparedStatements(client());
    parse(a, b, 'P0_1', 'SELECT $1');
    // d prepared it on another backend: here, a's serves it, nothing prepared again.
    parse(d, backend(), 'mine', 'SELECT $1');
    expect(show(use(d, b, FrontendCode.Bind, bind('mine')).sent)).toEqual(['B P0_1']);
    const e = new PreparedStatements(client());
    expect(show(parse(e, b, 'P0_1', 'SELECT $1'))).toEqual(['ours C P0_1', 'P P0_1: SELECT $1']);
  });

  it("a name another client prepared here is not this client's: 26000 under a name the backend lacks, the message naming the client's", () => {
    const b = backend();
    const a = new PreparedStatements(client());
    const d = new PreparedStatements(client());
    parse(a, b, 'secret', 'SELECT 42');
    const used = use(d, b, FrontendCode.Bind, bind('secret'));
    expect(show(used.sent)).toEqual(['B repobase_s1']);
    expect(used.sent[0]!.error?.instead.message).toBe('prepared statement "secret" does not exist');
  });

  it("the unnamed statement: another client's is closed before this client's Bind, this client's made again", () => {
    const b = backend();
    const ca = client();
    const a = new PreparedStatements(ca);
    const d = new PreparedStatements(client());
    parse(a, b, '', 'SELECT 1');
    expect(show(use(d, b, FrontendCode.Bind, bind('')).sent)).toEqual(['ours C ', 'B ']);
    const other = backend();
    expect(show(use(a, other, FrontendCode.Bind, bind('')).sent)).toEqual(['ours P : SELECT 1', 'B ']);
  });

  it('SQL EXECUTE, PREPARE, DEALLOCATE: the name made present or absent before the Query', () => {
    const b = backend();
    const ca = client();
    const a = new PreparedStatements(ca);
    const d = new PreparedStatements(client());
    const text = 'PREPARE p AS SELECT 1';
    ca.applyEffects([{ kind: 'prepare', name: 'p', start: 0, end: text.length, inner: [] }], text, backend(), { has: () => true });
    const made = a.beforeQuery(b, [[{ kind: 'execute', name: 'p' }]], (s) => s.sql);
    expect({ sql: made?.sql, frames: made?.frames }).toEqual({ sql: [text], frames: [] });
    expect(a.beforeQuery(b, [[{ kind: 'execute', name: 'p' }]], (s) => s.sql)).toBeUndefined(); // held: nothing to run
    // Should the PREPARE fail (its table dropped since), the backend holds no p: it is made again next time.
    made!.undo!();
    expect(a.beforeQuery(b, [[{ kind: 'execute', name: 'p' }]], (s) => s.sql)?.sql).toEqual([text]);
    expect(d.beforeQuery(b, [[{ kind: 'execute', name: 'p' }]], (s) => s.sql)).toEqual({ sql: ['DEALLOCATE "p"'], frames: [] });
  });
});

describe('a Bind read for its statement before it is used', () => {
  it('is read once, and only for that very frame', () => {
    const p = new PreparedStatements(client());
    const b = backend();
    parse(p, b, 'a', 'SELECT $1::int AS a');
    parse(p, b, 'b', 'SELECT $1::int AS b');
    const first = bind('a');
    expect(p.boundBy(first)?.text).toBe('SELECT $1::int AS a');
    expect(use(p, b, FrontendCode.Bind, first).statement?.text).toBe('SELECT $1::int AS a');
    // Read for one frame, used for another (the same bytes, another message): read again.
    expect(p.boundBy(bind('a'))?.text).toBe('SELECT $1::int AS a');
    expect(use(p, b, FrontendCode.Bind, bind('b')).statement?.text).toBe('SELECT $1::int AS b');
    expect(use(p, b, FrontendCode.Describe, buildDescribe('S', 'b')).statement?.text).toBe('SELECT $1::int AS b');
  });
});

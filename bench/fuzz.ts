/**
 * Live wire fuzz: connections to a running service send mutated frames — a mutated start-up
 * packet or SCRAM message on some, a valid login then mutated Query, Parse/Bind/Execute/Sync
 * and COPY frames on the rest (bytes flipped, lengths changed, frames truncated, type bytes
 * swapped) — while a healthy client keeps querying on its own connection. Every fuzzed
 * connection must end, with an ErrorResponse or a close, within a timeout; the healthy client
 * must see no error. The mutator is deterministic from `seed`.
 *
 * CLI: `node dist/bench/fuzz.js --port 5433 --user U --key K [--database D] [--frames N]
 * [--connections N] [--seed N]`; prints the figures as JSON.
 */
import { connect as tcpConnect, type Socket } from 'node:net';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import {
  BackendCode,
  buildBind,
  buildClose,
  buildCopyData,
  buildCopyDone,
  buildCopyFail,
  buildDescribe,
  buildExecute,
  buildFlush,
  buildParse,
  buildQuery,
  buildSaslInitialResponse,
  buildSaslResponse,
  buildStartupMessage,
  buildSync,
  decodeAuthentication,
  decodeErrorResponse,
  FrameReader,
  FrontendCode,
} from '../src/protocol/index.js';
import { login } from '../src/upstream/session.js';

export interface FuzzOptions {
  /** Frames to send in all, over all connections. */
  frames: number;
  /** Fuzzing connections open at once. */
  connections: number;
  port: number;
  user: string;
  /** The user's API key (its password on the wire). */
  key: string;
  database?: string;
  host?: string;
  seed: number;
  /** How long a fuzzed connection may take to end once its last frame is sent. Default 10 s. */
  endTimeoutMs?: number;
}

export interface FuzzReport {
  framesSent: number;
  /** Fuzzed connections, by how they ended (the first ErrorResponse's SQLSTATE decides). */
  sessions: number;
  endedBy08P01: number;
  endedByOtherError: Record<string, number>;
  /** Closed (by the server or after our end of stream) with no ErrorResponse at all. */
  closedWithoutError: number;
  /** Still open `endTimeoutMs` after the client's last byte: must be 0. */
  hung: number;
  /** Logins refused for the valid-login sessions (should be 0: the proxy must keep accepting). */
  loginFailures: number;
  healthyQueries: number;
  healthyErrors: string[];
  durationMs: number;
  rssBeforeBytes: number;
  rssAfterBytes: number;
  heapBeforeBytes: number;
  heapAfterBytes: number;
  /** Whether RSS was measured after a full GC (`node --expose-gc`). */
  gcExposed: boolean;
}

/** mulberry32: small, fast and the same on every platform, so a seed names one run. */
export function createRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

type Random = () => number;
const int = (rnd: Random, n: number): number => Math.floor(rnd() * n);
const pick = <T>(rnd: Random, list: readonly T[]): T => list[int(rnd, list.length)]!;

const SQL = ['SELECT 1', 'SELECT $1::int', "SELECT 'x' || $1", 'COPY (SELECT 1) TO STDOUT', 'BEGIN', 'COMMIT', 'SELECT pg_sleep(0)', '', 'SELECT * FROM pg_class LIMIT 1'];
const FRONTEND_CODES = Object.values(FrontendCode).filter((c) => c !== FrontendCode.Startup);

/** One valid frame of the typed phase, picked at random. */
function validFrame(rnd: Random): Buffer {
  switch (int(rnd, 10)) {
    case 0:
    case 1:
      return buildQuery(pick(rnd, SQL));
    case 2:
      return buildParse(pick(rnd, ['', 's1']), pick(rnd, SQL), rnd() < 0.5 ? [] : [23]);
    case 3:
      return buildBind({ portal: '', statement: pick(rnd, ['', 's1']), paramFormats: [], params: rnd() < 0.5 ? [] : [Buffer.from(String(int(rnd, 100)))], resultFormats: [] });
    case 4:
      return buildExecute('', int(rnd, 3));
    case 5:
      return buildSync();
    case 6:
      return pick(rnd, [buildDescribe('P', ''), buildDescribe('S', 's1'), buildClose('S', 's1'), buildFlush()]);
    case 7:
      return buildCopyData(Buffer.from('1\tx\n'));
    case 8:
      return pick(rnd, [buildCopyDone(), buildCopyFail('fuzz')]);
    default:
      return buildQuery(`SELECT ${int(rnd, 1000)}`);
  }
}

/** A copy of `frame` damaged one way: flipped bytes, a changed length, truncated, a swapped type. */
export function mutate(rnd: Random, frame: Buffer): Buffer {
  const out = Buffer.from(frame);
  switch (int(rnd, 6)) {
    case 0: {
      for (let i = int(rnd, 3) + 1; i > 0; i--) {
        const at = int(rnd, out.length);
        out[at] = (out[at] ?? 0) ^ (1 << int(rnd, 8));
      }
      return out;
    }
    case 1: {
      if (out.length < 5) return out;
      const length = out.readInt32BE(1);
      const changed = pick(rnd, [length + 1, length - 1, length + int(rnd, 64), 0, 3, -1, 0x7fffffff, int(rnd, 1 << 20)]);
      out.writeInt32BE(changed | 0, 1);
      return out;
    }
    case 2:
      return out.subarray(0, int(rnd, out.length));
    case 3:
      out[0] = rnd() < 0.5 ? pick(rnd, FRONTEND_CODES) : int(rnd, 256);
      return out;
    case 4: {
      // Truncated body, length rewritten to match: a well-framed but malformed message.
      if (out.length <= 5) return out;
      const cut = out.subarray(0, 5 + int(rnd, out.length - 5));
      cut.writeInt32BE(cut.length - 1, 1);
      return cut;
    }
    default: {
      const garbage = Buffer.alloc(int(rnd, 32) + 1);
      for (let i = 0; i < garbage.length; i++) garbage[i] = int(rnd, 256);
      return Buffer.concat([out, garbage]);
    }
  }
}

interface Outcome {
  frames: number;
  errorCode: string | undefined;
  hung: boolean;
  loginFailed: boolean;
}

/** Watches a socket: records the first ErrorResponse's SQLSTATE, resolves on close or timeout. */
function watch(socket: Socket, onAuth?: (frame: Buffer) => void): { ended: Promise<void>; error: () => string | undefined; closed: () => boolean } {
  const reader = new FrameReader({ source: 'backend' });
  let errorCode: string | undefined;
  let closed = false;
  socket.on('data', (chunk: Buffer) => {
    try {
      reader.push(chunk, (code, frame) => {
        if (code === BackendCode.ErrorResponse) errorCode ??= decodeErrorResponse(frame).code;
        else if (code === BackendCode.Authentication) onAuth?.(frame);
      });
    } catch {
      errorCode ??= 'client-side framing';
      socket.destroy();
    }
  });
  socket.on('error', () => undefined);
  const ended = new Promise<void>((resolve) => socket.once('close', () => {
    closed = true;
    resolve();
  }));
  return { ended, error: () => errorCode, closed: () => closed };
}

async function endWithin(socket: Socket, ended: Promise<void>, closed: () => boolean, ms: number): Promise<boolean> {
  socket.end();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
  const hung = !closed();
  if (hung) socket.destroy();
  return hung;
}

function open(host: string, port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port });
    socket.setNoDelay(true);
    socket.once('connect', () => resolve(socket));
    socket.once('error', reject);
  });
}

/** A session that damages the start-up packet or a SCRAM message. */
async function startupSession(rnd: Random, o: Required<FuzzOptions>): Promise<Outcome> {
  const socket = await open(o.host, o.port);
  const startup = buildStartupMessage({ user: o.user, database: o.database });
  const which = int(rnd, 3);
  let frames = 1;
  const mutateAt = which === 0 ? 'startup' : which === 1 ? 'initial' : 'response';
  // A damaged SCRAM message gets time to be answered (28P01, 08P01) before our end of stream; a
  // lengthened one would otherwise wait for bytes that never come.
  let grace: NodeJS.Timeout | undefined;
  const endSoon = () => (grace = setTimeout(() => socket.end(), 300));
  const w = watch(socket, (frame) => {
    let auth;
    try {
      auth = decodeAuthentication(frame);
    } catch {
      return;
    }
    if (auth.kind === 'sasl') {
      frames++;
      const initial = buildSaslInitialResponse('SCRAM-SHA-256', Buffer.from('n,,n=,r=fuzzfuzzfuzzfuzz'));
      socket.write(mutateAt === 'initial' ? mutate(rnd, initial) : initial);
      if (mutateAt === 'initial') endSoon();
    } else if (auth.kind === 'sasl_continue') {
      frames++;
      const nonce = /r=([^,]*)/.exec(auth.data.toString('latin1'))?.[1] ?? '';
      socket.write(mutate(rnd, buildSaslResponse(Buffer.from(`c=biws,r=${nonce},p=${Buffer.alloc(32).toString('base64')}`))));
      endSoon();
    }
  });
  if (mutateAt === 'startup') {
    const bad = Buffer.from(startup);
    // Start-up packets have no type byte: damage the length, the version or the parameters.
    const choice = int(rnd, 4);
    if (choice === 0) bad.writeInt32BE(pick(rnd, [0, 7, bad.length + 1, bad.length - 1, 10_001, -1]), 0);
    else if (choice === 1) bad.writeInt32BE(int(rnd, 0x7fffffff), 4);
    else if (choice === 2) {
      const at = 8 + int(rnd, bad.length - 8);
      bad[at] = (bad[at] ?? 0) ^ (1 << int(rnd, 8));
    }
    socket.write(choice === 3 ? bad.subarray(0, int(rnd, bad.length)) : bad);
    socket.end();
  } else {
    socket.write(startup);
  }
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([w.ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, o.endTimeoutMs)))]);
  clearTimeout(timer);
  clearTimeout(grace);
  const hung = !w.closed();
  if (hung) socket.destroy();
  return { frames, errorCode: w.error(), hung, loginFailed: false };
}

/** A valid login, then `count` frames of which about half are damaged. */
async function querySession(rnd: Random, o: Required<FuzzOptions>, count: number): Promise<Outcome> {
  const socket = await open(o.host, o.port);
  try {
    await login(socket, { host: o.host, port: o.port, database: o.database, user: o.user, password: o.key }, { application_name: 'fuzz' });
  } catch {
    socket.destroy();
    return { frames: 1, errorCode: undefined, hung: false, loginFailed: true };
  }
  const w = watch(socket);
  const batch: Buffer[] = [];
  for (let i = 0; i < count; i++) {
    const frame = validFrame(rnd);
    batch.push(rnd() < 0.5 ? mutate(rnd, frame) : frame);
  }
  batch.push(buildSync());
  // Sent in random pieces, so the server's frame reader sees messages cut anywhere too.
  const stream = Buffer.concat(batch);
  let pos = 0;
  while (pos < stream.length && !w.closed()) {
    const next = Math.min(stream.length, pos + 1 + int(rnd, 512));
    socket.write(stream.subarray(pos, next));
    pos = next;
  }
  // Counted as sent: the frames written whole before the server closed the connection.
  let frames = 0;
  for (let end = 0, i = 0; i < batch.length && (end += batch[i]!.length) <= pos; i++) frames++;
  const hung = await endWithin(socket, w.ended, w.closed, o.endTimeoutMs);
  return { frames, errorCode: w.error(), hung, loginFailed: false };
}

/** Runs the fuzz and returns its figures; throws only if the service cannot be reached at all. */
export async function runFuzz(options: FuzzOptions): Promise<FuzzReport> {
  const o: Required<FuzzOptions> = { host: '127.0.0.1', database: 'repobase', endTimeoutMs: 10_000, ...options };
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const rssBefore = process.memoryUsage().rss;
  const started = Date.now();
  const report: FuzzReport = {
    framesSent: 0,
    sessions: 0,
    endedBy08P01: 0,
    endedByOtherError: {},
    closedWithoutError: 0,
    hung: 0,
    loginFailures: 0,
    healthyQueries: 0,
    healthyErrors: [],
    durationMs: 0,
    rssBeforeBytes: rssBefore,
    rssAfterBytes: 0,
    heapBeforeBytes: process.memoryUsage().heapUsed,
    heapAfterBytes: 0,
    gcExposed: gc !== undefined,
  };

  const healthy = new pg.Client({ host: o.host, port: o.port, user: o.user, password: o.key, database: o.database });
  healthy.on('error', (err: Error) => report.healthyErrors.push(err.message));
  await healthy.connect();
  let fuzzing = true;
  const healthyLoop = (async () => {
    while (fuzzing) {
      try {
        const { rows } = await healthy.query<{ n: number }>('SELECT $1::int AS n', [report.healthyQueries]);
        if (rows[0]?.n !== report.healthyQueries) report.healthyErrors.push(`wrong answer ${JSON.stringify(rows)}`);
        report.healthyQueries++;
      } catch (err: unknown) {
        report.healthyErrors.push(err instanceof Error ? err.message : String(err));
        return;
      }
    }
  })();

  const worker = async (index: number): Promise<void> => {
    const rnd = createRandom(o.seed * 1000 + index);
    while (report.framesSent < o.frames) {
      const count = 5 + int(rnd, 60);
      const outcome = rnd() < 0.15 ? await startupSession(rnd, o) : await querySession(rnd, o, count);
      report.sessions++;
      report.framesSent += outcome.frames;
      if (outcome.loginFailed) report.loginFailures++;
      else if (outcome.hung) report.hung++;
      else if (outcome.errorCode === '08P01') report.endedBy08P01++;
      else if (outcome.errorCode !== undefined) report.endedByOtherError[outcome.errorCode] = (report.endedByOtherError[outcome.errorCode] ?? 0) + 1;
      else report.closedWithoutError++;
    }
  };
  await Promise.all(Array.from({ length: o.connections }, (_, i) => worker(i)));
  fuzzing = false;
  await healthyLoop;
  // One last query proves the healthy connection survived the whole run.
  try {
    await healthy.query('SELECT 1');
  } catch (err: unknown) {
    report.healthyErrors.push(err instanceof Error ? err.message : String(err));
  }
  await healthy.end().catch(() => undefined);
  report.durationMs = Date.now() - started;
  gc?.();
  report.rssAfterBytes = process.memoryUsage().rss;
  report.heapAfterBytes = process.memoryUsage().heapUsed;
  return report;
}

function arg(name: string, fallback?: string): string {
  const at = process.argv.indexOf(`--${name}`);
  const value = at > 0 ? process.argv[at + 1] : fallback;
  if (value === undefined) throw new Error(`missing --${name}`);
  return value;
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  runFuzz({
    port: Number(arg('port')),
    user: arg('user'),
    key: arg('key'),
    database: arg('database', 'repobase'),
    host: arg('host', '127.0.0.1'),
    frames: Number(arg('frames', '100000')),
    connections: Number(arg('connections', '20')),
    seed: Number(arg('seed', '1')),
  }).then(
    (report) => process.stdout.write(`${JSON.stringify(report, null, 2)}\n`),
    (err: unknown) => {
      process.stderr.write(`${err instanceof Error ? err.stack ?? err.message : String(err)}\n`);
      process.exitCode = 1;
    },
  );
}

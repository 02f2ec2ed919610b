/**
 * A recording protocol client for the pooling differential test: it sends one step (a simple
 * Query, or an extended batch up to its Sync) and records every answer message of that step in a
 * comparable line — row descriptions with their type oids, rows, command tags, errors and notices
 * with SQLSTATE and message, ParameterStatus, the transaction status of each ReadyForQuery.
 * Notifications come whenever the server sends them, so they are kept apart, per client, with the
 * sender's process id as given (the test maps process ids to clients).
 */
import { BackendCode, buildBind, buildClose, buildDescribe, buildExecute, buildParse, buildQuery, buildSync, buildTerminate, decodeCommandComplete, decodeDataRow, decodeErrorResponse, decodeNoticeResponse, decodeParameterStatus, decodeReadyForQuery, decodeRowDescription } from '../../src/protocol/index.js';
import { openUpstreamSession, type UpstreamSession, type UpstreamTarget } from '../../src/upstream/session.js';

/** One message of the extended protocol in a step. */
export type Extended =
  | { parse: string; name?: string }
  | { bind: (string | null)[]; statement?: string }
  | { describe: 'P' | 'S'; name?: string }
  | { execute: true; maxRows?: number }
  | { close: 'S' | 'P'; name: string };

/** A step: a Query string, or the messages of one extended batch (a Sync is added). */
export type Request = { query: string } | { batch: Extended[] };

export interface Notification {
  pid: number;
  channel: string;
  payload: string;
}

const STEP_TIMEOUT_MS = 10_000;

export class ScriptClient {
  private answers: string[] = [];
  private waiter: (() => void) | undefined;
  readonly notifications: Notification[] = [];
  closed = false;

  private constructor(private readonly session: UpstreamSession) {
    session.socket.on('data', (chunk: Buffer) => session.reader.push(chunk, (code, frame) => this.onFrame(code, frame)));
    session.socket.on('error', () => undefined);
    session.socket.on('close', () => {
      this.closed = true;
      this.answers.push('closed');
      this.waiter?.();
    });
  }

  static async connect(target: UpstreamTarget, params: Record<string, string>): Promise<ScriptClient> {
    return new ScriptClient(await openUpstreamSession(target, params));
  }

  /** The process id the client was given (BackendKeyData). */
  get processId(): number {
    return this.session.processId;
  }

  /** The ParameterStatus values of the greeting. */
  get greeting(): ReadonlyMap<string, string> {
    return this.session.parameters;
  }

  private onFrame(code: number, frame: Buffer): void {
    const a = this.answers;
    switch (code) {
      case BackendCode.ReadyForQuery:
        a.push(`Z ${decodeReadyForQuery(frame)}`);
        return this.waiter?.();
      case BackendCode.CommandComplete:
        return void a.push(`C ${decodeCommandComplete(frame)}`);
      case BackendCode.DataRow:
        return void a.push(`D ${decodeDataRow(frame).map((v) => (v === null ? '∅' : v)).join('|')}`);
      case BackendCode.RowDescription:
        return void a.push(`T ${decodeRowDescription(frame).map((f) => `${f.name}:${f.typeOid}`).join('|')}`);
      case BackendCode.ErrorResponse: {
        const e = decodeErrorResponse(frame);
        return void a.push(`E ${e.code} ${e.message}`);
      }
      case BackendCode.NoticeResponse: {
        const n = decodeNoticeResponse(frame);
        return void a.push(`N ${n.code} ${n.message}`);
      }
      case BackendCode.ParameterStatus: {
        const { name, value } = decodeParameterStatus(frame);
        return void a.push(`S ${name}=${value}`);
      }
      case BackendCode.NotificationResponse: {
        const pid = frame.readInt32BE(5);
        const end = frame.indexOf(0, 9);
        this.notifications.push({ pid, channel: frame.toString('utf8', 9, end), payload: frame.toString('utf8', end + 1, frame.indexOf(0, end + 1)) });
        return;
      }
      default:
        a.push(String.fromCharCode(code));
    }
  }

  /** Sends one step and returns its answers, up to its ReadyForQuery (or the connection's end). */
  async run(request: Request): Promise<string[]> {
    this.answers = [];
    if (this.closed) return ['closed'];
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ReadyForQuery within ${STEP_TIMEOUT_MS} ms after ${this.answers.join(', ')}`)), STEP_TIMEOUT_MS);
      this.waiter = () => {
        clearTimeout(timer);
        this.waiter = undefined;
        resolve();
      };
    });
    this.session.socket.write(Buffer.concat(frames(request)));
    await done;
    return this.answers;
  }

  close(): Promise<void> {
    if (this.closed) return Promise.resolve();
    return new Promise((resolve) => {
      this.session.socket.once('close', () => resolve());
      this.session.socket.end(buildTerminate());
    });
  }
}

function frames(request: Request): Buffer[] {
  if ('query' in request) return [buildQuery(request.query)];
  const out: Buffer[] = [];
  for (const m of request.batch) {
    if ('parse' in m) out.push(buildParse(m.name ?? '', m.parse));
    else if ('bind' in m) out.push(buildBind({ portal: '', statement: m.statement ?? '', paramFormats: [], params: m.bind.map((p) => (p === null ? null : Buffer.from(p))), resultFormats: [] }));
    else if ('describe' in m) out.push(buildDescribe(m.describe, m.name ?? ''));
    else if ('execute' in m) out.push(buildExecute('', m.maxRows ?? 0));
    else out.push(buildClose(m.close, m.name));
  }
  out.push(buildSync());
  return out;
}

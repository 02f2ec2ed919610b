/**
 * A raw protocol client for differential tests: sends frames as they are and records every
 * answer message in a comparable form, ReadyForQuery's transaction status included (drivers hide
 * it). It logs in with the service's own upstream login (SCRAM), so the same client talks to
 * Postgres directly and to repobase.
 */
import { connect as tcpConnect } from 'node:net';
import {
  BackendCode,
  buildBind,
  buildCancelRequest,
  buildDescribe,
  buildExecute,
  buildParse,
  buildQuery,
  buildSync,
  buildTerminate,
  decodeCommandComplete,
  decodeDataRow,
  decodeErrorResponse,
  decodeNoticeResponse,
  decodeReadyForQuery,
  decodeRowDescription,
} from '../../src/protocol/index.js';
import { openUpstreamSession, type UpstreamSession, type UpstreamTarget } from '../../src/upstream/session.js';

/** One answer message: `Z I`, `C INSERT 0 1`, `D 1|x`, `E 42501 message`, `1` (ParseComplete)… */
export type Answer = string;

export class RawClient {
  private answers: Answer[] = [];
  private readies = 0;
  private waiter: { count: number; resolve: () => void } | undefined;

  private quiet: { ms: number; timer?: NodeJS.Timeout; resolve: () => void } | undefined;
  /** While `sendBytes` waits: a close ends the wait (`send` keeps waiting, and times out). */
  private onClose: (() => void) | undefined;
  private closed = false;

  private constructor(private readonly session: UpstreamSession) {
    session.socket.on('data', (chunk: Buffer) => {
      session.reader.push(chunk, (code, frame) => this.onFrame(code, frame));
      this.restartQuiet();
    });
    session.socket.on('error', () => undefined);
    session.socket.on('close', () => {
      this.closed = true;
      this.answers.push('closed');
      this.onClose?.();
      this.quiet?.resolve();
    });
  }

  private restartQuiet(): void {
    if (!this.quiet) return;
    clearTimeout(this.quiet.timer);
    this.quiet.timer = setTimeout(this.quiet.resolve, this.quiet.ms);
  }

  static async connect(target: UpstreamTarget, params: Record<string, string> = {}): Promise<RawClient> {
    return new RawClient(await openUpstreamSession(target, params));
  }

  private onFrame(code: number, frame: Buffer): void {
    switch (code) {
      case BackendCode.ReadyForQuery:
        this.answers.push(`Z ${decodeReadyForQuery(frame)}`);
        this.readies++;
        if (this.waiter && this.readies >= this.waiter.count) this.waiter.resolve();
        return;
      case BackendCode.CommandComplete:
        return void this.answers.push(`C ${decodeCommandComplete(frame)}`);
      case BackendCode.DataRow:
        return void this.answers.push(`D ${decodeDataRow(frame).join('|')}`);
      case BackendCode.RowDescription:
        return void this.answers.push(`T ${decodeRowDescription(frame).map((f) => f.name).join('|')}`);
      case BackendCode.ErrorResponse: {
        const e = decodeErrorResponse(frame);
        return void this.answers.push(`E ${e.code} ${e.message}`);
      }
      case BackendCode.NoticeResponse: {
        const n = decodeNoticeResponse(frame);
        return void this.answers.push(`N ${n.code} ${n.message}`);
      }
      case BackendCode.ParameterStatus:
        return; // reports of settings: not what these tests compare
      default:
        this.answers.push(String.fromCharCode(code));
    }
  }

  /**
   * Sends `frames` in one write and waits for `readies` ReadyForQuery messages (one per Query and
   * per Sync sent); returns the answers that came meanwhile.
   */
  async send(frames: Buffer[], readies: number): Promise<Answer[]> {
    this.answers = [];
    this.readies = 0;
    const done = new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no ReadyForQuery after ${this.answers.join(', ')}`)), 10_000);
      this.waiter = {
        count: readies,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
    });
    this.session.socket.write(Buffer.concat(frames));
    await done;
    this.waiter = undefined;
    return this.answers;
  }

  /**
   * Sends `bytes` as they are, well-formed or not, in one write, and returns the answers until
   * `readies` ReadyForQuery messages have come, or the server closed the connection (the last
   * answer is then `closed`). A late extra message is caught too: after the last ReadyForQuery a
   * Sync goes out as a marker, and everything before its ReadyForQuery (left out) is returned.
   * With `readies` 0, the answers are those until the connection closes or is quiet for `quietMs`.
   */
  async sendBytes(bytes: Buffer, readies: number, quietMs = 150): Promise<Answer[]> {
    this.answers = [];
    if (this.closed) return ['closed'];
    const wait = (count: number) =>
      new Promise<void>((resolve, reject) => {
        this.readies = 0;
        const timer = setTimeout(() => reject(new Error(`no ReadyForQuery after ${this.answers.join(', ')}`)), 10_000);
        const done = () => {
          clearTimeout(timer);
          this.waiter = undefined;
          this.onClose = undefined;
          resolve();
        };
        this.waiter = { count, resolve: done };
        this.onClose = done;
      });
    if (readies > 0) {
      const answered = wait(readies);
      this.session.socket.write(bytes);
      await answered;
      if (!this.closed) {
        const marked = wait(1);
        this.session.socket.write(buildSync());
        await marked;
        if (!this.closed) this.answers.pop();
      }
    } else {
      this.session.socket.write(bytes);
      if (!this.closed) {
        await new Promise<void>((resolve) => {
          this.quiet = { ms: quietMs, resolve };
          this.restartQuiet();
        });
        clearTimeout(this.quiet?.timer);
        this.quiet = undefined;
      }
    }
    return [...this.answers];
  }

  /** Sends `frames` and closes the connection without waiting for any answer. */
  sendAndLeave(frames: Buffer[]): void {
    this.session.socket.end(Buffer.concat(frames));
  }

  close(): void {
    this.session.socket.end(buildTerminate());
  }
}

/** A simple-protocol Query. */
export const q = (sql: string): Buffer => buildQuery(sql);

/** Parse (unnamed or `name`), Bind, Describe portal, Execute: one statement of an extended batch. */
export function x(sql: string, params: (string | null)[] = [], name = ''): Buffer[] {
  return [
    buildParse(name, sql),
    buildBind({ portal: '', statement: name, paramFormats: [], params: params.map((p) => (p === null ? null : Buffer.from(p))), resultFormats: [] }),
    buildDescribe('P', ''),
    buildExecute(''),
  ];
}

export const sync = (): Buffer => buildSync();

/**
 * Sends a CancelRequest for (`processId`, `secretKey`) on a connection of its own, as libpq does;
 * resolves with whatever the server sent before closing it (nothing, from Postgres and repobase).
 */
export function sendCancel(port: number, processId: number, secretKey: number, host = '127.0.0.1'): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const socket = tcpConnect({ host, port }, () => socket.write(buildCancelRequest(processId, secretKey)));
    const got: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error('the server did not close the cancel connection within 5 s'));
    }, 5_000);
    socket.on('data', (d: Buffer) => got.push(d));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(got));
    });
  });
}

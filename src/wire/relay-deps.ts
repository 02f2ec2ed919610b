/** What one client's relay needs from the service (the connection gives it; see relay.ts). */
import type { ControlPlane } from '../control/control-plane.js';
import type { Policy } from '../policy/index.js';
import type { Logger } from '../shared/logger.js';
import type { UpstreamSession } from '../upstream/session.js';
import type { Return } from '../upstream/session-pool.js';
import type { AuditOrigin } from '../control/audit.js';
import type { Pooling } from './pooling.js';
import type { MessageBudget } from './large-messages.js';
import type { LargeObjectFunctions } from './large-objects.js';
import type { SignalKind } from './cancel.js';

export interface RelayDeps {
  policy: Policy;
  control: ControlPlane;
  log: Logger;
  /** The connection as the audit log names it (address, connection id). */
  auditOrigin?: AuditOrigin;
  /** `upstreamResponseTimeoutMs`: an upstream owing an answer and silent this long is taken as dead (0 = never). */
  responseTimeoutMs?: number;
  /** `pgSendTimeoutMs`: a client that reads nothing of a pending answer this long is closed. */
  sendTimeoutMs?: number;
  /** The settings the client was greeted with (session mode: its reading settings until a backend serves it). */
  greeting?: ReadonlyMap<string, string>;
  /** The process's budget for large client messages (see large-messages.ts). */
  largeMessages?: MessageBudget;
  /** The large-object functions, the only ones a FunctionCall message may call. */
  largeObjects?: LargeObjectFunctions;
  /** A backend for the client (session mode: its first request; pooling: `pooling` says). */
  acquire(): Promise<UpstreamSession>;
  /** Gives a backend back. */
  release(session: UpstreamSession, how: Return): void;
  /** Pooling by transaction; undefined in session mode. */
  pooling?: Pooling | undefined;
  /** Signals another client of the same user, by the process id it was given (signals.ts). */
  signal?(kind: SignalKind, processId: number): void;
}

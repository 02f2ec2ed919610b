/**
 * NotificationResponse ('A') from the upstream, as the client should see it: a user's channels
 * live upstream under "<user>/…" (src/policy/channels.ts), and the client is shown the name it
 * used; and, pooling by transaction, the process id of the client that sent it (the one in that
 * client's BackendKeyData, as pg_backend_pid() shows it), not that of the backend it used.
 *
 * Which client a backend served when it sent a notification is told on the backend itself: in
 * front of a request that notifies, the proxy sends `pg_notify(<user's senders channel>, '<backend
 * pid> <client pid>')` (committed before or with the client's own, so delivered before it), and in
 * front of the next request of another client on that backend, `'<backend pid> 0'`: what it sends
 * after that (a trigger's notification in that client's transaction) is shown with the backend's
 * own id. A client that listens also listens on that channel (`Senders`). That holds
 * across the service's processes and instances. The channel is the user's own (a hash of the
 * name), out of any user's reach: user channels are always "<user>/…".
 */
import { createHash } from 'node:crypto';
import { clientChannel, SENDERS_PREFIX, type Decision } from '../policy/index.js';
import { BackendCode } from '../protocol/index.js';
import { Cursor } from '../protocol/cursor.js';
import { cstringSize, Writer } from '../protocol/writer.js';

/** The user's channel of sender announcements. */
export function sendersChannel(user: string): string {
  return `${SENDERS_PREFIX}${createHash('sha256').update(user).digest('hex').slice(0, 16)}`;
}

/** An announcement's payload: the backend, then the client it serves. */
export function announcement(backend: number, client: number): string {
  return `${backend} ${client}`;
}

const MAX_SENDERS = 1000;

/** What a listening client knows of who sent its notifications. */
export class Senders {
  private readonly byBackend = new Map<number, number>();

  constructor(
    readonly channel: string,
    /** The client's own process id (BackendKeyData). */
    readonly client: number,
  ) {}

  /** Takes in an announcement (client 0: the backend serves no client that notified any more). */
  note(payload: string): void {
    const [backend, client] = payload.split(' ').map(Number);
    if (!Number.isInteger(backend) || !Number.isInteger(client)) return;
    if (client === 0) return void this.byBackend.delete(backend!);
    if (this.byBackend.size >= MAX_SENDERS) this.byBackend.clear();
    this.byBackend.set(backend!, client!);
  }

  /** The process id to show for a notification sent by backend `sender`; `own` is the backend serving this client. */
  pidOf(sender: number, own: number | undefined): number {
    if (sender === own) return this.client; // it listens, so it keeps its backend: what that sent is its own
    return this.byBackend.get(sender) ?? sender;
  }
}

/**
 * The frame as `user`'s client should see it, or undefined for an announcement of senders (the
 * proxy's own). The same frame when nothing changes (a channel the client listened to by its
 * "<user>/…" name is in `listenedAs`).
 */
export function notificationForClient(frame: Buffer, user: string, listenedAs: ReadonlySet<string>, senders?: { senders: Senders; own: number | undefined }): Buffer | undefined {
  const cursor = Cursor.typed(frame, BackendCode.NotificationResponse, 'NotificationResponse');
  const sender = cursor.int32();
  const channel = cursor.cstring(false);
  const payload = cursor.cstring(false);
  cursor.end();
  if (senders !== undefined && channel === senders.senders.channel) {
    senders.senders.note(payload);
    return undefined;
  }
  const shown = clientChannel(user, channel, listenedAs);
  const pid = senders === undefined ? sender : senders.senders.pidOf(sender, senders.own);
  if (shown === channel && pid === sender) return frame;
  const size = 4 + cstringSize(shown, 'channel') + cstringSize(payload, 'payload');
  return Writer.typed(BackendCode.NotificationResponse, size).int32(pid).cstring(shown).cstring(payload).done();
}

/** One client's side of notifications: the channels it listened to by their "<user>/…" name, shown by it. */
export class ClientNotifications {
  private readonly listenedAs = new Set<string>();

  constructor(private readonly user: string) {}

  /** Notes the channels a decision listens to (passes it on unchanged). */
  readonly noteListens = (d: Decision): Decision => {
    if ((d.kind === 'allow' || d.kind === 'rewrite') && d.listens !== undefined) for (const c of d.listens) this.listenedAs.add(c);
    return d;
  };

  /** The frame as the client should see it (see notificationForClient); `own` is the backend serving it now. */
  forClient(frame: Buffer, senders: Senders | undefined, own: number | undefined): Buffer | undefined {
    return notificationForClient(frame, this.user, this.listenedAs, senders === undefined ? undefined : { senders, own });
  }
}

/**
 * NotificationResponse ('A') from the upstream, renamed for the client: a user's channels live
 * upstream under "<user>/…" (src/policy/channels.ts), and the client is shown the name it used.
 */
import { clientChannel } from '../policy/index.js';
import { BackendCode } from '../protocol/index.js';
import { Cursor } from '../protocol/cursor.js';
import { cstringSize, Writer } from '../protocol/writer.js';

/** A client's own process id (BackendKeyData), and that of the backend serving it. */
export interface OwnPid {
  backend: number;
  client: number;
}

/**
 * The frame as `user`'s client should see it: the same frame when the name stays (a channel the
 * client listened to by its "<user>/…" name is in `listenedAs`) and, with `own`, the sender is not
 * the backend serving the client. A notification sent by that backend is the client's own (a
 * client that listens keeps its backend): it shows the client's process id, as pg_backend_pid() does.
 */
export function notificationForClient(frame: Buffer, user: string, listenedAs: ReadonlySet<string>, own?: OwnPid): Buffer {
  const cursor = Cursor.typed(frame, BackendCode.NotificationResponse, 'NotificationResponse');
  const sender = cursor.int32();
  const channel = cursor.cstring(false);
  const payload = cursor.cstring(false);
  cursor.end();
  const shown = clientChannel(user, channel, listenedAs);
  const pid = own !== undefined && sender === own.backend ? own.client : sender;
  if (shown === channel && pid === sender) return frame;
  const size = 4 + cstringSize(shown, 'channel') + cstringSize(payload, 'payload');
  return Writer.typed(BackendCode.NotificationResponse, size).int32(pid).cstring(shown).cstring(payload).done();
}

/**
 * NotificationResponse ('A') from the upstream, renamed for the client: a user's channels live
 * upstream under "<user>/…" (src/policy/channels.ts), and the client is shown the name it used.
 */
import { clientChannel } from '../policy/index.js';
import { BackendCode } from '../protocol/index.js';
import { Cursor } from '../protocol/cursor.js';
import { cstringSize, Writer } from '../protocol/writer.js';

/**
 * The frame as `user`'s client should see it: the same frame when the name stays (a channel the
 * client listened to by its "<user>/…" name is in `listenedAs`).
 */
export function notificationForClient(frame: Buffer, user: string, listenedAs: ReadonlySet<string>): Buffer {
  const cursor = Cursor.typed(frame, BackendCode.NotificationResponse, 'NotificationResponse');
  const pid = cursor.int32();
  const channel = cursor.cstring(false);
  const payload = cursor.cstring(false);
  cursor.end();
  const shown = clientChannel(user, channel, listenedAs);
  if (shown === channel) return frame;
  const size = 4 + cstringSize(shown, 'channel') + cstringSize(payload, 'payload');
  return Writer.typed(BackendCode.NotificationResponse, size).int32(pid).cstring(shown).cstring(payload).done();
}

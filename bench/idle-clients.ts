/**
 * Opens N authenticated wire connections (SCRAM, the salted password computed once) and keeps
 * them idle until SIGTERM. Run as its own process so its sockets don't count against the
 * measured server's memory or file descriptors.
 */
import { openUpstreamSession, type UpstreamSession } from '../src/upstream/session.js';

const [port, user, key, database, count] = [Number(process.argv[2]), process.argv[3]!, process.argv[4]!, process.argv[5]!, Number(process.argv[6])];
const sessions: UpstreamSession[] = [];
const started = Date.now();
for (let i = 0; i < count; i += 100) {
  const batch = await Promise.all(
    Array.from({ length: Math.min(100, count - i) }, () => openUpstreamSession({ host: '127.0.0.1', port, database, user, password: key }, {})),
  );
  sessions.push(...batch);
}
process.stdout.write(`ready ${sessions.length} ${Date.now() - started}\n`);
process.on('SIGTERM', () => {
  for (const s of sessions) s.socket.destroy();
  process.exit(0);
});
setInterval(() => undefined, 60_000);

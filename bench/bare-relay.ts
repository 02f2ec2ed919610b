/**
 * The ceiling of a proxy written in Node: one process that forwards bytes between each client
 * and a fresh upstream connection, with no framing, no authentication of its own (the client
 * logs in to Postgres through it) and no policy. Run as its own process by the bench; what
 * repobase does beyond this costs the difference between the two rows.
 */
import { connect, createServer } from 'node:net';

const [port, upstreamPort] = [Number(process.argv[2]), Number(process.argv[3])];
const server = createServer({ noDelay: true }, (client) => {
  const upstream = connect({ host: '127.0.0.1', port: upstreamPort, noDelay: true });
  client.on('data', (chunk) => upstream.write(chunk));
  upstream.on('data', (chunk) => client.write(chunk));
  client.on('close', () => upstream.destroy());
  upstream.on('close', () => client.destroy());
  client.on('error', () => client.destroy());
  upstream.on('error', () => upstream.destroy());
});
server.listen(port, '127.0.0.1');
process.on('SIGTERM', () => process.exit(0));

// Reading accepted sockets past Node's stream buffering (src/shared/socket-reads.ts): every byte
// once and in order, nothing read while paused, the end still seen; sockets it must not switch
// left as they are.
import { once } from 'node:events';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { TLSSocket } from 'node:tls';
import { afterEach, describe, expect, it } from 'vitest';
import { readDirectly } from '../../../src/shared/socket-reads.js';

const servers: Server[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.close();
});

/** A server, a client connected to it, and the server's side of the connection (`pauseOnConnect` as asked). */
async function pair(pauseOnConnect = false): Promise<{ client: Socket; accepted: Socket }> {
  const server = createServer({ pauseOnConnect });
  servers.push(server);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const accepted = once(server, 'connection') as Promise<[Socket]>;
  const client = connect(port, '127.0.0.1');
  await once(client, 'connect');
  return { client, accepted: (await accepted)[0] };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('readDirectly', () => {
  it('passes every byte of a flowing socket once, in order, reads nothing while paused, and still ends', async () => {
    const { client, accepted } = await pair();
    const got: Buffer[] = [];
    let paused = false;
    let whilePaused = 0;
    accepted.on('data', (chunk: Buffer) => {
      if (paused) whilePaused += chunk.length;
      got.push(chunk);
    });
    expect(readDirectly(accepted)).toBe(true);

    const sent: Buffer[] = [];
    for (let i = 0; i < 400; i++) {
      const b = Buffer.alloc(1 + ((i * 7919) % 9000), i % 251);
      sent.push(b);
      client.write(b);
    }
    await sleep(50);
    accepted.pause();
    paused = true;
    const big = Buffer.alloc(1024 * 1024, 7);
    sent.push(big);
    client.write(big);
    client.end();
    await sleep(100);
    // Nothing was read meanwhile: not emitted, and not buffered either (Node's own reads would
    // have filled the stream's buffer up to its high-water mark).
    expect(whilePaused).toBe(0);
    expect(accepted.readableLength).toBe(0);
    const ended = once(accepted, 'end');
    paused = false;
    accepted.resume();
    await ended;
    expect(Buffer.concat(got).equals(Buffer.concat(sent))).toBe(true);
    accepted.destroy();
  });

  it('gives each read to every data listener, as emit does: one (called directly, on the socket), two, a once among them, one removed', async () => {
    const { client, accepted } = await pair();
    const first: Buffer[] = [];
    const second: Buffer[] = [];
    const onceGot: Buffer[] = [];
    let self: unknown;
    accepted.on('data', function (this: unknown, chunk: Buffer) {
      self = this;
      first.push(chunk);
    });
    expect(readDirectly(accepted)).toBe(true);
    const arrive = async (text: string, lists: Buffer[][]) => {
      const before = lists.map((l) => Buffer.concat(l).length);
      client.write(text);
      for (let i = 0; i < 200 && lists.some((l, k) => Buffer.concat(l).length < before[k]! + text.length); i++) await sleep(5);
    };
    await arrive('one listener;', [first]);
    expect(self).toBe(accepted);
    const onSecond = (chunk: Buffer) => second.push(chunk);
    accepted.on('data', onSecond);
    accepted.once('data', (chunk: Buffer) => onceGot.push(chunk));
    await arrive('three;', [first, second]);
    await arrive('two;', [first, second]);
    accepted.off('data', onSecond);
    await arrive('one again', [first]);
    expect(Buffer.concat(first).toString()).toBe('one listener;three;two;one again');
    expect(Buffer.concat(second).toString()).toBe('three;two;');
    expect(Buffer.concat(onceGot).toString()).toBe('three;');
    client.destroy();
    accepted.destroy();
  });

  it('leaves a socket that is paused, one whose bytes wait unread, one already switched, and a TLS socket', async () => {
    const paused = await pair(true);
    expect(readDirectly(paused.accepted)).toBe(false);
    paused.client.destroy();

    const buffered = await pair();
    buffered.client.write('early');
    for (let i = 0; i < 200 && buffered.accepted.readableLength === 0; i++) await sleep(10);
    expect(buffered.accepted.readableLength).toBeGreaterThan(0); // no listener yet: held in the stream
    expect(readDirectly(buffered.accepted)).toBe(false);
    buffered.client.destroy();

    const twice = await pair();
    twice.accepted.on('data', () => undefined);
    expect(readDirectly(twice.accepted)).toBe(true);
    expect(readDirectly(twice.accepted)).toBe(false);
    twice.client.destroy();

    const plain = await pair();
    const tls = new TLSSocket(plain.accepted, { isServer: true });
    tls.on('error', () => undefined);
    expect(readDirectly(tls)).toBe(false);
    plain.client.destroy();
    tls.destroy();
  });
});

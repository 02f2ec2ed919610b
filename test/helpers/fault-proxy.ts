/**
 * A TCP proxy in front of a real Postgres that breaks the network on demand, as Toxiproxy does
 * for PgCat and PgDog: `forward` relays bytes both ways; `blackhole` stops relaying in both
 * directions but keeps every socket open (a peer that stopped answering, not one that closed);
 * new connections are forwarded, refused (closed at once), or accepted and left hanging (never
 * connected onwards), as `newConnections` says. Nothing here reads or changes the bytes.
 */
import { connect, createServer, type Server, type Socket } from 'node:net';

/** What happens to a new connection: relayed, closed at once (a port with nothing behind it), or accepted and never answered. */
export type NewConnections = 'forward' | 'refuse' | 'hang';

interface Pair {
  client: Socket;
  upstream: Socket | undefined;
  /** Blackholed on its own (see `connection`). */
  held: boolean;
}

/** One proxied connection, to break it alone. */
export interface ProxiedConnection {
  blackhole(): void;
  restore(): void;
}

export class FaultProxy {
  private readonly pairs = new Set<Pair>();
  private holes = false;
  /** What happens to a connection accepted from now on. */
  newConnections: NewConnections = 'forward';

  private constructor(
    private readonly server: Server,
    readonly port: number,
    private readonly target: { host: string; port: number },
  ) {}

  /** Listens on a free loopback port, forwarding to `target`. */
  static async start(target: { host: string; port: number }): Promise<FaultProxy> {
    let proxy: FaultProxy | undefined;
    const server = createServer((client) => proxy!.accept(client));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    proxy = new FaultProxy(server, typeof address === 'object' && address ? address.port : 0, target);
    return proxy;
  }

  /** Connections open now (each a client side and, unless hanging, an upstream side). */
  get connections(): number {
    return this.pairs.size;
  }

  /** `url` with its host and port replaced by this proxy's. */
  url(url: string): string {
    const u = new URL(url);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Stops relaying on every connection, open and new, both ways; sockets stay open. */
  blackhole(): void {
    this.holes = true;
    for (const p of this.pairs) {
      p.client.pause();
      p.upstream?.pause();
    }
  }

  /** Relays again: what was held back (in the kernel buffers) flows on. */
  restore(): void {
    this.holes = false;
    for (const p of this.pairs) {
      p.held = false;
      p.client.resume();
      p.upstream?.resume();
    }
  }

  /**
   * The connection whose upstream side has local port `port`: what Postgres reports as the
   * `client_port` of the backend behind it (pg_stat_activity), so one session can be broken alone.
   */
  connection(port: number): ProxiedConnection {
    const pair = [...this.pairs].find((p) => p.upstream?.localPort === port);
    if (!pair) throw new Error(`no proxied connection from local port ${port}`);
    return {
      blackhole: () => {
        pair.held = true;
        pair.client.pause();
        pair.upstream?.pause();
      },
      restore: () => {
        pair.held = false;
        pair.client.resume();
        pair.upstream?.resume();
      },
    };
  }

  private accept(client: Socket): void {
    client.on('error', () => client.destroy());
    if (this.newConnections === 'refuse') return void client.destroy();
    const pair: Pair = { client, upstream: undefined, held: false };
    this.pairs.add(pair);
    client.on('close', () => {
      this.pairs.delete(pair);
      pair.upstream?.destroy();
    });
    if (this.newConnections === 'hang') return void client.pause();
    const upstream = connect(this.target);
    pair.upstream = upstream;
    upstream.on('error', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    this.relay(pair, client, upstream);
    this.relay(pair, upstream, client);
    if (this.holes) {
      client.pause();
      upstream.pause();
    }
  }

  /** `from` → `to` with backpressure; not `pipe`, whose resume on drain would undo a blackhole. */
  private relay(pair: Pair, from: Socket, to: Socket): void {
    from.on('data', (chunk: Buffer) => {
      if (!to.write(chunk)) from.pause();
    });
    to.on('drain', () => {
      if (!this.holes && !pair.held) from.resume();
    });
    from.on('end', () => to.end());
  }

  /** Closes every connection and stops listening. */
  async stop(): Promise<void> {
    for (const p of this.pairs) {
      p.client.destroy();
      p.upstream?.destroy();
    }
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

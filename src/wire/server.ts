/**
 * The Postgres wire front end: a TCP server handing each connection to `serveConnection`, and
 * its drain before a stop.
 */
import { createServer, type Server, type Socket } from 'node:net';
import type { ControlPlane } from '../control/control-plane.js';
import type { Policy } from '../policy/index.js';
import type { Config } from '../shared/config.js';
import { PgError, SqlState } from '../shared/errors.js';
import type { Logger } from '../shared/logger.js';
import type { Cluster } from '../upstream/cluster.js';
import { FailureThrottle } from '../shared/throttle.js';
import { CancelRegistry, type CancelPeers } from './cancel.js';
import { serveConnection } from './connection.js';
import { sessionPoolFor } from '../upstream/session-pool.js';
import type { BackendBudget } from '../upstream/budget.js';
import type { Admission } from '../upstream/admission.js';
import type { UserLimits } from '../shared/limits.js';
import { WireTenancy } from './tenancy.js';
import type { Relay } from './relay.js';
import { loadTls } from './tls.js';
import { watchPins, watchWireClients, type WireClientStates } from '../observe/metrics.js';
import { loadBuiltins } from './builtins.js';
import { MessageBudget } from './large-messages.js';
import { loadLargeObjectFunctions } from './large-objects.js';
import { StartupSettings } from './startup-settings.js';
import { SequenceFreeTables } from './sequences.js';
import { schemaChanged } from './schema-generation.js';
import { Activities } from './activity.js';
import { PIN_REASONS, type PinReason } from './client-pins.js';

/** How long terminated clients get to read their FATAL before `close` cuts what is left. */
const FAREWELL_MS = 1_000;

export interface WireServer {
  readonly port: number;
  /**
   * Stops accepting connections and ends every client with 57P01, as Postgres does on shutdown:
   * idle ones at once, one in a transaction right after it ends, and all that remain after
   * `timeoutMs` (their transactions rolled back). Resolves once no client is left, or soon after
   * the timeout.
   */
  drain(timeoutMs: number): Promise<void>;
  /** The user's limits changed: backends logged in with the old timeouts are not reused. */
  renew(role: string): void;
  /** The user's connections open on this process. */
  connectionsOf(user: string): number;
  close(): Promise<void>;
}

function adminShutdown(): PgError {
  return new PgError(SqlState.AdminShutdown, 'terminating connection due to administrator command', { severity: 'FATAL' });
}

/** Clients by state, for the metrics: those without a relay are still in start-up. */
function clientStates(connected: number, relays: Iterable<Relay>): WireClientStates {
  const s: WireClientStates = { starting: connected, idle: 0, active: 0, idle_in_transaction: 0 };
  for (const relay of relays) {
    s.starting--;
    if (relay.busy) s.active++;
    else if (relay.transactionStatus === 'I') s.idle++;
    else s.idle_in_transaction++;
  }
  return s;
}

export interface WireServerDeps {
  config: Config;
  cluster: Cluster;
  control: ControlPlane;
  policy: Policy;
  log: Logger;
  /** The service's other processes and instances, for cancels that reach the wrong one (cancel-channel.ts). */
  cancelPeers?: CancelPeers;
  /** The process's upstream backends, shared with the REST API (see budget.ts). */
  budget?: BackendBudget;
  /** The process's fair queue of transactions, shared with the REST API (see admission.ts). */
  admission?: Admission;
  /** The settings a user's backends log in with (their timeouts). */
  settingsOf?(role: string): Readonly<Record<string, string>>;
  /** A user's limits, this process's share (connections and timeouts are kept here: tenancy.ts). */
  limitsOf?(user: string): UserLimits;
}

/** Clients pinned to their backend between transactions, by reason. */
function pinStates(relays: Iterable<Relay>): Record<PinReason, number> {
  const s = Object.fromEntries(PIN_REASONS.map((r) => [r, 0])) as Record<PinReason, number>;
  for (const relay of relays) for (const reason of relay.pins) s[reason as PinReason]++;
  return s;
}

/** How long a table is trusted to take no default from a sequence (see sequences.ts). */
const SEQUENCE_FREE_MS = 60_000;

export async function startWireServer(deps: WireServerDeps): Promise<WireServer> {
  const log = deps.log.child({ mod: 'wire' });
  const { config, cluster } = deps;
  const pooling = config.pgPoolMode === 'transaction';
  const pool = sessionPoolFor(cluster, {
    maxPerRole: config.pgSessionsPerUser,
    idleMs: config.upstreamIdleMs,
    // A backend keeps what it holds: the proxy knows it (client-state.ts).
    reset: 'none',
    waitMs: config.pgPoolTimeoutMs,
    // Pooling by transaction, a backend in use comes back soon: wait for it before opening another.
    growAfterMs: pooling ? config.pgPoolGrowAfterMs : undefined,
    budget: deps.budget,
    admission: deps.admission,
    settingsOf: deps.settingsOf,
    metricsName: 'wire',
    log,
  });
  const tenancy = deps.limitsOf === undefined ? undefined : new WireTenancy(deps.limitsOf);

  const sockets = new Set<Socket>();
  const relays = new Map<Socket, Relay>();
  // Tables known to take no default from a sequence: forgotten at any schema change, and every
  // minute besides (a process that hears no schema events must not trust them long).
  const sequenceFree = new SequenceFreeTables();
  const unwatchSchema = deps.control.onSchemaChange(() => {
    sequenceFree.clear();
    schemaChanged(); // statements prepared before it may plan on what changed (prepared.ts)
  });
  const forgetting = setInterval(() => sequenceFree.clear(), SEQUENCE_FREE_MS);
  forgetting.unref();
  let draining = false;
  let onEmpty: (() => void) | undefined;
  const connDeps = {
    config,
    control: deps.control,
    policy: deps.policy,
    pool,
    startup: new StartupSettings(pool),
    builtins: loadBuiltins((sql) => cluster.admin.query<{ proname: string }>(sql), log),
    largeMessages: new MessageBudget(config.pgLargeMessagesBytes),
    largeObjects: loadLargeObjectFunctions((sql) => cluster.admin.query<{ oid: number; proname: string }>(sql), log),
    cancels: new CancelRegistry(deps.cancelPeers),
    sequenceFree,
    activities: new Activities(),
    tls: await loadTls(config),
    throttle: new FailureThrottle(),
    secret: cluster.secret,
    log,
    tenancy,
    onSession: (raw: Socket, relay: Relay, user: string) => {
      if (!sockets.has(raw)) return; // gone already
      relays.set(raw, relay);
      tenancy?.watch(raw, relay, user);
      if (draining) relay.closeWhenIdle(adminShutdown()); // finished start-up during the drain
    },
  };
  const server: Server = createServer((socket) => {
    // With worker processes a connection the primary accepted may still arrive after the close.
    if (draining) return void socket.destroy();
    sockets.add(socket);
    socket.on('close', () => {
      sockets.delete(socket);
      relays.delete(socket);
      if (sockets.size === 0) onEmpty?.();
    });
    void serveConnection(socket, connDeps, () => sockets.size);
  });
  const unwatchClients = watchWireClients(() => clientStates(sockets.size, relays.values()));
  const unwatchPins = watchPins(() => pinStates(relays.values()));
  const unwatch = () => {
    unwatchClients();
    unwatchPins();
    unwatchSchema();
    clearInterval(forgetting);
  };
  let closed: Promise<void> | undefined;
  const stopListening = () => (closed ??= new Promise<void>((resolve) => server.close(() => resolve())));
  /** Resolves when every client is gone, or after `ms`. */
  const gone = (ms: number) =>
    new Promise<void>((resolve) => {
      if (sockets.size === 0) return resolve();
      const timer = setTimeout(done, ms);
      function done() {
        clearTimeout(timer);
        onEmpty = undefined;
        resolve();
      }
      onEmpty = done;
    });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.pgPort, config.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : config.pgPort,
    drain: async (timeoutMs) => {
      draining = true;
      void stopListening();
      const error = adminShutdown();
      for (const relay of relays.values()) relay.closeWhenIdle(error);
      await gone(timeoutMs);
      if (sockets.size === 0) return;
      log.info({ clients: sockets.size }, 'drain timeout: terminating the remaining wire clients');
      for (const relay of relays.values()) relay.terminate(error);
      for (const s of sockets) if (!relays.has(s)) s.destroy(); // still in start-up
      await gone(FAREWELL_MS);
    },
    renew: (role) => pool.renew(role),
    connectionsOf: (user) => tenancy?.connectionsOf(user) ?? 0,
    close: async () => {
      unwatch();
      tenancy?.close();
      const listening = stopListening();
      for (const s of sockets) s.destroy();
      await listening;
      pool.close();
    },
  };
}

/**
 * What pg_stat_activity shows of a user's wire clients. Pooling, a session is a client, not a
 * backend (an idle client holds none): each client's row is what it would be on a backend of its
 * own — its process id (BackendKeyData), state, the text of its last query, its times — kept
 * here as its requests come and go, and given to the stand-in view as a setting before a
 * statement that reads it (src/policy/session-stand-ins.ts). Clients of other worker processes and
 * instances are not listed (see docs/pooling.md).
 */
import type { TransactionStatus } from '../protocol/index.js';

/** track_activity_query_size's default: the query text Postgres keeps. */
const QUERY_BYTES = 1024;

/** One wire client, as pg_stat_activity would show it. */
export class ClientActivity {
  state = 'idle';
  query = '';
  /** Times in ms since the epoch (0: none yet). */
  readonly backendStart = Date.now();
  xactStart = 0;
  queryStart = 0;
  stateChange = Date.now();

  constructor(
    readonly user: string,
    readonly pid: number,
    readonly address: string | undefined,
    readonly port: number | undefined,
    /** Its application_name and the backend serving it now, when asked. */
    private readonly now: () => { applicationName: string; backend: number | undefined },
  ) {}

  /** A request of the client's goes upstream (`status`: the transaction status before it). */
  started(text: string | undefined, status: TransactionStatus): void {
    const now = Date.now();
    if (status === 'I' && this.xactStart === 0) this.xactStart = now;
    this.queryStart = now;
    if (text !== undefined) this.query = text.length > QUERY_BYTES ? text.slice(0, QUERY_BYTES - 1) : text;
    if (this.state !== 'active') {
      this.state = 'active';
      this.stateChange = now;
    }
  }

  /** Its requests are answered: it waits, in a transaction or not. */
  idle(status: TransactionStatus): void {
    const state = status === 'I' ? 'idle' : status === 'T' ? 'idle in transaction' : 'idle in transaction (aborted)';
    if (status === 'I') this.xactStart = 0;
    if (state === this.state) return;
    this.state = state;
    this.stateChange = Date.now();
  }

  toJSON(): object {
    const { applicationName, backend } = this.now();
    const time = (ms: number) => (ms === 0 ? null : new Date(ms).toISOString());
    return {
      pid: this.pid,
      backend: backend ?? null,
      application_name: applicationName,
      client_addr: this.address ?? null,
      client_port: this.port ?? null,
      backend_start: time(this.backendStart),
      xact_start: time(this.xactStart),
      query_start: time(this.queryStart),
      state_change: time(this.stateChange),
      state: this.state,
      query: this.query,
    };
  }
}

/** The wire clients of this process, by user. */
export class Activities {
  private readonly byUser = new Map<string, Set<ClientActivity>>();

  add(a: ClientActivity): () => void {
    let set = this.byUser.get(a.user);
    if (set === undefined) this.byUser.set(a.user, (set = new Set()));
    set.add(a);
    return () => {
      set.delete(a);
      if (set.size === 0) this.byUser.delete(a.user);
    };
  }

  /** The JSON the stand-in of pg_stat_activity reads: every client of `user` here, ordered by process id. */
  json(user: string): string {
    const list = [...(this.byUser.get(user) ?? [])].sort((a, b) => a.pid - b.pid);
    return JSON.stringify(list);
  }
}

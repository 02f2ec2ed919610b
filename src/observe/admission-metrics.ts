/**
 * The fair queue's metrics (upstream/admission.ts): transactions running, parked and waiting
 * for their turn, the users waiting, and how long transactions waited. No series names a user:
 * how long each user waited is in the control plane's usage (`queued_ms`, per user and hour).
 */
import client from 'prom-client';
import { registry, tallyHistogram } from './metrics.js';

/** What the metrics read of an admission when scraped. */
export interface AdmissionSource {
  states(): { running: number; parked: number; waiting: number; usersWaiting: number };
  /** The longest wait since the last call, in ms. */
  takeLongestWait(): number;
  /** Set to be told each wait, in seconds. */
  waited: ((seconds: number) => void) | undefined;
}

const sources = new Set<AdmissionSource>();

new client.Gauge({
  name: 'repobase_admission_transactions',
  help: 'Transactions holding or waiting for a turn upstream (the fair queue): running (counted against upstreamActiveMax), parked (holding a backend that Postgres last showed using no CPU: idle in a transaction, waiting on a lock, a sleep or the client), waiting (for their turn).',
  labelNames: ['state'],
  registers: [registry],
  collect() {
    const sum = { running: 0, parked: 0, waiting: 0 };
    for (const s of sources) {
      const st = s.states();
      sum.running += st.running;
      sum.parked += st.parked;
      sum.waiting += st.waiting;
    }
    for (const [state, n] of Object.entries(sum)) this.set({ state }, n);
  },
});

new client.Gauge({
  name: 'repobase_admission_users_waiting',
  help: 'Users with at least one transaction waiting for its turn upstream.',
  registers: [registry],
  collect() {
    let n = 0;
    for (const s of sources) n += s.states().usersWaiting;
    this.set(n);
  },
});

new client.Gauge({
  name: 'repobase_admission_longest_wait_seconds',
  help: 'The longest any transaction waited for its turn upstream since the previous scrape (the most one user waited, whoever it was).',
  registers: [registry],
  aggregator: 'max',
  collect() {
    let ms = 0;
    for (const s of sources) ms = Math.max(ms, s.takeLongestWait());
    this.set(ms / 1000);
  },
});

const waits = tallyHistogram(
  'repobase_admission_wait_seconds',
  'Time a transaction waited for its turn upstream, of those that waited (until let in, or refused with 53300).',
  [],
  [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
)({});

/** Registers an admission (read when scraped, its waits observed); returns the unregistration. */
export function watchAdmission(source: AdmissionSource): () => void {
  sources.add(source);
  source.waited = (seconds) => waits.observe(seconds);
  return () => {
    sources.delete(source);
    source.waited = undefined;
  };
}

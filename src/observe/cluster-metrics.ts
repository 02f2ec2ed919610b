/**
 * Metrics of a service run as several worker processes: a scrape reaches one worker (they share
 * the port), but must answer for all of them. That worker asks the primary over the service's
 * IPC channel; the primary collects every worker's registry with prom-client's AggregatorRegistry
 * (its own IPC messages, answered by observe/metrics.ts in each worker) and answers the sum:
 * counters and histograms added up, gauges too (clients, sessions: the service's totals).
 */
import client from 'prom-client';
import type { MetricsSource } from './metrics-server.js';

/** Longer than prom-client's own 5 s wait for the workers' answers. */
const ASK_TIMEOUT_MS = 6_000;

let aggregator: client.AggregatorRegistry<client.PrometheusContentType> | undefined;

/** The primary's side: the sum of every worker's metrics, as exposition text. */
export function workersMetrics(): Promise<string> {
  aggregator ??= new client.AggregatorRegistry();
  return aggregator.clusterMetrics();
}

/** A worker's side: `ask` sends the request numbered `ref` to the primary; `answer` takes its reply. */
export function metricsFromPrimary(ask: (ref: number) => void): { source: MetricsSource; answer(ref: number, text: string | undefined, error: string | undefined): void } {
  let next = 1;
  const waiting = new Map<number, { resolve: (text: string) => void; reject: (err: Error) => void }>();
  return {
    source: () =>
      new Promise<string>((resolve, reject) => {
        const ref = next++;
        const timer = setTimeout(() => {
          waiting.delete(ref);
          reject(new Error(`the primary process did not answer within ${ASK_TIMEOUT_MS} ms`));
        }, ASK_TIMEOUT_MS);
        const settle = () => {
          clearTimeout(timer);
          waiting.delete(ref);
        };
        waiting.set(ref, {
          resolve: (text) => (settle(), resolve(text)),
          reject: (err) => (settle(), reject(err)),
        });
        ask(ref);
      }),
    answer: (ref, text, error) => {
      const w = waiting.get(ref);
      if (!w) return;
      if (text !== undefined) w.resolve(text);
      else w.reject(new Error(error ?? 'no metrics'));
    },
  };
}

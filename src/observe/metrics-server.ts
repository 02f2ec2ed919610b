/**
 * Where the metrics are served from: the text itself (this process's registry, or the sum over
 * the worker processes that the primary collects), and a plain HTTP server for config
 * `metricsPort` > 0, which keeps `/metrics` off the public HTTP port.
 */
import { createServer, type Server } from 'node:http';
import { localMetrics, registry } from './metrics.js';

/** The exposition text to answer a scrape with. */
export type MetricsSource = () => Promise<string>;

/** The Content-Type of the exposition text (Prometheus text format 0.0.4). */
export const METRICS_CONTENT_TYPE = registry.contentType;

/** A process serving alone answers with its own metrics. */
export const localMetricsSource: MetricsSource = localMetrics;

export interface MetricsServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `GET /metrics` (and nothing else: 404) on `host:port`. */
export async function startMetricsServer(host: string, port: number, metrics: MetricsSource): Promise<MetricsServer> {
  const server: Server = createServer((req, res) => {
    if (req.method !== 'GET' || (req.url ?? '').split('?')[0] !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found: the metrics are at GET /metrics\n');
      return;
    }
    metrics().then(
      (text) => res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE }).end(text),
      (err: unknown) => res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end(`metrics unavailable: ${err instanceof Error ? err.message : String(err)}\n`),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  return {
    port: typeof address === 'object' && address ? address.port : port,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

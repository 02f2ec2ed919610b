/**
 * The metrics registry: tallies reach their counters and histograms when scraped, live states are
 * summed over their sources and leave with them, and an error's class label stays within SQLSTATE
 * classes.
 */
import { describe, expect, it } from 'vitest';
import { countError, countHttpRequest, decisions, localMetrics, watchPool, watchWireClients } from '../../../src/observe/metrics.js';

/** The value of one series in the exposition text (undefined when absent). */
async function value(series: string): Promise<number | undefined> {
  const line = (await localMetrics()).split('\n').find((l) => l.startsWith(series + ' '));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe('metrics registry', () => {
  it('copies tallies into their counters at each scrape', async () => {
    const series = 'repobase_statements_total{front_end="rest",outcome="rewritten"}';
    const before = (await value(series)) ?? 0;
    decisions.rest.rewrite.value += 3;
    expect(await value(series)).toBe(before + 3);
    decisions.rest.rewrite.value++;
    expect(await value(series)).toBe(before + 4);
  });

  it('sums the sources of a pool, and forgets one that unregisters', async () => {
    const series = (state: string) => `repobase_upstream_sessions{pool="unit",state="${state}"}`;
    const a = watchPool('unit', () => ({ active: 2, idle: 1, waiting: 0 }));
    const b = watchPool('unit', () => ({ active: 3, idle: 0, waiting: 4 }));
    expect(await value(series('active'))).toBe(5);
    expect(await value(series('idle'))).toBe(1);
    expect(await value(series('waiting'))).toBe(4);
    b();
    expect(await value(series('active'))).toBe(2);
    a();
    expect(await value(series('active'))).toBeUndefined();
  });

  it('reads wire client states live from every registered front end', async () => {
    let idle = 2;
    const stop = watchWireClients(() => ({ starting: 1, idle, active: 0, idle_in_transaction: 0 }));
    expect(await value('repobase_wire_clients{state="idle"}')).toBe(2);
    idle = 7;
    expect(await value('repobase_wire_clients{state="idle"}')).toBe(7);
    expect(await value('repobase_wire_clients{state="starting"}')).toBe(1);
    stop();
    expect(await value('repobase_wire_clients{state="idle"}')).toBe(0);
  });

  it('labels errors by SQLSTATE class only, anything malformed as XX', async () => {
    countError('wire', 'upstream', '42P01');
    countError('wire', 'upstream', 'not a sqlstate "alice/sales"');
    const text = await localMetrics();
    expect(text).toContain('repobase_errors_total{front_end="wire",origin="upstream",class="42"} 1');
    expect(text).toContain('repobase_errors_total{front_end="wire",origin="upstream",class="XX"} 1');
    expect(text).not.toContain('alice');
  });

  it('counts HTTP requests by method, route and status, and their durations in cumulative buckets', async () => {
    const series = (rest: string) => `repobase_http_request_duration_seconds${rest}`;
    for (const seconds of [0.0005, 0.002, 0.002, 0.3, 60]) countHttpRequest('GET', '/unit/:id', 200, seconds);
    countHttpRequest('GET', '/unit/:id', 404, 0.001);
    expect(await value('repobase_http_requests_total{method="GET",route="/unit/:id",status="200"}')).toBe(5);
    expect(await value('repobase_http_requests_total{method="GET",route="/unit/:id",status="404"}')).toBe(1);
    const labels = 'method="GET",route="/unit/:id"';
    expect(await value(series(`_bucket{${labels},le="0.001"}`))).toBe(2); // 0.0005 and the 404's 0.001
    expect(await value(series(`_bucket{${labels},le="0.0025"}`))).toBe(4);
    expect(await value(series(`_bucket{${labels},le="0.25"}`))).toBe(4);
    expect(await value(series(`_bucket{${labels},le="0.5"}`))).toBe(5);
    expect(await value(series(`_bucket{${labels},le="30"}`))).toBe(5);
    expect(await value(series(`_bucket{${labels},le="+Inf"}`))).toBe(6);
    expect(await value(series(`_count{${labels}}`))).toBe(6);
    expect(await value(series(`_sum{${labels}}`))).toBeCloseTo(60.3055, 6);
    expect(await localMetrics()).toContain('# TYPE repobase_http_request_duration_seconds histogram');
  });
});

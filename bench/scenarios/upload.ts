/**
 * Upload: a generated CSV of mixed types (bench/ingest.ts's) through `POST /api/v1beta/import/`
 * (type inference over every value, COPY into the typed table) against `psql \copy` of the same
 * file into a table made beforehand with the types the upload inferred. Then the same `psql \copy`
 * through the wire front end, by one client and by four at once (each its own table), against
 * the same directly: MB/s and repobase's peak RSS growth, which flow control keeps flat. With
 * `--against`, the other build's REST upload and wire copies run in the same rounds, in turn (the
 * order reversed every other round), each after a checkpoint of every upstream.
 */
import { openAsBlob } from 'node:fs';
import { join } from 'node:path';
import pg, { escapeIdentifier } from 'pg';
import { generateCsv } from '../ingest.js';
import { conninfo, REPO, type BenchEnv, type Conn, type RefEnv } from '../env.js';
import { rssOf, run } from '../lib/proc.js';
import { fmt, summarize } from '../lib/stats.js';

/** One target's wire copies: median MB/s (all clients together) and the most its RSS grew. */
export interface CopyFigures {
  mbps: number;
  peakRssGrowthMb: number;
}

export interface WireCopyResult {
  clients: number;
  /** Per target: `direct`, `repobase`, `repobase @ref`. */
  targets: Record<string, CopyFigures>;
}

export interface UploadResult {
  megabytes: number;
  repobaseMBps: number;
  psqlMBps: number;
  ratio: number;
  peakRssGrowthMb: number;
  /** The other build's REST upload, with `--against`. */
  against?: { suffix: string; repobaseMBps: number; peakRssGrowthMb: number };
  wireCopy: WireCopyResult[];
}

const COPY_CLIENTS = [1, 4];

interface Job {
  id?: string;
  status?: string;
  columns?: { name: string; type: string }[];
}

/** Uploads `file`; resolves with the finished job (waiting on it when the answer was 202). */
async function upload(env: BenchEnv, file: string, table: string): Promise<Job> {
  const form = new FormData();
  form.set('repo', REPO);
  form.set('table_name', table);
  form.set('file', await openAsBlob(file), 'upload.csv');
  const res = await fetch(`${env.repobase.httpUrl}/api/v1beta/import/`, { method: 'POST', headers: { authorization: `Bearer ${env.repobase.key}` }, body: form });
  let body = (await res.json()) as Job;
  if (!res.ok) throw new Error(`import answered ${res.status}: ${JSON.stringify(body)}`);
  while (body.status && body.status !== 'DONE') {
    if (body.status === 'FAILED') throw new Error(`import failed: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 200));
    body = (await (await fetch(`${env.repobase.httpUrl}/api/v1beta/import/${body.id}`, { headers: { authorization: `Bearer ${env.repobase.key}` } })).json()) as Job;
  }
  return body;
}

/**
 * Writes out what the load before left to write (100 MB of table pages and WAL), on each upstream
 * (admin URLs): an upload measured right after another into the same Postgres otherwise pays for
 * that one's writes too (measured: this build's uploads, each run after the direct copy into its
 * upstream, 0.93 of the other build's, run after an idle one; the first round, after nothing, 1.01).
 */
async function checkpoint(upstreams: readonly string[]): Promise<void> {
  for (const url of upstreams) {
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    try {
      await admin.query('CHECKPOINT');
    } finally {
      await admin.end();
    }
  }
}

/**
 * Runs `work` while sampling the RSS of `pid` (and its workers): its duration in s and the most the
 * RSS grew, in bytes. The `upstreams` are checkpointed first (see `checkpoint`).
 */
async function measured(pid: number | undefined, work: () => Promise<void>, upstreams: readonly string[]): Promise<{ seconds: number; growth: number }> {
  await checkpoint(upstreams);
  const base = pid === undefined ? 0 : rssOf(pid);
  let peak = 0;
  const sampler = pid === undefined ? undefined : setInterval(() => (peak = Math.max(peak, rssOf(pid) - base)), 50);
  const t = performance.now();
  try {
    await work();
  } finally {
    clearInterval(sampler);
  }
  return { seconds: (performance.now() - t) / 1000, growth: pid === undefined ? 0 : Math.max(peak, rssOf(pid) - base) };
}

/** `psql \copy` of `file` into `table` (made with `columns`, emptied first) over `conn`. */
async function copyFile(conn: Conn, file: string, table: string, columns: string): Promise<void> {
  const qualified = `"${REPO}".${table}`;
  const made = await run('psql', [conninfo(conn), '-X', '-c', `DROP TABLE IF EXISTS ${qualified}`, '-c', `CREATE TABLE ${qualified} (${columns})`]);
  if (made.code !== 0) throw new Error(`CREATE TABLE ${table} failed: ${made.stderr}`);
  const r = await run('psql', [conninfo(conn), '-X', '-c', `\\copy ${qualified} FROM '${file}' WITH (FORMAT csv, HEADER true)`]);
  if (r.code !== 0) throw new Error(`psql \\copy into ${table} failed: ${r.stderr}`);
}

export async function runUpload(env: BenchEnv, opts: { megabytes: number; rounds: number }, log: (s: string) => void, ref?: RefEnv): Promise<UploadResult> {
  const file = join(env.dir, 'upload.csv');
  const { bytes: size } = await generateCsv(file, opts.megabytes);
  const mb = size / 1e6;
  const ours: number[] = [];
  const theirs: number[] = [];
  const refs: number[] = [];
  let peak = 0;
  let refPeak = 0;
  let columns = '';
  const upstreams = [env.adminUrl, ...(ref ? [ref.env.adminUrl] : [])];
  for (let round = 0; round < opts.rounds; round++) {
    const table = `upload_${round}`;
    const mine = async () => {
      const m = await measured(env.repobase.pid, async () => void (columns = columnsOf(await upload(env, file, table))), upstreams);
      peak = Math.max(peak, m.growth);
      ours.push(mb / m.seconds);
    };
    const other = async () => {
      if (!ref) return;
      const m = await measured(ref.env.repobase.pid, async () => void (await upload(ref.env, file, table)), upstreams);
      refPeak = Math.max(refPeak, m.growth);
      refs.push(mb / m.seconds);
    };
    // The builds in turn, the first of them first in every other round.
    for (const step of round % 2 ? [other, mine] : [mine, other]) await step();
    // The same column types the upload inferred, so both load the same table.
    const direct = await measured(undefined, () => copyFile(env.direct, file, `copy_${round}`, columns), upstreams);
    theirs.push(mb / direct.seconds);
    log(`upload round ${round + 1}: repobase ${ours.at(-1)!.toFixed(1)} MB/s${ref ? `, repobase${ref.suffix} ${refs.at(-1)!.toFixed(1)} MB/s` : ''}, psql \\copy ${theirs.at(-1)!.toFixed(1)} MB/s`);
  }
  const a = summarize(ours).median;
  const b = summarize(theirs).median;
  const wireCopy = await runWireCopies(env, file, columns, mb, opts.rounds, upstreams, log, ref);
  const against = ref && { suffix: ref.suffix, repobaseMBps: summarize(refs).median, peakRssGrowthMb: refPeak / 2 ** 20 };
  return { megabytes: mb, repobaseMBps: a, psqlMBps: b, ratio: a / b, peakRssGrowthMb: peak / 2 ** 20, against, wireCopy };
}

function columnsOf(job: Job): string {
  return (job.columns ?? []).map((c) => `${escapeIdentifier(c.name)} ${c.type}`).join(', ');
}

/** `psql \copy` of the file by 1 and by 4 clients at once: directly, through repobase (and the other build), in turn. */
async function runWireCopies(env: BenchEnv, file: string, columns: string, mb: number, rounds: number, upstreams: readonly string[], log: (s: string) => void, ref?: RefEnv): Promise<WireCopyResult[]> {
  const targets: { name: string; conn: Conn; pid?: number }[] = [
    { name: 'direct', conn: env.direct },
    { name: 'repobase', conn: env.repobase, pid: env.repobase.pid },
    ...(ref ? [{ name: `repobase${ref.suffix}`, conn: ref.env.repobase, pid: ref.env.repobase.pid }] : []),
  ];
  const out: WireCopyResult[] = [];
  for (const clients of COPY_CLIENTS) {
    const speeds = new Map<string, number[]>(targets.map((t) => [t.name, []]));
    const peaks = new Map<string, number>(targets.map((t) => [t.name, 0]));
    for (let round = 0; round < rounds; round++) {
      for (const t of round % 2 ? [...targets].reverse() : targets) {
        const m = await measured(t.pid, async () => void (await Promise.all(Array.from({ length: clients }, (_, i) => copyFile(t.conn, file, `wire_copy_${i}`, columns)))), upstreams);
        speeds.get(t.name)!.push((clients * mb) / m.seconds);
        peaks.set(t.name, Math.max(peaks.get(t.name)!, m.growth));
      }
      log(`wire copy, ${clients} client(s), round ${round + 1}: ${targets.map((t) => `${t.name} ${speeds.get(t.name)!.at(-1)!.toFixed(1)} MB/s`).join(', ')}`);
    }
    out.push({ clients, targets: Object.fromEntries(targets.map((t) => [t.name, { mbps: summarize(speeds.get(t.name)!).median, peakRssGrowthMb: peaks.get(t.name)! / 2 ** 20 }])) });
  }
  return out;
}

/** The report's lines: the REST upload, then the wire copies (MB/s, and the most each proxy's RSS grew). */
export function uploadLines(u: UploadResult): string[] {
  const other = u.against ? `, repobase${u.against.suffix} ${fmt(u.against.repobaseMBps, 1)} MB/s (peak RSS growth ${fmt(u.against.peakRssGrowthMb, 1)} MB)` : '';
  const names = Object.keys(u.wireCopy[0]?.targets ?? {});
  return [
    `Upload of a ${fmt(u.megabytes)} MB CSV: repobase ${fmt(u.repobaseMBps, 1)} MB/s, psql \\copy ${fmt(u.psqlMBps, 1)} MB/s (ratio ${fmt(u.ratio, 2)}); peak RSS growth of repobase ${fmt(u.peakRssGrowthMb, 1)} MB${other}.`,
    '',
    `| psql \\copy of the file over the wire | ${names.map((n) => (n === 'direct' ? 'direct MB/s' : `${n} MB/s | ${n} peak RSS growth MB`)).join(' | ')} |`,
    `|---|${names.map((n) => (n === 'direct' ? '---|' : '---|---|')).join('')}`,
    ...u.wireCopy.map((c) => `| ${c.clients} client${c.clients > 1 ? 's at once' : ''} | ${names.map((n) => (n === 'direct' ? fmt(c.targets[n]!.mbps, 1) : `${fmt(c.targets[n]!.mbps, 1)} | ${fmt(c.targets[n]!.peakRssGrowthMb, 1)}`)).join(' | ')} |`),
    '',
  ];
}

/**
 * Upload: a generated CSV of mixed types (bench/ingest.ts's) through `POST /api/v1beta/import/`
 * (type inference over every value, COPY into the typed table) against `psql \copy` of the same
 * file into a table made beforehand with the types the upload inferred. Peak RSS of repobase is sampled during the upload.
 */
import { openAsBlob } from 'node:fs';
import { join } from 'node:path';
import { escapeIdentifier } from 'pg';
import { generateCsv } from '../ingest.js';
import { conninfo, REPO, type BenchEnv } from '../env.js';
import { rssOf, run } from '../lib/proc.js';
import { summarize } from '../lib/stats.js';

export interface UploadResult {
  megabytes: number;
  repobaseMBps: number;
  psqlMBps: number;
  ratio: number;
  peakRssGrowthMb: number;
}

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

export async function runUpload(env: BenchEnv, opts: { megabytes: number; rounds: number }, log: (s: string) => void): Promise<UploadResult> {
  const file = join(env.dir, 'upload.csv');
  const { bytes: size } = await generateCsv(file, opts.megabytes);
  const mb = size / 1e6;
  const ours: number[] = [];
  const theirs: number[] = [];
  let peak = 0;
  for (let round = 0; round < opts.rounds; round++) {
    const table = `upload_${round}`;
    const base = rssOf(env.repobase.pid);
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(env.repobase.pid) - base)), 50);
    let t = performance.now();
    let job: Job;
    try {
      job = await upload(env, file, table);
    } finally {
      clearInterval(sampler);
    }
    ours.push(mb / ((performance.now() - t) / 1000));
    const copy = `copy_${round}`;
    // The same column types the upload inferred, so both load the same table.
    const columns = (job.columns ?? []).map((c) => `${escapeIdentifier(c.name)} ${c.type}`).join(', ');
    await run('psql', [conninfo(env.direct), '-c', `CREATE TABLE "${REPO}".${copy} (${columns})`]);
    t = performance.now();
    const r = await run('psql', [conninfo(env.direct), '-c', `\\copy "${REPO}".${copy} FROM '${file}' WITH (FORMAT csv, HEADER true)`]);
    if (r.code !== 0) throw new Error(`psql \\copy failed: ${r.stderr}`);
    theirs.push(mb / ((performance.now() - t) / 1000));
    log(`upload round ${round + 1}: repobase ${ours.at(-1)!.toFixed(1)} MB/s, psql \\copy ${theirs.at(-1)!.toFixed(1)} MB/s`);
  }
  const a = summarize(ours).median;
  const b = summarize(theirs).median;
  return { megabytes: mb, repobaseMBps: a, psqlMBps: b, ratio: a / b, peakRssGrowthMb: peak / 2 ** 20 };
}

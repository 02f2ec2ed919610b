/**
 * Upload: a generated CSV of mixed types through `POST /api/v1beta/import/` (type inference, COPY
 * into a staging table, final typed table) against `psql \copy` of the same file into a table
 * made beforehand with the same types. Peak RSS of repobase is sampled during the upload.
 */
import { createWriteStream } from 'node:fs';
import { openAsBlob } from 'node:fs';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { once } from 'node:events';
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

const COLUMNS = 'id bigint, name text, amount double precision, active boolean, day date, seen timestamptz, note text';

async function generate(file: string, megabytes: number): Promise<number> {
  const out = createWriteStream(file);
  out.write('id,name,amount,active,day,seen,note\n');
  let bytes = 0;
  for (let i = 1; bytes < megabytes * 1e6; i++) {
    const line = `${i},customer ${i % 9973},${(i * 0.37).toFixed(2)},${i % 3 === 0 ? 'true' : 'false'},2024-${String((i % 12) + 1).padStart(2, '0')}-${String((i % 28) + 1).padStart(2, '0')},2024-05-06T07:08:${String(i % 60).padStart(2, '0')}Z,"note, with comma ${i}"\n`;
    bytes += line.length;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return (await stat(file)).size;
}

async function upload(env: BenchEnv, file: string, table: string): Promise<void> {
  const form = new FormData();
  form.set('repo', REPO);
  form.set('table_name', table);
  form.set('file', await openAsBlob(file), 'upload.csv');
  const res = await fetch(`${env.repobase.httpUrl}/api/v1beta/import/`, { method: 'POST', headers: { authorization: `Bearer ${env.repobase.key}` }, body: form });
  let body = (await res.json()) as { id?: string; status?: string; error?: { message: string } };
  if (!res.ok) throw new Error(`import answered ${res.status}: ${JSON.stringify(body)}`);
  while (body.status && body.status !== 'DONE') {
    if (body.status === 'FAILED') throw new Error(`import failed: ${JSON.stringify(body)}`);
    await new Promise((r) => setTimeout(r, 200));
    body = (await (await fetch(`${env.repobase.httpUrl}/api/v1beta/import/${body.id}`, { headers: { authorization: `Bearer ${env.repobase.key}` } })).json()) as typeof body;
  }
}

export async function runUpload(env: BenchEnv, opts: { megabytes: number; rounds: number }, log: (s: string) => void): Promise<UploadResult> {
  const file = join(env.dir, 'upload.csv');
  const size = await generate(file, opts.megabytes);
  const mb = size / 1e6;
  const ours: number[] = [];
  const theirs: number[] = [];
  let peak = 0;
  for (let round = 0; round < opts.rounds; round++) {
    const table = `upload_${round}`;
    const base = rssOf(env.repobase.pid);
    const sampler = setInterval(() => (peak = Math.max(peak, rssOf(env.repobase.pid) - base)), 50);
    let t = performance.now();
    try {
      await upload(env, file, table);
    } finally {
      clearInterval(sampler);
    }
    ours.push(mb / ((performance.now() - t) / 1000));
    const copy = `copy_${round}`;
    await run('psql', [conninfo(env.direct), '-c', `CREATE TABLE "${REPO}".${copy} (${COLUMNS})`]);
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

/**
 * Upload throughput and memory: generates a CSV of N MB (default 200), uploads it with curl to
 * an in-process repobase (so this process's RSS is the server's), samples RSS every 20 ms, then
 * loads the same file with `psql \copy` into a pre-made table of the same column types straight
 * into the same Postgres. Prints MB/s both ways, their ratio, and the peak RSS growth.
 *
 *   npm run build && node dist/bench/ingest.js [MB] [direct|late|rows]
 *   (BENCH_PG_URL=<superuser URL> to use an existing cluster)
 *
 * `direct` (default) is the usual case; `late` gives the amount column a text value 60% into the
 * file, past the sample the types are guessed from (the direct load starts over once); `rows`
 * sends null_values twice, which Postgres' COPY cannot express, so the upload goes row by row;
 * `written` writes amounts with thousands separators (`"1,249,987.5"`), days as `Mar 4 2024` and
 * timestamps day first (`04/03/2024 05:06:07`), the first and last of which the upload rewrites
 * on their way to COPY, while psql \copy loads the same rows written in ISO.
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { chmod, mkdtemp, rm, stat } from 'node:fs/promises';
import { createWriteStream } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { escapeIdentifier } from 'pg';
import { startService } from '../src/main.js';
import { loadConfig } from '../src/shared/config.js';
import { createLogger } from '../src/shared/logger.js';
import { startEmbedded } from '../src/upstream/embedded.js';

const run = promisify(execFile);

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const two = (n: number) => String(n).padStart(2, '0');

/**
 * A CSV like a real export: ids, names, amounts, dates, timestamps, flags and quoted text; with
 * `lateText`, the amount of the line at that fraction of the file is "n/a". `style` `written`
 * and `iso` make larger amounts, written as people write them or plainly, the same rows
 * otherwise: `rows` stops at that many rows when given (the `iso` twin of a `written` file).
 */
export async function generateCsv(path: string, megabytes: number, lateText?: number, style?: 'written' | 'iso', rows = Infinity): Promise<{ bytes: number; rows: number }> {
  const out = createWriteStream(path);
  out.write('id,customer,amount,day,created,paid,note\n');
  let bytes = 0;
  let late = lateText === undefined ? Infinity : lateText * megabytes * 1e6;
  let i = 1;
  for (; (rows === Infinity ? bytes < megabytes * 1e6 : i <= rows); i++) {
    const month = 1 + (i % 12);
    const day = 1 + (i % 28);
    let amount: string | number = bytes >= late ? 'n/a' : ((i * 37) % 100000) / 100;
    let date = `2024-${two(month)}-${two(day)}`;
    let created = `2024-03-04T05:06:${two(i % 60)}`;
    if (style !== undefined) amount = ((i * 37) % 100000) * 12.5;
    if (style === 'written') {
      amount = `"${amount.toLocaleString('en-US')}"`;
      date = `${MONTHS[month - 1]} ${day} 2024`;
      created = `${two(day)}/${two(month)}/2024 05:06:${two(i % 60)}`;
    } else if (style === 'iso') created = `2024-${two(month)}-${two(day)} 05:06:${two(i % 60)}`;
    if (bytes >= late) late = Infinity;
    const line = `${i},customer ${i % 5000},${amount},${date},${created},${i % 3 ? 'true' : 'false'},"note ${i}, with a comma"\n`;
    bytes += line.length;
    if (!out.write(line)) await once(out, 'drain');
  }
  out.end();
  await once(out, 'finish');
  return { bytes, rows: i - 1 };
}

async function main(): Promise<void> {
  const megabytes = Number(process.argv[2] ?? 200);
  const scenario = process.argv[3] ?? 'direct';
  if (!['direct', 'late', 'rows', 'written'].includes(scenario)) throw new Error(`unknown scenario "${scenario}": direct, late, rows or written`);
  const dir = await mkdtemp(join(tmpdir(), 'repobase-ingest-bench-'));
  await chmod(dir, 0o755);
  let adminUrl = process.env.BENCH_PG_URL;
  const embedded = adminUrl ? undefined : await startEmbedded({ dataDir: join(dir, 'pg'), port: 55000 + Math.floor(Math.random() * 900), database: 'postgres', log: createLogger('warn') });
  adminUrl ??= embedded!.adminUrl;
  const db = `bench_${randomBytes(4).toString('hex')}`;
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  await admin.end();
  const url = new URL(adminUrl);
  url.pathname = `/${db}`;
  const config = loadConfig({}, { upstreamUrl: url.toString(), dataDir: join(dir, 'data'), httpPort: 0, pgPort: 0, logLevel: 'warn', secret: 'bench', importAsyncBytes: 1e12 });
  const svc = await startService(config, createLogger('warn'));
  try {
    const { key } = await svc.control.createUser('bench');
    await svc.control.createRepo('bench/data');
    const file = join(dir, 'orders.csv');
    const written = scenario === 'written';
    const { bytes, rows: generated } = await generateCsv(file, megabytes, scenario === 'late' ? 0.6 : undefined, written ? 'written' : undefined);
    // psql \copy cannot read the written file: it loads the same rows written in ISO.
    const plain = written ? join(dir, 'orders-iso.csv') : file;
    if (written) await generateCsv(plain, megabytes, undefined, 'iso', generated);
    const size = (await stat(file)).size;
    global.gc?.();
    const baseline = process.memoryUsage().rss;
    let peak = baseline;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20);
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    const fields = scenario === 'rows' ? ['-F', 'null_values=["",""]'] : [];
    const curl = execFile('curl', ['-sS', '-H', `Authorization: Bearer ${key}`, '-F', 'repo=bench/data', ...fields, '-F', `file=@${file}`, `${svc.httpUrl}/api/v1beta/import/`], { maxBuffer: 1 << 20 });
    let answer = '';
    curl.stdout?.on('data', (d: Buffer) => (answer += d.toString()));
    await once(curl, 'exit');
    const uploadSeconds = (performance.now() - t0) / 1000;
    const cpu = process.cpuUsage(cpu0);
    clearInterval(sampler);
    const job = JSON.parse(answer) as { status: string; rows: number; columns: { name: string; type: string }[] };
    if (job.status !== 'DONE') throw new Error(`upload failed: ${answer}`);

    const c = new pg.Client({ connectionString: url.toString() });
    await c.connect();
    await c.query(`CREATE TABLE psql_copy (${job.columns.map((col) => `${escapeIdentifier(col.name)} ${col.type}`).join(', ')})`);
    await c.end();
    const t1 = performance.now();
    await run('psql', [url.toString(), '-v', 'ON_ERROR_STOP=1', '-c', `\\copy psql_copy FROM '${plain}' CSV HEADER`]);
    const psqlSeconds = (performance.now() - t1) / 1000;

    const mb = size / 1e6;
    const report = {
      scenario,
      file_mb: +mb.toFixed(1),
      rows: job.rows,
      columns: job.columns.map((col) => `${col.name} ${col.type}`).join(', '),
      upload_s: +uploadSeconds.toFixed(2),
      upload_mb_s: +(mb / uploadSeconds).toFixed(1),
      // This process is the service (Postgres and curl are processes of their own): its CPU per upload.
      repobase_cpu_s: +((cpu.user + cpu.system) / 1e6).toFixed(2),
      psql_copy_s: +psqlSeconds.toFixed(2),
      psql_copy_mb_s: +(mb / psqlSeconds).toFixed(1),
      ratio: +(psqlSeconds / uploadSeconds).toFixed(2),
      rss_baseline_mb: +(baseline / 1048576).toFixed(0),
      rss_peak_growth_mb: +((peak - baseline) / 1048576).toFixed(1),
      generated_bytes: bytes,
    };
    process.stdout.write(JSON.stringify(report, null, 2) + '\n');
  } finally {
    await svc.stop();
    await embedded?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

if (process.argv[1]?.endsWith('ingest.js')) {
  main().catch((err: unknown) => {
    process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}

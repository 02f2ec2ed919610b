/**
 * Client commands: the REST API with an API key (`-k/--key` or REPOBASE_API_KEY) on a server
 * (`--url` or REPOBASE_URL, default http://127.0.0.1:8080). `query` prints a table on a terminal
 * and CSV otherwise (pipes and files get data, not decoration); `--format` overrides.
 */
import { readFile } from 'node:fs/promises';
import { Command } from 'commander';
import { csvField } from '../upstream/query-encode.js';
import { writeAnswer } from './client-answer.js';
import { createClient, withClientOptions, type ClientOptions } from './client-http.js';
import { queryCommands, submitAsync } from './client-queries.js';
import { defaultFormat, formatOption, type CliFormat } from './client-render.js';
import { UsageError, type CliContext } from './context.js';
import { formatTable } from './table.js';

async function readStdin(): Promise<string> {
  if (process.stdin.isTTY) throw new UsageError('no SQL: give it as an argument, with -f FILE, or on standard input');
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

async function sqlOf(arg: string | undefined, file: string | undefined): Promise<string> {
  if (arg !== undefined && file !== undefined) throw new UsageError('give the SQL either as an argument or with -f, not both');
  if (arg !== undefined) return arg;
  if (file === undefined || file === '-') return readStdin();
  try {
    return await readFile(file, 'utf8');
  } catch (err: unknown) {
    throw new UsageError(`cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? String(err)}`);
  }
}

/** Runs `sql` and writes its answer as it streams in; a server error is thrown (exit 1). */
export async function runQuery(ctx: CliContext, opts: ClientOptions, sql: string, format: CliFormat): Promise<void> {
  const res = await createClient(ctx, opts).request('POST', '/query/', { query_string: sql }, 'application/x-ndjson');
  await writeAnswer(ctx, res, format);
}

interface RepoJson {
  name: string;
  is_private: boolean;
  description: string;
  created_at: string;
}

/** `repo create` over the API (the admin variant in admin.ts is used when no key is given). */
export async function createRepoViaApi(ctx: CliContext, opts: ClientOptions, ref: { owner: string; repo: string }, isPrivate: boolean, description: string): Promise<void> {
  const res = await createClient(ctx, opts).request('POST', '/repos/', { name: `${ref.owner}/${ref.repo}`, is_private: isPrivate, description });
  const repo = (await res.json()) as RepoJson;
  ctx.out(`${repo.name}\n`);
}

/** `repobase query` and `repobase repos`. */
export function clientCommands(ctx: CliContext): Command[] {
  const query = withClientOptions(
    new Command('query')
      .description('run one SQL statement through the REST API')
      .argument('[sql]', 'the statement (or -f FILE, or standard input)')
      .option('-f, --file <file>', 'read the statement from a file (- for standard input)')
      .option('--async', 'run it in the background and print its id (see queries, query-result, query-cancel)')
      .addOption(formatOption('table on a terminal, csv otherwise')),
  ).action(async (sql: string | undefined, opts: ClientOptions & { file?: string; format?: CliFormat; async?: boolean }) => {
    const text = await sqlOf(sql, opts.file);
    if (opts.async) return submitAsync(ctx, opts, text);
    await runQuery(ctx, opts, text, opts.format ?? defaultFormat());
  });

  const repos = withClientOptions(new Command('repos').description('list your repos').addOption(formatOption('table'))).action(
    async (opts: ClientOptions & { format?: CliFormat }) => {
      const res = await createClient(ctx, opts).request('GET', '/repos/');
      const body = (await res.json()) as { repos: RepoJson[] };
      const rows = body.repos.map((r) => [r.name, r.is_private ? 'private' : 'public', r.description, r.created_at]);
      const headers = ['name', 'visibility', 'description', 'created'];
      if (opts.format === 'json') ctx.out(JSON.stringify(body) + '\n');
      else if (opts.format === 'csv') ctx.out([headers, ...rows].map((r) => r.map(csvField).join(',')).join('\n') + '\n');
      else ctx.out(formatTable(headers, rows));
    },
  );
  return [query, repos, ...queryCommands(ctx)];
}

/**
 * `/import/`: file upload with schema inference (see src/ingest). The form fields come before
 * the file part (or in the query string); the file is parsed and staged as it arrives, on a
 * connection of the caller's own role. Uploads larger than `importAsyncBytes` (Content-Length),
 * or sent with `async=true`, answer 202 at once with the job (Location: its URL) and the answer
 * ends when the whole file has been read; the others answer 200 with the finished job. The
 * `columns` field (names and types chosen per column, see src/ingest/overrides.ts) applies to
 * both the upload and the preview; the preview then counts the previewed values each type refuses.
 */
import { Readable } from 'node:stream';
import multipart, { type MultipartFile, type Multipart } from '@fastify/multipart';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import Type, { type Static } from 'typebox';
import type { ControlPlane, Principal } from '../../control/control-plane.js';
import { isScoped } from '../../control/key-scope.js';
import { quotaError } from '../../policy/index.js';
import { lendComment } from '../../policy/key-scope.js';
import { keyLabel, scopeWords, WIDER_KEY_HINT } from '../../shared/key-words.js';
import { createImportJob, finishImportJob, getImportJob, updateImportJob, type ImportJob } from '../../control/imports.js';
import { exampleOfColumn, importUpload, invalidCounts, lineOf, previewUpload, type ImportOutcome, type InferredColumn, type Preview, type Progress } from '../../ingest/index.js';
import { uploadOptions, type UploadOptions } from '../../ingest/options.js';
import type { Config } from '../../shared/config.js';
import { PgError, SqlState } from '../../shared/errors.js';
import type { RolePools } from '../../upstream/role-pools.js';
import { principalOf } from '../auth.js';
import { countUpload } from '../../observe/metrics.js';
import { errorObject, publicError } from '../errors.js';

export interface ImportDeps {
  control: ControlPlane;
  pools: RolePools;
  config: Pick<Config, 'importMaxBytes' | 'importAsyncBytes'>;
}

/** Multipart framing around the file: a Content-Length past the limit by more is refused unread. */
const FRAMING_BYTES = 64 * 1024;

const Column = Type.Object({
  name: Type.String(),
  type: Type.String({ description: 'BIGINT, DOUBLE PRECISION, TIMESTAMP WITH TIME ZONE…' }),
  written: Type.Optional(Type.String({ description: 'how the values are written, when not as Postgres writes them: a date layout (`Mon D YYYY`, `DD/MM/YYYY`…) or `1,234,567` (thousands separators)' })),
  example: Type.Optional(Type.String({ description: 'with written: a value written so, e.g. `Jan 31 2000 1:30 PM`' })),
  ambiguous: Type.Optional(Type.Array(Type.String(), { description: 'a TEXT column of dates that read both month first and day first: the two layouts' })),
});
const Job = Type.Object(
  {
    id: Type.String({ format: 'uuid' }),
    status: Type.Union([Type.Literal('RECEIVED'), Type.Literal('PROCESSING'), Type.Literal('DONE'), Type.Literal('FAILED')]),
    repo: Type.String(),
    table_name: Type.String(),
    mode: Type.String(),
    bytes: Type.Integer({ description: 'bytes of the file read so far' }),
    rows: Type.Integer({ description: 'rows staged so far; when DONE, rows written' }),
    format: Type.Union([Type.String(), Type.Null()]),
    header: Type.Union([Type.Boolean(), Type.Null()]),
    columns: Type.Union([Type.Array(Column), Type.Null()]),
    error: Type.Union([Type.Object({ code: Type.String(), message: Type.String(), detail: Type.Union([Type.String(), Type.Null()]), hint: Type.Union([Type.String(), Type.Null()]), line: Type.Union([Type.Integer(), Type.Null()]) }), Type.Null()]),
    created_at: Type.String({ format: 'date-time' }),
    finished_at: Type.Union([Type.String({ format: 'date-time' }), Type.Null()]),
  },
  { $id: 'ImportJob' },
);
const PreviewColumn = Type.Object({
  ...Column.properties,
  invalid: Type.Optional(Type.Integer({ description: 'with the columns field: how many values of `data` in this column do not read as its type' })),
});
const PreviewAnswer = Type.Object({
  format: Type.String(),
  header: Type.Boolean(),
  delimiter: Type.Union([Type.String(), Type.Null()]),
  columns: Type.Array(PreviewColumn),
  rows: Type.Integer({ description: 'data rows in the whole file' }),
  data: Type.Array(Type.Array(Type.Union([Type.String(), Type.Null()])), { description: 'the first 20 rows, as text' }),
});

const tooLarge = (max: number) => new PgError(SqlState.ProgramLimitExceeded, `the file is larger than ${max} bytes`, { hint: 'the server limit is set by importMaxBytes' });

type JobJson = Static<typeof Job>;
type ColumnJson = Static<typeof Column>;

function columnJson(c: InferredColumn): ColumnJson {
  const column: ColumnJson = { name: c.name, type: c.type.toUpperCase() };
  if (c.written) Object.assign(column, { written: c.written.layout, example: exampleOfColumn(c.type, c.written.layout, c.written.clock12) });
  if (c.ambiguous) column.ambiguous = c.ambiguous;
  return column;
}

function resultJson(o: ImportOutcome): { format: string; header: boolean; delimiter: string | null; columns: ColumnJson[] } {
  return { format: o.format, header: o.header, delimiter: o.delimiter ?? null, columns: o.columns.map(columnJson) };
}

function jobJson(job: ImportJob): JobJson {
  const result = (job.result ?? {}) as { format?: string; header?: boolean; columns?: ColumnJson[] };
  return {
    id: job.id,
    status: job.status,
    repo: job.repo,
    table_name: job.table,
    mode: job.mode,
    bytes: job.bytes,
    rows: job.rows,
    format: result.format ?? null,
    header: result.header ?? null,
    columns: result.columns ?? null,
    error: job.error as JobJson['error'],
    created_at: job.createdAt.toISOString(),
    finished_at: job.finishedAt?.toISOString() ?? null,
  };
}

/** The file's bytes; the size limit and a cut-off upload become PgErrors. */
async function* fileBytes(file: MultipartFile, max: number): AsyncGenerator<Buffer> {
  try {
    for await (const chunk of file.file) yield chunk as Buffer;
  } catch (err: unknown) {
    if (err instanceof PgError) throw err;
    if ((err as { code?: unknown }).code === 'FST_REQ_FILE_TOO_LARGE') throw tooLarge(max);
    throw new PgError(SqlState.ProtocolViolation, 'the upload ended before the file was complete');
  }
  if (file.file.truncated) throw tooLarge(max);
}

/** Collects form fields up to the file part; later parts are read by `rest`. */
async function untilFile(parts: AsyncIterableIterator<Multipart>, fields: Record<string, string[]>): Promise<MultipartFile> {
  for (let next = await parts.next(); !next.done; next = await parts.next()) {
    const part = next.value;
    if (part.type === 'file') {
      if (part.fieldname !== 'file') throw new PgError(SqlState.InvalidParameterValue, `the file part must be named "file", not "${part.fieldname}"`);
      return part;
    }
    (fields[part.fieldname] ??= []).push(String(part.value));
  }
  throw new PgError(SqlState.InvalidParameterValue, 'no file: send the upload as multipart/form-data with a part named "file"');
}

async function rest(parts: AsyncIterableIterator<Multipart>): Promise<void> {
  for (let next = await parts.next(); !next.done; next = await parts.next()) {
    throw new PgError(SqlState.InvalidParameterValue, `the part "${next.value.fieldname}" comes after the file`, { hint: 'send the form fields before the file' });
  }
}

function queryFields(query: unknown): Record<string, string[]> {
  const fields: Record<string, string[]> = {};
  for (const [k, v] of Object.entries((query ?? {}) as Record<string, unknown>)) fields[k] = ([] as unknown[]).concat(v).map(String);
  return fields;
}

/**
 * The caller must own the repo (append: or write to it); someone else's private repo is "not
 * found". A scoped key needs write access, and the repo in its scope.
 */
async function authorize(control: ControlPlane, who: Principal, opts: UploadOptions): Promise<string> {
  if (!opts.repo) throw new PgError(SqlState.InvalidParameterValue, 'no repo: send repo=<user>/<repo>');
  const rights = await control.rights(who);
  const access = rights.repos.get(opts.repo);
  if (rights.key !== undefined && (access === undefined ? rights.key.reach.has(opts.repo) : rights.key.access === 'read')) {
    const label = keyLabel(rights.key.id, rights.key.name);
    throw new PgError(SqlState.InsufficientPrivilege, access === undefined ? `repo "${opts.repo}" is outside the scope of ${label}` : `${label} is read-only: an upload writes a table`, {
      hint: `it has ${scopeWords(rights.user, rights.key.access, rights.key.repos)}; ${WIDER_KEY_HINT}`,
    });
  }
  if (!access) throw new PgError(SqlState.InvalidSchemaName, `repo "${opts.repo}" does not exist`);
  if (access === 'own' || (access === 'write' && opts.mode === 'append')) {
    // An upload adds data: not into the repos of an owner over their storage quota.
    const owner = opts.repo.slice(0, opts.repo.indexOf('/'));
    const full = rights.full?.get(owner);
    if (full !== undefined) throw quotaError(opts.repo, owner, full);
    return opts.repo;
  }
  throw new PgError(SqlState.InsufficientPrivilege, `permission denied for repo "${opts.repo}"`, {
    hint: access === 'write' ? 'collaborators with write access may only append (mode=append)' : 'only the owner creates tables in a repo',
  });
}

export const importRoutes: FastifyPluginAsyncTypebox<ImportDeps> = async (app, { control, pools, config }) => {
  // 256 KiB per field: the columns field of a wide file (up to 1,599 entries) is the largest.
  await app.register(multipart, { limits: { fileSize: config.importMaxBytes, files: 1, fields: 20, fieldSize: 256 * 1024, parts: 22 } });

  const open = async (req: import('fastify').FastifyRequest, forTable: boolean) => {
    const length = Number(req.headers['content-length']);
    if (length > config.importMaxBytes + FRAMING_BYTES) throw tooLarge(config.importMaxBytes);
    if (!req.isMultipart()) throw new PgError(SqlState.InvalidParameterValue, 'send the upload as multipart/form-data with a part named "file"');
    const parts = req.parts();
    const fields = queryFields(req.query);
    const file = await untilFile(parts, fields);
    return { parts, file, length, opts: uploadOptions(fields, file.filename, forTable) };
  };

  /** With overrides, the previewed values each column's chosen type refuses (checked as the caller's role). */
  const invalidOf = async (role: string, p: Preview): Promise<number[]> => {
    const client = await pools.connect(role);
    let failure: unknown;
    try {
      return await invalidCounts(client, p.sample, p.columns);
    } catch (err: unknown) {
      failure = err;
      throw err;
    } finally {
      pools.release(client, failure === undefined ? undefined : new Error('preview check failed'));
    }
  };

  app.post('/import/preview', { schema: { summary: 'infer the table of a file without creating it', tags: ['import'], consumes: ['multipart/form-data'], response: { 200: PreviewAnswer } } }, async (req) => {
    const role = principalOf(req).role;
    const { parts, file, opts } = await open(req, false);
    const p = await previewUpload(fileBytes(file, config.importMaxBytes), opts);
    await rest(parts);
    const answer = { ...resultJson(p), rows: p.rows, data: p.sample };
    if (!opts.columns) return answer;
    const invalid = await invalidOf(role, p);
    return { ...answer, columns: answer.columns.map((c, i) => ({ ...c, invalid: invalid[i]! })) };
  });

  app.get('/import/:id', { schema: { summary: 'an import job', tags: ['import'], params: Type.Object({ id: Type.String() }), response: { 200: Job } } }, async (req) => {
    const who = principalOf(req);
    const job = await getImportJob(control.admin, req.params.id, who.user);
    // A scoped key sees the jobs of the repos of its scope only.
    if (!job || (isScoped(who.key) && !(await control.rights(who)).repos.has(job.repo))) throw new PgError(SqlState.UndefinedObject, `no import "${req.params.id}"`);
    return jobJson(job);
  });

  app.post('/import/', { schema: { summary: 'upload a file into a table', tags: ['import'], consumes: ['multipart/form-data'], response: { 200: Job, 202: Job } } }, async (req, reply) => {
    const who = principalOf(req);
    const user = who.user;
    const { parts, file, length, opts } = await open(req, true);
    const schema = await authorize(control, who, opts);
    const job = await createImportJob(control.admin, { user, repo: schema, table: opts.table, mode: opts.mode });
    const progress: Progress = { bytes: 0, rows: 0 };
    // The caller's own role, or a write key's, which is lent the tables it changes (key-triggers.ts).
    const client = await pools.connect(who.role);
    const lend = isScoped(who.key) ? (tables: readonly string[]) => lendComment(tables.map((t): ['r', string, string] => ['r', schema, t])) : undefined;
    let received!: () => void;
    const wholeFile = new Promise<void>((resolve) => (received = resolve));
    const beat = setInterval(() => {
      void updateImportJob(control.admin, job.id, { status: progress.rows > 0 ? 'PROCESSING' : undefined, ...progress }).catch((err: unknown) => req.log.warn({ err }, 'import heartbeat failed'));
    }, 1000);
    const work = (async () => {
      let failure: unknown;
      try {
        const outcome = await importUpload(client, fileBytes(file, config.importMaxBytes), opts, { schema, table: opts.table, mode: opts.mode, lend }, progress, {
          received: async () => {
            await rest(parts);
            received();
            await updateImportJob(control.admin, job.id, { status: 'PROCESSING', ...progress });
          },
        });
        return await finishImportJob(control.admin, job.id, { status: 'DONE', ...progress, result: resultJson(outcome) });
      } catch (err: unknown) {
        failure = err;
        const shown = publicError(err, req).error;
        await finishImportJob(control.admin, job.id, { status: 'FAILED', ...progress, error: { ...errorObject(shown), line: lineOf(shown) ?? null } }).catch(() => undefined);
        throw err;
      } finally {
        clearInterval(beat);
        received();
        // A failed import may leave the session mid-COPY: close it rather than reuse it.
        pools.release(client, failure === undefined ? undefined : new Error('import failed'));
        countUpload(progress, failure === undefined);
        control.usage.add(user, { uploadBytes: progress.bytes });
      }
    })();
    if (!(opts.async ?? length > config.importAsyncBytes)) return jobJson((await work)!);
    work.catch((err: unknown) => req.log.debug({ err }, 'import failed'));
    // The answer starts now and ends once the whole upload is read: HTTP clients stop sending a
    // body when the answer to it is complete.
    async function* body(): AsyncGenerator<string> {
      yield JSON.stringify(jobJson(job));
      await wholeFile;
    }
    // The 202 schema documents the job; the answer itself is this stream of its JSON.
    const raw: import('fastify').FastifyReply = reply;
    return raw.code(202).header('location', `/api/v1beta/import/${job.id}`).type('application/json; charset=utf-8').send(Readable.from(body()));
  });
};

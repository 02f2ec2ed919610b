/**
 * The upload endpoints for the wizard: `POST /import/preview` (the inferred table of a file,
 * creating nothing), `POST /import/` with `async=true` (answers 202 with a job) and
 * `GET /import/<id>` (the job's progress). Form fields go before the file, as the server reads
 * them in order.
 */
import { ApiError, send } from '../api.ts';

export interface Column {
  name: string;
  type: string;
  /** How the values are written when not as Postgres writes them: a date layout (`Mon D YYYY`…) or `1,234,567`. */
  written?: string;
  /** With written: a value written so (`Jan 31 2000`). */
  example?: string;
  /** A TEXT column of dates that read both month first and day first: the two layouts. */
  ambiguous?: string[];
}

export interface Preview {
  format: string;
  header: boolean;
  delimiter: string | null;
  columns: Column[];
  /** Data rows in the whole file. */
  rows: number;
  /** The first 20 rows, as text (null for NULL). */
  data: (string | null)[][];
}

export type ImportMode = 'create' | 'append' | 'replace';

export interface Job {
  id: string;
  status: 'RECEIVED' | 'PROCESSING' | 'DONE' | 'FAILED';
  repo: string;
  table_name: string;
  mode: string;
  /** Bytes of the file read so far. */
  bytes: number;
  /** Rows staged so far; when DONE, rows written. */
  rows: number;
  columns: Column[] | null;
  error: { code: string; message: string; detail: string | null; hint: string | null; line: number | null } | null;
}

/** An error answer as an ApiError. */
async function errorOf(res: Response): Promise<ApiError> {
  try {
    const body = (await res.json()) as { error?: { code?: string; message?: string; detail?: string | null; hint?: string | null } };
    const e = body.error;
    if (e && typeof e.message === 'string') return new ApiError(res.status, e.code ?? '', e.message, e.hint ?? null, e.detail ?? null);
  } catch {
    // not JSON
  }
  return new ApiError(res.status, '', `The server answered ${res.status}${res.statusText ? ` ${res.statusText}` : ''}.`);
}

async function json<T>(res: Response): Promise<T> {
  if (!res.ok) throw await errorOf(res);
  try {
    return (await res.json()) as T;
  } catch {
    throw new ApiError(0, '08006', 'The connection was lost before the answer was complete.', 'Try again.');
  }
}

/** The file's columns, their inferred types and its first rows. */
export async function previewFile(file: File, signal?: AbortSignal): Promise<Preview> {
  const form = new FormData();
  form.append('file', file, file.name);
  return json<Preview>(await send('POST', '/import/preview', { body: form, headers: { Accept: 'application/json' }, signal }));
}

export interface UploadRequest {
  repo: string;
  table: string;
  mode: ImportMode;
  /** Names, types (and layouts) for the file's columns, in order; left out to keep what was inferred. */
  columns?: { name: string; type: string; written?: string }[];
  file: File;
}

/**
 * Starts the upload and resolves with its job once the server has accepted it (browsers hand
 * over the answer when the whole file is sent). `onAccepted` gets the job id as soon as the
 * answer's headers name it, to follow progress while the rest of the answer is pending.
 */
export async function startUpload(request: UploadRequest, onAccepted?: (id: string) => void): Promise<Job> {
  const form = new FormData();
  form.append('repo', request.repo);
  form.append('table_name', request.table);
  form.append('mode', request.mode);
  form.append('async', 'true');
  if (request.columns) form.append('columns', JSON.stringify(request.columns));
  form.append('file', request.file, request.file.name);
  const res = await send('POST', '/import/', { body: form, headers: { Accept: 'application/json' } });
  const location = res.ok ? res.headers.get('location') : null;
  const id = location ? decodeURIComponent(location.slice(location.lastIndexOf('/') + 1)) : '';
  if (id) onAccepted?.(id);
  return json<Job>(res);
}

export async function getJob(id: string): Promise<Job> {
  return json<Job>(await send('GET', `/import/${encodeURIComponent(id)}`, { headers: { Accept: 'application/json' } }));
}

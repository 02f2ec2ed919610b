/**
 * `/<owner>/<repo>/upload`: a file becomes a table. Drop or choose the file; its preview shows
 * the columns and types the server inferred and the first rows; names and types can be changed,
 * the table named and the mode chosen (Create, Append, Replace); Upload sends it as a job and
 * follows its progress, then opens the new table. A failure names the file's line.
 */
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { Link, useLocation } from 'wouter';
import { ApiError, getRepo, type RepoDetail } from '../api.ts';
import { resourceStatus } from '../layout/ResourceStatus.tsx';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { PageTitle } from '../lib/PageTitle.tsx';
import { toApiError, useResource } from '../lib/useResource.ts';
import { repoHref } from '../repos/paths.ts';
import { ColumnsEditor } from './ColumnsEditor.tsx';
import { FileDrop } from './FileDrop.tsx';
import { columnNameProblems, formatBytes, tableNameFromFile, tableNameProblem } from './names.ts';
import { PreviewRows } from './PreviewRows.tsx';
import { getJob, previewFile, startUpload, type ImportMode, type Job, type Preview } from './requests.ts';
import { layoutToSend } from './written.ts';
import './upload.css';

export default function UploadPage({ owner, repo }: { owner: string; repo: string }) {
  const detail = useResource(() => getRepo(owner, repo), [owner, repo]);
  const status = resourceStatus(detail, `${owner}/${repo}`);
  if (status !== undefined || detail.status !== 'ready') return status;
  const data = detail.data;
  if (data.permission === 'read') {
    return (
      <div className="narrow">
        <PageTitle title={`Upload to ${data.name}`} />
        <p>You can read {data.name} but not add tables to it: uploads need the owner, or a collaborator with write access (who may append).</p>
        <p>
          <Link href={repoHref(owner, repo)}>Back to {data.name}</Link>
        </p>
      </div>
    );
  }
  return <UploadWizard repo={data} />;
}

type PreviewState = { status: 'none' } | { status: 'loading' } | { status: 'ready'; data: Preview } | { status: 'error'; error: ApiError };

type UploadState =
  | { status: 'idle' }
  /** The file is on its way; no job to follow yet. */
  | { status: 'sending' }
  | { status: 'running'; job: Job }
  | { status: 'failed'; error: ApiError; line: number | null };

interface Problems {
  table: string | null;
  columns: (string | null)[];
}

const POLL_MS = 500;
/** Polls that may fail in a row (a network blip) before the wizard gives up following the job. */
const POLL_RETRIES = 10;

const DELIMITERS: Record<string, string> = { ',': 'comma-separated', '\t': 'tab-separated', ';': 'semicolon-separated', '|': 'pipe-separated' };

function describe(p: Preview): string {
  const parts = [p.format.toUpperCase()];
  if (p.delimiter) parts.push(DELIMITERS[p.delimiter] ?? `separated by ${p.delimiter}`);
  if (p.format !== 'json' && p.format !== 'ndjson') parts.push(p.header ? 'the first row names the columns' : 'no header row');
  parts.push(`${p.rows.toLocaleString()} ${p.rows === 1 ? 'row' : 'rows'}`);
  return parts.join(' · ');
}

function UploadWizard({ repo }: { repo: RepoDetail }) {
  const id = useId();
  const [, navigate] = useLocation();
  const isOwner = repo.permission === 'own';
  const [file, setFile] = useState<File | null>(null);
  const [preview, setPreview] = useState<PreviewState>({ status: 'none' });
  const [names, setNames] = useState<string[]>([]);
  const [types, setTypes] = useState<string[]>([]);
  const [layouts, setLayouts] = useState<(string | undefined)[]>([]);
  const [table, setTable] = useState('');
  const [mode, setMode] = useState<ImportMode>(isOwner ? 'create' : 'append');
  const [problems, setProblems] = useState<Problems | null>(null);
  const [upload, setUpload] = useState<UploadState>({ status: 'idle' });
  const previewTicket = useRef(0);
  const alive = useRef(true);
  const progressHeading = useRef<HTMLHeadingElement>(null);
  const uploadButton = useRef<HTMLButtonElement>(null);
  const busy = upload.status === 'sending' || upload.status === 'running';
  const tableNames = repo.tables.map((t) => t.name);

  useEffect(() => {
    alive.current = true;
    return () => {
      alive.current = false;
    };
  }, []);

  useEffect(() => {
    if (upload.status === 'sending') progressHeading.current?.focus();
    if (upload.status === 'failed') uploadButton.current?.focus();
  }, [upload.status]);

  async function choose(chosen: File) {
    const ticket = ++previewTicket.current;
    setFile(chosen);
    setTable(tableNameFromFile(chosen.name));
    setProblems(null);
    setUpload({ status: 'idle' });
    setPreview({ status: 'loading' });
    try {
      const data = await previewFile(chosen);
      if (ticket !== previewTicket.current || !alive.current) return;
      setNames(data.columns.map((c) => c.name));
      setTypes(data.columns.map((c) => c.type));
      setLayouts(data.columns.map((c) => c.ambiguous?.[0]));
      setPreview({ status: 'ready', data });
    } catch (err) {
      if (ticket === previewTicket.current && alive.current) setPreview({ status: 'error', error: toApiError(err) });
    }
  }

  function check(data: Preview): Problems | null {
    let tableProblem = tableNameProblem(table);
    const exists = tableNames.includes(table);
    if (!tableProblem && mode === 'create' && exists) tableProblem = `A table named ${table} exists already: choose Replace or Append, or another name.`;
    if (!tableProblem && mode === 'append' && !exists) tableProblem = `There is no table named ${table} to append to.`;
    const columns = mode === 'append' ? data.columns.map(() => null) : columnNameProblems(names);
    return tableProblem || columns.some(Boolean) ? { table: tableProblem, columns } : null;
  }

  async function follow(jobId: string): Promise<void> {
    let failures = 0;
    while (alive.current) {
      let job: Job;
      try {
        job = await getJob(jobId);
        failures = 0;
      } catch (err) {
        if (++failures > POLL_RETRIES) throw err;
        await new Promise((r) => setTimeout(r, POLL_MS * 2));
        continue;
      }
      if (!alive.current) return;
      if (job.status === 'DONE') {
        navigate(`${repoHref(repo.owner, repo.repo)}/${encodeURIComponent(job.table_name)}`);
        return;
      }
      if (job.status === 'FAILED') {
        const e = job.error;
        const error = e ? new ApiError(0, e.code, e.message, e.hint, e.detail) : new ApiError(0, '', 'The upload failed.');
        setUpload({ status: 'failed', error, line: e?.line ?? null });
        return;
      }
      setUpload({ status: 'running', job });
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
  }

  async function submit(event: FormEvent) {
    event.preventDefault();
    if (busy || !file || preview.status !== 'ready') return;
    const data = preview.data;
    const found = check(data);
    setProblems(found);
    if (found) {
      // The first field with a problem takes the focus; its message is its description.
      document.getElementById(found.table ? `${id}-table` : `${id}-name-${found.columns.findIndex(Boolean)}`)?.focus();
      return;
    }
    const changed = data.columns.some((c, i) => names[i] !== c.name || types[i] !== c.type);
    // With the type, how the values were found written (or the layout chosen for dates that read both ways).
    const columns = mode !== 'append' && changed ? data.columns.map((c, i) => ({ name: names[i]!, type: types[i]!, written: layoutToSend(c, types[i]!, layouts[i]) })) : undefined;
    setUpload({ status: 'sending' });
    // The job is followed from the moment its id is known: from the answer's headers, else its body.
    const tracking: { job: Promise<void> | null } = { job: null };
    const fail = (err: unknown) => alive.current && setUpload({ status: 'failed', error: toApiError(err), line: null });
    try {
      const job = await startUpload({ repo: repo.name, table, mode, columns, file }, (jobId) => {
        tracking.job ??= follow(jobId);
      });
      tracking.job ??= follow(job.id);
    } catch (err) {
      // Once the job is known, its own status decides (the answer's body may be cut while the job goes on).
      if (!tracking.job) return void fail(err);
    }
    await tracking.job.catch(fail);
  }

  const ready = preview.status === 'ready' ? preview.data : null;
  const job = upload.status === 'running' ? upload.job : null;
  const fileRead = job !== null && file !== null && job.bytes >= file.size;

  return (
    <div className="upload-page">
      <p className="breadcrumb">
        <Link href={repoHref(repo.owner, repo.repo)}>{repo.name}</Link>
      </p>
      <PageTitle title={`Upload to ${repo.name}`} />
      <form className="form upload-form" onSubmit={(e) => void submit(e)} noValidate>
        <section className="upload-step" aria-labelledby={`${id}-step-file`}>
          <h2 id={`${id}-step-file`}>1. File</h2>
          <FileDrop file={file} disabled={busy} onFile={(f) => void choose(f)} />
          {preview.status === 'loading' && (
            <p className="muted" role="status">
              Reading the file…
            </p>
          )}
          <ErrorMessage error={preview.status === 'error' ? preview.error : null} />
        </section>

        {ready && (
          <>
            <section className="upload-step" aria-labelledby={`${id}-step-columns`}>
              <h2 id={`${id}-step-columns`}>2. Columns</h2>
              <p className="muted upload-summary">{describe(ready)}</p>
              {ready.columns.length === 0 ? (
                <p>The file has no columns.</p>
              ) : (
                <>
                  <p className="field-hint">
                    {mode === 'append'
                      ? 'Append keeps the columns of the existing table: rows are matched to them by the header names, else by position.'
                      : 'Rename a column or change its type here; the table can also be changed later with SQL.'}
                  </p>
                  <ColumnsEditor
                    idPrefix={id}
                    inferred={ready.columns}
                    names={names}
                    types={types}
                    layouts={layouts}
                    problems={problems?.columns ?? []}
                    readOnly={mode === 'append' || busy}
                    onName={(i, name) => setNames((all) => all.map((n, k) => (k === i ? name : n)))}
                    onType={(i, type) => setTypes((all) => all.map((t, k) => (k === i ? type : t)))}
                    onLayout={(i, layout) => setLayouts((all) => all.map((l, k) => (k === i ? layout : l)))}
                  />
                  <h3 className="upload-rows-heading">Preview</h3>
                  <PreviewRows names={mode === 'append' ? ready.columns.map((c) => c.name) : names} data={ready.data} total={ready.rows} />
                </>
              )}
            </section>

            <section className="upload-step" aria-labelledby={`${id}-step-table`}>
              <h2 id={`${id}-step-table`}>3. Table</h2>
              <fieldset className="upload-fields" disabled={busy}>
                <div className="field">
                  <label htmlFor={`${id}-table`}>Table name</label>
                  <input
                    id={`${id}-table`}
                    value={table}
                    onChange={(e) => setTable(e.target.value)}
                    list={`${id}-tables`}
                    autoComplete="off"
                    spellCheck={false}
                    aria-invalid={problems?.table ? true : undefined}
                    aria-describedby={problems?.table ? `${id}-table-problem ${id}-table-hint` : `${id}-table-hint`}
                  />
                  <datalist id={`${id}-tables`}>
                    {tableNames.map((t) => (
                      <option key={t} value={t} />
                    ))}
                  </datalist>
                  {problems?.table && (
                    <p className="field-error" id={`${id}-table-problem`}>
                      {problems.table}
                    </p>
                  )}
                  <p className="field-hint" id={`${id}-table-hint`}>
                    Kept exactly as written: spaces and capitals are fine (up to 63 bytes).
                  </p>
                </div>
                <fieldset className="field choices">
                  <legend>Mode</legend>
                  <ModeChoice id={id} value="create" label="Create" mode={mode} onChange={setMode} disabled={!isOwner} hint="A new table. Fails if a table with this name exists." />
                  <ModeChoice id={id} value="append" label="Append" mode={mode} onChange={setMode} hint="Adds the rows to the existing table, converted to its column types." />
                  <ModeChoice
                    id={id}
                    value="replace"
                    label="Replace"
                    mode={mode}
                    onChange={setMode}
                    disabled={!isOwner}
                    hint="A new table with this file's columns and rows, swapped in for the existing one when complete."
                  />
                  {!isOwner && <p className="field-hint">Only the owner creates or replaces tables; as a collaborator you can append.</p>}
                </fieldset>
              </fieldset>
            </section>

            <div className="form-actions">
              <button type="submit" ref={uploadButton} className="button button-primary" disabled={busy}>
                Upload
              </button>
            </div>
          </>
        )}
      </form>

      {busy && file && (
        <section className="upload-progress card" aria-labelledby={`${id}-progress-heading`}>
          <h2 id={`${id}-progress-heading`} ref={progressHeading} tabIndex={-1}>
            Uploading {file.name}
          </h2>
          {job && !fileRead ? (
            <progress aria-label="Upload progress" max={file.size} value={Math.min(job.bytes, file.size)} />
          ) : (
            // Before the server names the job, and while the table is built, there is no fraction to show.
            <progress aria-label="Upload progress" />
          )}
          <p className="upload-progress-text">
            {!job && `Sending ${formatBytes(file.size)}…`}
            {job && !fileRead && `${formatBytes(job.bytes)} of ${formatBytes(file.size)} read · ${job.rows.toLocaleString()} rows so far`}
            {job && fileRead && `File read · ${job.rows.toLocaleString()} rows · building the table…`}
          </p>
          <p className="visually-hidden" role="status">
            {!job ? 'Sending the file.' : fileRead ? 'Building the table.' : 'Reading the file.'}
          </p>
        </section>
      )}

      {upload.status === 'failed' && (
        <div className="alert upload-error" role="alert">
          <p className="alert-message">
            {lineNote(upload.line, upload.error.message)}
            {upload.error.message}
          </p>
          {upload.error.detail && <p>{upload.error.detail}</p>}
          {upload.error.hint && <p className="alert-hint">{upload.error.hint}</p>}
          {upload.error.code && <p className="upload-error-code">SQLSTATE {upload.error.code}</p>}
        </div>
      )}
    </div>
  );
}

/** `Line 12 of the file: `, unless the message names the line itself. */
function lineNote(line: number | null, message: string): string {
  if (line === null || new RegExp(`\\bline ${line}\\b`, 'i').test(message)) return '';
  return `Line ${line.toLocaleString()} of the file: `;
}

function ModeChoice(props: { id: string; value: ImportMode; label: string; hint: string; mode: ImportMode; disabled?: boolean; onChange(mode: ImportMode): void }) {
  const inputId = `${props.id}-mode-${props.value}`;
  return (
    <div className="choice">
      <input
        type="radio"
        id={inputId}
        name={`${props.id}-mode`}
        value={props.value}
        checked={props.mode === props.value}
        disabled={props.disabled}
        onChange={() => props.onChange(props.value)}
        aria-describedby={`${inputId}-hint`}
      />
      <label htmlFor={inputId}>{props.label}</label>
      <p className="field-hint" id={`${inputId}-hint`}>
        {props.hint}
      </p>
    </div>
  );
}

/**
 * `/sql`: write SQL, run it, see the rows stream in. Run (or Ctrl/Cmd-Enter) runs the selection,
 * else the statement at the cursor; Cancel stops it (the cancel endpoint and the aborted request,
 * either is enough); Download CSV saves the same statement's result as a file; Run in background
 * sends it as an async query, whose result the server keeps. An error shows every field Postgres
 * gave and marks the spot it points at. The History panel lists the person's latest queries from
 * the server; one opened there takes the results' place (StoredResult).
 *
 * CodeMirror is imported only from this folder, and this page is loaded on its own when the
 * route is first visited.
 */
import type { EditorView } from '@codemirror/view';
import { useCallback, useEffect, useId, useRef, useState } from 'react';
import { useSearch } from 'wouter';
import { ApiError, deleteQuery, submitQuery, type QueryInfo } from '../api.ts';
import { useUser } from '../account/session.tsx';
import { PageTitle } from '../lib/PageTitle.tsx';
import { toApiError } from '../lib/useResource.ts';
import { SchemaCache } from './completion.ts';
import { clearError, createEditor, markError, replaceText, runTarget } from './editor.ts';
import { QueryHistory } from './QueryHistory.tsx';
import { ResultGrid } from './ResultGrid.tsx';
import { QueryError, cancelQuery, newQueryId, queryCsv, saveFile, streamQuery, type Field, type Outcome, type Row } from './run.ts';
import { SqlError } from './SqlError.tsx';
import { count, elapsed, resultCsv } from './stored.ts';
import { StoredResult } from './StoredResult.tsx';
import { useQueryHistory } from './useQueryHistory.ts';
import { offsetOfPosition } from './statements.ts';
import './sql.css';

type RunState =
  | { status: 'idle' }
  | { status: 'running'; kind: Kind }
  | { status: 'submitted' }
  | { status: 'done'; outcome: Outcome; ms: number }
  | { status: 'saved'; ms: number }
  | { status: 'failed'; error: QueryError | ApiError; where: { line: number; column: number } | null; ms: number }
  | { status: 'cancelled'; ms: number };

interface Running {
  id: string;
  controller: AbortController;
  /** Cancel was pressed: however the request ends now, it was cancelled. */
  cancelled: boolean;
}

const isMac = typeof navigator !== 'undefined' && /Mac|iPhone|iPad/.test(navigator.platform);
/** Commands after which the tables, columns or repos may have changed. */
const READS_OR_WRITES_ROWS = /^(SELECT|INSERT|UPDATE|DELETE|MERGE|SHOW|EXPLAIN|FETCH|MOVE|VALUES|SET|RESET|BEGIN|COMMIT|ROLLBACK|DISCARD|LISTEN|NOTIFY)\b/;

/** What a start does with the statement: run it here, download it as CSV, or send it to run in the background. */
type Kind = 'run' | 'csv' | 'background';

function summary(state: RunState, rows: number): string {
  switch (state.status) {
    case 'idle':
      return '';
    case 'running':
      return state.kind === 'csv' ? 'Preparing the CSV file…' : state.kind === 'background' ? 'Sending…' : 'Running…';
    case 'submitted':
      return 'Sent to run in the background: it is in the History.';
    case 'saved':
      return `CSV file saved in ${elapsed(state.ms)}.`;
    case 'cancelled':
      return `Cancelled after ${elapsed(state.ms)}.`;
    case 'failed':
      return `Failed after ${elapsed(state.ms)}.`;
    case 'done': {
      const { command, rowCount, truncated } = state.outcome;
      const time = elapsed(state.ms);
      if (truncated) return `First ${count(rows, 'row', 'rows')} (the server's row limit) in ${time}.`;
      if (command === 'SELECT' || command === null) return `${count(rowCount ?? rows, 'row', 'rows')} in ${time}.`;
      if (rowCount !== null) return `${command}: ${count(rowCount, 'row', 'rows')} in ${time}.`;
      return `${command} in ${time}.`;
    }
  }
}

function csvName(): string {
  const d = new Date();
  const two = (n: number) => String(n).padStart(2, '0');
  return `query-${d.getFullYear()}${two(d.getMonth() + 1)}${two(d.getDate())}-${two(d.getHours())}${two(d.getMinutes())}${two(d.getSeconds())}.csv`;
}

export default function SqlEditorPage() {
  const user = useUser();
  const id = useId();
  const search = useSearch();
  const host = useRef<HTMLDivElement>(null);
  const view = useRef<EditorView | null>(null);
  const cache = useRef(new SchemaCache());
  const running = useRef<Running | null>(null);
  const rows = useRef<Row[]>([]);
  const frame = useRef(0);
  const runButton = useRef<HTMLButtonElement>(null);

  const [state, setState] = useState<RunState>({ status: 'idle' });
  const [fields, setFields] = useState<Field[] | null>(null);
  const [version, setVersion] = useState(0);
  const history = useQueryHistory();
  /** The query opened from the History (shown in the results' place), as last seen. */
  const [opened, setOpened] = useState<QueryInfo | null>(null);
  const [notice, setNotice] = useState('');
  const busy = state.status === 'running';

  const showRows = useCallback(() => {
    cancelAnimationFrame(frame.current);
    frame.current = 0;
    setVersion((v) => v + 1);
  }, []);

  /** Rows arrive in many small batches: the grid is redrawn at most once a frame. */
  const rowsArrived = useCallback((batch: Row[]) => {
    const all = rows.current;
    for (const row of batch) all.push(row);
    if (frame.current === 0) frame.current = requestAnimationFrame(showRows);
  }, [showRows]);

  /** Starts one request for what Run would run; `kind` says what to do with it. */
  const start = useCallback(
    async (kind: Kind) => {
      const editor = view.current;
      if (!editor || running.current) return;
      const target = runTarget(editor);
      if (!target) {
        setNotice('There is nothing to run: write a statement first.');
        editor.focus();
        return;
      }
      setNotice('');
      clearError(editor);
      const current: Running = { id: newQueryId(), controller: new AbortController(), cancelled: false };
      running.current = current;
      const docAtStart = editor.state.doc;
      const began = performance.now();
      setState({ status: 'running', kind });
      if (kind !== 'csv') setOpened(null);
      if (kind === 'run') {
        rows.current = [];
        setFields(null);
        showRows();
      }
      try {
        if (kind === 'background') {
          const sent = await submitQuery(target.text);
          setState({ status: 'submitted' });
          setOpened({ ...sent, async: true, query_truncated: false, started_at: null, finished_at: null, row_count: null, command: null, rows_stored: 0, result_expires_at: null, fields: null, error: null });
        } else if (kind === 'csv') {
          saveFile(await queryCsv(target.text, current.id, current.controller.signal), csvName());
          setState({ status: 'saved', ms: performance.now() - began });
        } else {
          const outcome = await streamQuery(target.text, current.id, current.controller.signal, { onFields: setFields, onRows: rowsArrived });
          if (outcome.command && !READS_OR_WRITES_ROWS.test(outcome.command)) cache.current.clear();
          setState({ status: 'done', outcome, ms: performance.now() - began });
        }
      } catch (err) {
        const ms = performance.now() - began;
        if (current.cancelled || current.controller.signal.aborted) {
          setState({ status: 'cancelled', ms });
        } else {
          const error = err instanceof QueryError ? err : toApiError(err);
          let where: { line: number; column: number } | null = null;
          // Mark the spot, unless the text was edited while the statement ran.
          if (error instanceof QueryError && error.position !== null && editor.state.doc === docAtStart) {
            const offset = target.from + offsetOfPosition(target.text, error.position);
            markError(editor, offset);
            const line = editor.state.doc.lineAt(Math.min(offset, editor.state.doc.length));
            where = { line: line.number, column: offset - line.from + 1 };
            editor.focus();
          }
          setState({ status: 'failed', error, where, ms });
        }
      } finally {
        running.current = null;
        if (kind === 'run') showRows();
        history.refresh();
      }
    },
    [user, showRows, rowsArrived, history.refresh],
  );

  const run = useCallback(() => void start('run'), [start]);
  /** What Mod-Enter calls: the editor is made once, the page's `run` may change. */
  const runLatest = useRef(run);
  useEffect(() => {
    runLatest.current = run;
  }, [run]);

  /**
   * Asks the server to cancel, then drops the request: either alone stops the statement, and
   * dropping it only after the server's answer (or a second at most) lets that answer arrive.
   */
  const cancel = useCallback(() => {
    const current = running.current;
    if (!current || current.cancelled) return;
    current.cancelled = true;
    const abort = () => current.controller.abort();
    const timer = setTimeout(abort, 1000);
    void cancelQuery(current.id).finally(() => {
      clearTimeout(timer);
      abort();
    });
  }, []);

  useEffect(() => {
    if (!host.current) return;
    const initial = new URLSearchParams(search).get('q') ?? '';
    const editor = createEditor({ doc: initial, parent: host.current, cache: cache.current, onRun: () => runLatest.current(), describedBy: `${id}-keys` });
    view.current = editor;
    return () => {
      editor.destroy();
      view.current = null;
    };
    // The editor is made once; a later ?q= does not replace what the person wrote.
  }, []);

  // Leaving the page stops what still runs.
  useEffect(() => () => running.current?.controller.abort(), []);

  /** Puts `statement` in the editor and runs it the way `kind` says. */
  function runAgain(statement: string, kind: Kind) {
    const editor = view.current;
    if (!editor || running.current) return;
    replaceText(editor, statement);
    void start(kind);
  }

  async function download(q: QueryInfo) {
    setNotice('');
    try {
      saveFile(await resultCsv(q.id), csvName());
    } catch (err) {
      setNotice(`The CSV file could not be made: ${err instanceof Error ? err.message : String(err)}`);
    }
  }

  async function cancelStored(q: QueryInfo) {
    try {
      const state = await deleteQuery(q.id);
      if (state && opened?.id === q.id) setOpened(state);
    } catch (err) {
      setNotice(`The query could not be cancelled: ${err instanceof Error ? err.message : String(err)}`);
    }
    history.refresh();
  }

  // The opened query as the History last read it (it polls while queries run).
  const shown = (opened && history.queries?.find((q) => q.id === opened.id)) ?? opened;
  const failed = state.status === 'failed' ? state : null;
  const rowCount = rows.current.length;

  return (
    <div className="sql-page">
      <PageTitle title="SQL" />
      <div className="sql-layout">
        <div className="sql-main">
          <div className="sql-editor" ref={host} />
          <p className="field-hint sql-keys" id={`${id}-keys`}>
            {isMac ? '⌘' : 'Ctrl'}+Enter runs the selection, or the statement at the cursor. Ctrl+Space completes repos, tables and columns. Tab leaves the editor.
          </p>
          <div className="sql-toolbar">
            <button type="button" ref={runButton} className="button button-primary" aria-disabled={busy} onClick={run}>
              Run
            </button>
            <button type="button" className="button" aria-disabled={!busy} onClick={cancel}>
              Cancel
            </button>
            <button type="button" className="button" aria-disabled={busy} onClick={() => void start('csv')}>
              Download CSV
            </button>
            <button type="button" className="button" aria-disabled={busy} onClick={() => void start('background')}>
              Run in background
            </button>
            <span className="sql-status">
              <span role="status">{notice || summary(state, rowCount)}</span>
              {busy && state.kind === 'run' && rowCount > 0 && <span className="muted"> {count(rowCount, 'row', 'rows')} so far</span>}
            </span>
          </div>
          {failed && <SqlError error={failed.error} where={failed.where} />}
          {shown ? (
            <StoredResult query={shown} />
          ) : (
            <section className="sql-results" aria-labelledby={`${id}-results`}>
              <h2 id={`${id}-results`} className="visually-hidden">
                Results
              </h2>
              {fields && fields.length > 0 && <ResultGrid fields={fields} rows={rows.current} version={version} labelledBy={`${id}-results`} />}
            </section>
          )}
        </div>
        <QueryHistory
          queries={history.queries}
          error={history.error}
          opened={shown?.id ?? null}
          onOpen={(q) => {
            setState({ status: 'idle' });
            setOpened(q);
          }}
          onRerun={(q) => runAgain(q.query_string, q.async ? 'background' : 'run')}
          onDownload={(q) => void download(q)}
          onCancel={(q) => void cancelStored(q)}
          onRefresh={history.refresh}
        />
      </div>
    </div>
  );
}

/**
 * The rows of the grid, a page at a time as the person scrolls. Pages follow each other by
 * keyset — on the primary key, or on ctid for a table without one — so the ten-millionth row
 * costs what the first does; never a growing OFFSET. A relation with neither (a view) shows its
 * first rows only, and says so.
 *
 * Changing the sort or the filters, a change of the table's columns, or `reload` start again
 * from the top; an answer to a request made before that is dropped.
 */
import { useCallback, useEffect, useRef, useState } from 'react';
import type { ApiError } from '../api.ts';
import { toApiError } from '../lib/useResource.ts';
import type { JsonValue } from './exact-json.ts';
import { runQuery, type Field, type Row } from './query.ts';
import { selectFirstRows, selectPage, tidLiteral, type Cursor, type Filter, type Order, type TableRef } from './statements.ts';
import { kindOfType, literalOf, textOf, type ValueKind } from './values.ts';

export const PAGE_SIZE = 100;
/** Rows shown of a relation that has neither a primary key nor a ctid. */
export const FIRST_ROWS = 1000;

export interface GridColumn {
  name: string;
  type: string;
  kind: ValueKind;
}

export interface GridRow {
  /** Unique among the loaded rows: the key's text form, or the ctid. */
  id: string;
  values: JsonValue[];
  /** Added on this page (shown first, wherever its key would sort). */
  added?: boolean;
}

export type Paging = 'pk' | 'ctid' | 'first';

export interface RowsState {
  columns: GridColumn[] | null;
  rows: GridRow[];
  loading: boolean;
  done: boolean;
  error: ApiError | null;
  paging: Paging;
  /** Increases each time the rows start again from the top. */
  generation: number;
}

export interface RowsOptions {
  table: TableRef;
  pk: string[];
  sort: Order['sort'];
  filters: Filter[];
  /** Changes when the table's columns change: the rows start again. */
  shape: string;
}

export interface Rows extends RowsState {
  loadMore(): void;
  reload(): void;
  /** Puts the row as Postgres returned it (UPDATE … RETURNING *) in place of the row `id`. */
  replaceRow(id: string, values: Row): void;
  removeRows(ids: ReadonlySet<string>): void;
  addRow(values: Row): void;
  /** Literals of a row's primary key, for UPDATE and DELETE. */
  keyLiterals(row: GridRow): string[];
}

const columnsOf = (fields: Field[]): GridColumn[] => fields.map((f) => ({ name: f.name, type: f.type, kind: kindOfType(f.type) }));
const shapeOf = (columns: GridColumn[]) => JSON.stringify(columns.map((c) => [c.name, c.type]));

export function useRows({ table, pk, sort, filters, shape }: RowsOptions): Rows {
  const [state, setState] = useState<RowsState>(() => ({
    columns: null,
    rows: [],
    loading: false,
    done: false,
    error: null,
    paging: pk.length ? 'pk' : 'ctid',
    generation: 0,
  }));
  const [restart, setRestart] = useState(0);
  // What the next request needs, kept out of render so a scroll never waits for one.
  const live = useRef({
    ticket: 0,
    loading: false,
    done: false,
    failed: false,
    cursor: null as Cursor | null,
    ids: new Set<string>(),
    columns: null as GridColumn[] | null,
    paging: (pk.length ? 'pk' : 'ctid') as Paging,
    noCtid: false,
    serial: 0,
    abort: null as AbortController | null,
  });
  const options = useRef({ table, pk, sort, filters });
  options.current = { table, pk, sort, filters };

  const idOf = useCallback((values: Row, columns: GridColumn[], paging: Paging, ctid: string | null): string => {
    const l = live.current;
    if (paging === 'ctid') return ctid ?? `row ${++l.serial}`;
    if (paging === 'first') return `row ${++l.serial}`;
    const texts = options.current.pk.map((name) => {
      const i = columns.findIndex((c) => c.name === name);
      return i < 0 ? null : textOf(values[i], (columns[i] as GridColumn).kind);
    });
    return JSON.stringify(texts);
  }, []);

  const filtersKey = JSON.stringify(filters);
  const sortKey = JSON.stringify(sort);
  const pkKey = JSON.stringify(pk);

  // Start again from the top (not on mount: nothing was loaded yet).
  const resetKey = JSON.stringify([table.schema, table.table, pkKey, sortKey, filtersKey, shape, restart]);
  const lastReset = useRef(resetKey);
  useEffect(() => {
    if (lastReset.current === resetKey) return;
    lastReset.current = resetKey;
    const l = live.current;
    l.abort?.abort();
    l.abort = null;
    l.ticket++;
    l.loading = false;
    l.done = false;
    l.failed = false;
    l.cursor = null;
    l.ids = new Set();
    l.paging = pk.length ? 'pk' : l.noCtid ? 'first' : 'ctid';
    setState((s) => ({ columns: s.columns, rows: [], loading: false, done: false, error: null, paging: l.paging, generation: s.generation + 1 }));
  }, [resetKey, pk.length]);

  useEffect(
    () => () => {
      // Leaving (or StrictMode's trial unmount): drop the request; a remount asks again.
      const l = live.current;
      l.abort?.abort();
      l.abort = null;
      l.loading = false;
      l.ticket++;
    },
    [],
  );

  const loadMore = useCallback(() => {
    const l = live.current;
    if (l.loading || l.done || l.failed) return;
    const { table: t, pk: keyColumns, sort: by, filters: where } = options.current;
    const paging = l.paging;
    const order: Order = { key: paging === 'ctid' ? 'ctid' : keyColumns, sort: by };
    const sql = paging === 'first' ? selectFirstRows(t, by, where, FIRST_ROWS) : selectPage(t, order, where, l.cursor, PAGE_SIZE);
    const ticket = l.ticket;
    const controller = new AbortController();
    l.loading = true;
    l.abort = controller;
    setState((s) => ({ ...s, loading: true, error: null }));
    runQuery(sql, controller.signal).then(
      (answer) => {
        if (ticket !== l.ticket) return;
        l.loading = false;
        l.abort = null;
        const fields = paging === 'ctid' ? answer.fields.slice(1) : answer.fields;
        const columns = columnsOf(fields);
        if (l.cursor !== null && l.columns && shapeOf(l.columns) !== shapeOf(columns)) {
          // The table changed between two pages: its rows no longer line up. Start again.
          l.columns = columns;
          setRestart((r) => r + 1);
          return;
        }
        l.columns = columns;
        const fresh: GridRow[] = [];
        for (const raw of answer.rows) {
          const ctid = paging === 'ctid' ? (typeof raw[0] === 'string' ? raw[0] : null) : null;
          const values = paging === 'ctid' ? raw.slice(1) : raw;
          const id = idOf(values, columns, paging, ctid);
          if (l.ids.has(id)) continue;
          l.ids.add(id);
          fresh.push({ id, values });
        }
        const last = answer.rows.at(-1);
        if (last) l.cursor = cursorOf(last, columns, paging, keyColumns, by);
        l.done = paging === 'first' || answer.rows.length < PAGE_SIZE;
        setState((s) => ({ ...s, columns, rows: s.rows.concat(fresh), loading: false, done: l.done, error: null, paging }));
      },
      (err: unknown) => {
        if (ticket !== l.ticket || controller.signal.aborted) return;
        l.loading = false;
        l.abort = null;
        const error = toApiError(err);
        if (paging === 'ctid' && error.code === '42703' && error.message.includes('ctid')) {
          // A view (or a foreign table) has no ctid: show its first rows instead.
          l.noCtid = true;
          l.paging = 'first';
          setState((s) => ({ ...s, paging: 'first' }));
          loadMore();
          return;
        }
        l.failed = true;
        setState((s) => ({ ...s, loading: false, error }));
      },
    );
  }, [idOf]);

  const reload = useCallback(() => setRestart((r) => r + 1), []);

  const replaceRow = useCallback(
    (id: string, values: Row) => {
      const l = live.current;
      setState((s) => {
        if (!s.columns) return s;
        const newId = idOf(values, s.columns, s.paging, null);
        l.ids.delete(id);
        l.ids.add(newId);
        return { ...s, rows: s.rows.map((r) => (r.id === id ? { ...r, id: newId, values } : r)) };
      });
    },
    [idOf],
  );

  const removeRows = useCallback((ids: ReadonlySet<string>) => {
    // The ids stay known: a deleted row must not come back from a page fetched before the delete.
    setState((s) => ({ ...s, rows: s.rows.filter((r) => !ids.has(r.id)) }));
  }, []);

  const addRow = useCallback(
    (values: Row) => {
      const l = live.current;
      setState((s) => {
        if (!s.columns) return s;
        const id = idOf(values, s.columns, s.paging, null);
        l.ids.add(id);
        return { ...s, rows: [{ id, values, added: true }, ...s.rows.filter((r) => r.id !== id)] };
      });
    },
    [idOf],
  );

  const keyLiterals = useCallback(
    (row: GridRow): string[] =>
      options.current.pk.map((name) => {
        const columns = live.current.columns ?? [];
        const i = columns.findIndex((c) => c.name === name);
        return literalOf(row.values[i], columns[i]?.kind ?? 'text');
      }),
    [],
  );

  return { ...state, loadMore, reload, replaceRow, removeRows, addRow, keyLiterals };
}

/** The cursor after `row`: literals of its key (or its ctid) and of its sort value. */
function cursorOf(raw: Row, columns: GridColumn[], paging: Paging, pk: string[], sort: Order['sort']): Cursor {
  const values = paging === 'ctid' ? raw.slice(1) : raw;
  const literal = (name: string): string => {
    const i = columns.findIndex((c) => c.name === name);
    return literalOf(values[i], columns[i]?.kind ?? 'text');
  };
  const key = paging === 'ctid' ? [tidLiteral(typeof raw[0] === 'string' ? raw[0] : '(0,0)')] : pk.map(literal);
  let sortValue: string | null = null;
  if (sort) {
    const v = literal(sort.column);
    sortValue = v === 'NULL' ? null : v;
  }
  return { key, sort: sortValue };
}

import type { RowSelectionState } from '@tanstack/react-table';
import { useEffect, useId, useMemo, useRef, useState } from 'react';
import { Link } from 'wouter';
import { ApiError, type Access } from '../api.ts';
import { ErrorMessage } from '../lib/ErrorMessage.tsx';
import { PageTitle } from '../lib/PageTitle.tsx';
import { toApiError } from '../lib/useResource.ts';
import { repoHref } from '../repos/paths.ts';
import { ChangeTypeDialog } from './ChangeTypeDialog.tsx';
import { AddColumnDialog, DeleteColumnDialog, RenameColumnDialog } from './ColumnDialogs.tsx';
import { ColumnMenu, type ColumnAction } from './ColumnMenu.tsx';
import { DataGrid, type CellRef } from './DataGrid.tsx';
import type { FilterDraft } from './GridHeader.tsx';
import type { TableInfo } from './meta.ts';
import { runQuery } from './query.ts';
import { AddRowDialog, DeleteRowsDialog } from './RowDialogs.tsx';
import { filterCondition, updateCell, type Filter, type Order, type TableRef } from './statements.ts';
import { TableSummary } from './TableSummary.tsx';
import { FIRST_ROWS, useRows, type GridColumn } from './useRows.ts';
import { ValueDialog } from './ValueDialog.tsx';
import { kindOfType, literalOfText } from './values.ts';

type DialogState = { kind: 'add-column' } | { kind: ColumnAction; column: string; type: string } | { kind: 'add-row' } | { kind: 'delete-rows' } | null;

interface TableViewProps {
  owner: string;
  repo: string;
  info: TableInfo;
  permission: Access;
  reloadMeta(): void;
}

/** The table page once its metadata is known (TablePage loads it and follows its changes). */
export function TableView({ owner, repo, info, permission, reloadMeta }: TableViewProps) {
  const id = useId();
  const fullName = `${owner}/${repo}`;
  const target: TableRef = useMemo(() => ({ schema: fullName, table: info.name }), [fullName, info.name]);
  const pkKey = JSON.stringify(info.primary_key ?? []);
  const pk: string[] = useMemo(() => JSON.parse(pkKey) as string[], [pkKey]);
  const shape = JSON.stringify(info.columns.map((c) => [c.name, c.type]));
  const metaColumns: GridColumn[] = useMemo(() => info.columns.map((c) => ({ name: c.name, type: c.type, kind: kindOfType(c.type) })), [shape]);

  const [sort, setSort] = useState<Order['sort']>(null);
  const [drafts, setDrafts] = useState<Record<string, FilterDraft>>({});
  const filters: Filter[] = useMemo(
    () => Object.entries(drafts).map(([column, d]) => ({ column, ...d })).filter((f) => filterCondition(f) !== null),
    [drafts],
  );
  const rows = useRows({ table: target, pk, sort, filters, shape });
  const [selection, setSelection] = useState<RowSelectionState>({});
  const [dialog, setDialog] = useState<DialogState>(null);
  const [viewing, setViewing] = useState<CellRef | null>(null);
  const [notice, setNotice] = useState('');
  const returnTo = useRef<HTMLElement | null>(null);
  const refreshButton = useRef<HTMLButtonElement>(null);

  // Columns renamed or dropped (here or elsewhere): forget their sort and filters.
  useEffect(() => {
    const names = new Set(info.columns.map((c) => c.name));
    setSort((s) => (s && !names.has(s.column) ? null : s));
    setDrafts((d) => {
      const kept = Object.fromEntries(Object.entries(d).filter(([name]) => names.has(name)));
      return Object.keys(kept).length === Object.keys(d).length ? d : kept;
    });
  }, [shape]);

  useEffect(() => setSelection({}), [rows.generation]);

  const canWrite = permission === 'own' || permission === 'write';
  const canAlter = permission === 'own';
  const editable = canWrite && pk.length > 0 && rows.paging === 'pk';
  const readOnlyReason = !canWrite
    ? 'Read-only: you can read this repo; changing rows needs write access.'
    : pk.length === 0
      ? 'Read-only: this table has no primary key, so a changed row could not be found again by its key.'
      : null;
  const columns = rows.columns && (rows.rows.length > 0 || rows.done) ? rows.columns : metaColumns;
  const selectedRows = rows.rows.filter((r) => selection[r.id]);

  function sortBy(column: string) {
    setSort((s) => (s?.column !== column ? { column, desc: false } : !s.desc ? { column, desc: true } : null));
  }

  async function saveCell(cell: CellRef, text: string | null): Promise<ApiError | null> {
    const sql = updateCell(target, cell.column.name, literalOfText(text), pk, rows.keyLiterals(cell.row));
    try {
      const answer = await runQuery(sql);
      const updated = answer.rows[0];
      if (!updated) return new ApiError(0, '', 'No row has this key any more: someone may have changed or deleted it.', 'Refresh to see the rows as they are now.');
      rows.replaceRow(cell.row.id, updated);
      setNotice(`Saved ${cell.column.name} in row ${cell.rowNumber}.`);
      return null;
    } catch (err) {
      return toApiError(err);
    }
  }

  function columnDone(message: string) {
    setDialog(null);
    setNotice(message);
    reloadMeta();
  }

  const columnProps = {
    target,
    onDone: columnDone,
    onClose: () => setDialog(null),
    returnFocus: () => (returnTo.current?.isConnected ? returnTo.current : refreshButton.current),
    fallbackFocus: () => refreshButton.current,
  };

  return (
    <div className="table-page">
      <p className="crumbs">
        <Link href={repoHref(owner, repo)}>{fullName}</Link>
      </p>
      <PageTitle title={info.name} />
      <TableSummary target={target} info={info} />

      <div className="grid-toolbar">
        <button
          ref={refreshButton}
          type="button"
          className="button button-small"
          onClick={() => {
            setNotice('');
            rows.reload();
            reloadMeta();
          }}
        >
          Refresh
        </button>
        {editable && (
          <>
            <button type="button" className="button button-small" onClick={() => setDialog({ kind: 'add-row' })}>
              Add row
            </button>
            <button type="button" className="button button-small button-danger-quiet" disabled={selectedRows.length === 0} onClick={() => setDialog({ kind: 'delete-rows' })}>
              Delete rows
            </button>
            <span className="muted toolbar-note">{selectedRows.length ? `${selectedRows.length} selected` : ''}</span>
          </>
        )}
        {canAlter && (
          <button
            type="button"
            className="button button-small toolbar-end"
            onClick={(e) => {
              returnTo.current = e.currentTarget;
              setDialog({ kind: 'add-column' });
            }}
          >
            Add column
          </button>
        )}
      </div>
      {readOnlyReason && <p className="muted readonly-note">{readOnlyReason}</p>}
      {rows.paging === 'first' && (
        <p className="muted readonly-note">This relation has neither a primary key nor row addresses (a view?): showing its first {FIRST_ROWS.toLocaleString()} rows.</p>
      )}
      <p role="status" className="form-status grid-notice">
        {notice}
      </p>
      <ErrorMessage error={rows.error} />

      <p className="muted grid-help" id={`${id}-help`}>
        {rows.rows.length.toLocaleString()} {rows.rows.length === 1 ? 'row' : 'rows'} loaded{rows.done ? '' : ', more as you scroll'}. Arrow keys move between cells;{' '}
        {editable ? 'Enter edits a cell, Shift+Enter shows its whole value.' : 'Enter shows a cell’s whole value.'}
      </p>
      <DataGrid
        label={`Rows of ${info.name}`}
        describedBy={`${id}-help`}
        columns={columns}
        rows={rows}
        pk={pk}
        sort={sort}
        onSort={sortBy}
        filters={drafts}
        onFilter={(column, draft) => setDrafts((d) => ({ ...d, [column]: draft }))}
        editable={editable}
        nullable={(name) => info.columns.find((c) => c.name === name)?.nullable !== false}
        selection={selection}
        onSelectionChange={setSelection}
        onSave={saveCell}
        onView={setViewing}
        columnMenu={
          canAlter
            ? (column) => (
                <ColumnMenu
                  column={column.name}
                  onAction={(kind, trigger) => {
                    returnTo.current = trigger;
                    setDialog({ kind, column: column.name, type: info.columns.find((c) => c.name === column.name)?.type ?? column.type });
                  }}
                />
              )
            : undefined
        }
      />

      {viewing && <ValueDialog cell={viewing} onClose={() => setViewing(null)} />}
      {dialog?.kind === 'add-column' && <AddColumnDialog {...columnProps} />}
      {dialog?.kind === 'rename' && <RenameColumnDialog {...columnProps} column={dialog.column} />}
      {dialog?.kind === 'retype' && <ChangeTypeDialog {...columnProps} column={dialog.column} currentType={dialog.type} />}
      {dialog?.kind === 'drop' && <DeleteColumnDialog {...columnProps} returnFocus={() => refreshButton.current} column={dialog.column} />}
      {dialog?.kind === 'add-row' && (
        <AddRowDialog
          target={target}
          columns={info.columns}
          onClose={() => setDialog(null)}
          onAdded={(row) => {
            setDialog(null);
            if (row) rows.addRow(row);
            setNotice('Added 1 row; it is shown first.');
          }}
        />
      )}
      {dialog?.kind === 'delete-rows' && (
        <DeleteRowsDialog
          target={target}
          pk={pk}
          keys={selectedRows.map((r) => rows.keyLiterals(r))}
          onClose={() => setDialog(null)}
          fallbackFocus={() => refreshButton.current}
          onDeleted={(count) => {
            setDialog(null);
            rows.removeRows(new Set(selectedRows.map((r) => r.id)));
            setSelection({});
            const n = count ?? selectedRows.length;
            setNotice(n === selectedRows.length ? `Deleted ${n} ${n === 1 ? 'row' : 'rows'}.` : `Deleted ${n} of ${selectedRows.length} rows: the others were already gone.`);
          }}
        />
      )}
    </div>
  );
}

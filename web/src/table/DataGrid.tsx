/**
 * The rows of a table as an ARIA grid built on a real <table>: headers named by their column,
 * only the rows in view in the DOM (react-virtual), the next page asked for as the end comes
 * near. One cell is in the tab order; the arrow keys, Home/End, Page Up/Down move between cells,
 * Enter (or a double-click) edits a cell when the table can be edited, Shift+Enter shows a
 * cell's whole value.
 */
import { getCoreRowModel, useReactTable, type ColumnDef, type OnChangeFn, type RowSelectionState } from '@tanstack/react-table';
import { useVirtualizer } from '@tanstack/react-virtual';
import { useEffect, useLayoutEffect, useMemo, useRef, useState, type KeyboardEvent, type ReactNode } from 'react';
import type { ApiError } from '../api.ts';
import { CellEditor, CellValue, isCut } from './GridCells.tsx';
import { FilterCell, HeaderCell, type FilterDraft } from './GridHeader.tsx';
import type { Order } from './statements.ts';
import type { GridColumn, GridRow, Rows } from './useRows.ts';
import { textOf } from './values.ts';

const ROW_HEIGHT = 36;
const SELECT_ID = '__select';
/** Header rows before the first data row (names, filters): for aria-rowindex. */
const HEAD_ROWS = 2;

export interface CellRef {
  row: GridRow;
  /** 1-based, in the order shown. */
  rowNumber: number;
  column: GridColumn;
  /** The column's position among the row's values. */
  index: number;
}

interface DataGridProps {
  label: string;
  /** Id of the text that says how to use the grid. */
  describedBy?: string;
  columns: GridColumn[];
  rows: Rows;
  pk: string[];
  sort: Order['sort'];
  onSort(column: string): void;
  filters: Record<string, FilterDraft>;
  onFilter(column: string, draft: FilterDraft): void;
  /** Rows can be selected and cells edited. */
  editable: boolean;
  nullable(column: string): boolean;
  selection: RowSelectionState;
  onSelectionChange: OnChangeFn<RowSelectionState>;
  onSave(cell: CellRef, text: string | null): Promise<ApiError | null>;
  onView(cell: CellRef): void;
  /** The owner's menu of a column header. */
  columnMenu?(column: GridColumn): ReactNode;
}

function widthOf(c: GridColumn): number {
  const base =
    c.kind === 'number' ? 140 : c.kind === 'bool' ? 110 : c.kind === 'json' ? 260 : /^(DATE|TIME|TIMESTAMP|INTERVAL)/.test(c.type) ? 200 : 220;
  // Room for the name and the header's buttons, up to a point.
  return Math.max(base, Math.min(360, c.name.length * 8 + 76));
}

const clamp = (n: number, low: number, high: number) => Math.max(low, Math.min(high, n));

export function DataGrid(props: DataGridProps) {
  const { columns, rows, editable, selection } = props;
  const scrollRef = useRef<HTMLDivElement>(null);
  const headRef = useRef<HTMLTableSectionElement>(null);
  const allBox = useRef<HTMLInputElement>(null);
  const [headHeight, setHeadHeight] = useState(88);
  const [active, setActive] = useState({ r: 0, c: editable ? 1 : 0 });
  const [editing, setEditing] = useState<{ rowId: string; c: number } | null>(null);
  const pendingFocus = useRef(0);

  const defs = useMemo<ColumnDef<GridRow>[]>(() => {
    const list: ColumnDef<GridRow>[] = columns.map((c, i) => ({ id: `c${i}`, accessorFn: (r: GridRow) => r.values[i], size: widthOf(c) }));
    if (editable) list.unshift({ id: SELECT_ID, size: 48 });
    return list;
  }, [columns, editable]);

  const table = useReactTable({
    data: rows.rows,
    columns: defs,
    getCoreRowModel: getCoreRowModel(),
    getRowId: (r) => r.id,
    state: { rowSelection: selection },
    onRowSelectionChange: props.onSelectionChange,
    enableRowSelection: editable,
    manualSorting: true,
    manualFiltering: true,
  });
  const modelRows = table.getRowModel().rows;
  const leaves = table.getVisibleLeafColumns();
  const colCount = leaves.length;
  const firstData = editable ? 1 : 0;
  const totalWidth = leaves.reduce((sum, c) => sum + c.getSize(), 0);
  const tail = !rows.done || rows.error || modelRows.length === 0 ? 1 : 0;

  const virtualizer = useVirtualizer({
    count: modelRows.length + tail,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 15,
    paddingStart: headHeight,
    scrollPaddingStart: headHeight,
    useFlushSync: false,
  });
  const items = virtualizer.getVirtualItems();
  const firstItem = items[0];
  const lastItem = items.at(-1);
  const padTop = firstItem ? firstItem.start - headHeight : 0;
  const padBottom = lastItem ? virtualizer.getTotalSize() - lastItem.end : 0;
  const lastIndex = lastItem?.index ?? 0;

  useLayoutEffect(() => {
    const h = headRef.current?.offsetHeight;
    if (h && h !== headHeight) setHeadHeight(h);
  });

  // Ask for the next page when the end of what is loaded comes into view.
  useEffect(() => {
    if (!rows.done && !rows.loading && !rows.error && lastIndex >= modelRows.length - 30) rows.loadMore();
  }, [lastIndex, modelRows.length, rows.done, rows.loading, rows.error, rows.generation, rows.loadMore]);

  // The rows started again from the top.
  useEffect(() => {
    scrollRef.current?.scrollTo({ top: 0 });
    setActive((a) => ({ r: 0, c: a.c }));
    setEditing(null);
  }, [rows.generation]);

  useEffect(() => {
    if (allBox.current) allBox.current.indeterminate = table.getIsSomeRowsSelected();
  });

  const r = clamp(active.r, 0, Math.max(0, modelRows.length - 1));
  const c = clamp(active.c, 0, colCount - 1);
  const activeShown = items.some((i) => i.index === r);
  // The one cell in the tab order: the active one, or the first in view when it is scrolled away.
  const tabRow = activeShown ? r : (firstItem?.index ?? 0);

  const cellElement = (row: number, col: number) => scrollRef.current?.querySelector<HTMLElement>(`[data-cell="${row}:${col}"]`) ?? null;

  // Focus a cell that was moved to before it was rendered.
  useLayoutEffect(() => {
    if (!pendingFocus.current) return;
    if (Date.now() - pendingFocus.current > 1500) {
      pendingFocus.current = 0;
      return;
    }
    const el = cellElement(r, c);
    if (el) {
      pendingFocus.current = 0;
      el.focus();
    }
  });

  function move(row: number, col: number) {
    const nr = clamp(row, 0, Math.max(0, modelRows.length - 1));
    const nc = clamp(col, 0, colCount - 1);
    setActive({ r: nr, c: nc });
    const el = cellElement(nr, nc);
    if (el) {
      el.focus();
    } else {
      pendingFocus.current = Date.now();
      virtualizer.scrollToIndex(nr, { align: 'auto' });
    }
  }

  const cellAt = (row: number, col: number): CellRef | null => {
    const modelRow = modelRows[row];
    const column = columns[col - firstData];
    return modelRow && column ? { row: modelRow.original, rowNumber: row + 1, column, index: col - firstData } : null;
  };

  function startEdit(row: number, col: number) {
    const cell = cellAt(row, col);
    if (!cell) return;
    if (!editable) props.onView(cell);
    else setEditing({ rowId: cell.row.id, c: col });
  }

  function endEdit(refocus: boolean) {
    setEditing(null);
    if (refocus) pendingFocus.current = Date.now();
  }

  function onKeyDown(event: KeyboardEvent<HTMLTableSectionElement>) {
    // A cell's own button (show whole value) keeps its Enter.
    if ((event.target as HTMLElement).tagName === 'BUTTON') return;
    const pageRows = Math.max(1, Math.floor((scrollRef.current?.clientHeight ?? 400) / ROW_HEIGHT) - 3);
    switch (event.key) {
      case 'ArrowDown':
        move(r + 1, c);
        break;
      case 'ArrowUp':
        move(r - 1, c);
        break;
      case 'ArrowRight':
        move(r, c + 1);
        break;
      case 'ArrowLeft':
        move(r, c - 1);
        break;
      case 'Home':
        move(event.ctrlKey ? 0 : r, 0);
        break;
      case 'End':
        move(event.ctrlKey ? modelRows.length - 1 : r, colCount - 1);
        break;
      case 'PageDown':
        move(r + pageRows, c);
        break;
      case 'PageUp':
        move(r - pageRows, c);
        break;
      case 'Enter':
      case 'F2': {
        if (c < firstData) return;
        const cell = cellAt(r, c);
        if (cell && event.shiftKey) props.onView(cell);
        else startEdit(r, c);
        break;
      }
      default:
        return;
    }
    event.preventDefault();
  }

  /** The cell an event happened in: its row and column index. */
  function cellOf(target: EventTarget): { row: number; col: number } | null {
    const el = (target as HTMLElement).closest<HTMLElement>('[data-cell]');
    const [row, col] = (el?.dataset.cell ?? '').split(':').map(Number);
    return row === undefined || col === undefined || Number.isNaN(row) || Number.isNaN(col) ? null : { row, col };
  }

  function onFocus(event: { target: EventTarget }) {
    const at = cellOf(event.target);
    if (at && (at.row !== r || at.col !== c)) setActive({ r: at.row, c: at.col });
  }

  function onDoubleClick(event: { target: EventTarget }) {
    const at = cellOf(event.target);
    if (at && at.col >= firstData) startEdit(at.row, at.col);
  }

  const tailText = rows.error
    ? 'These rows could not be loaded.'
    : rows.loading || !rows.done
      ? 'Loading rows…'
      : Object.values(props.filters).some((f) => f.value !== '' || f.op === 'null' || f.op === 'notnull')
        ? 'No rows match the filters.'
        : 'This table has no rows.';

  return (
    <div className="grid-scroll" ref={scrollRef}>
      <table
        role="grid"
        className="grid"
        aria-label={props.label}
        aria-describedby={props.describedBy}
        aria-rowcount={rows.done ? modelRows.length + HEAD_ROWS : -1}
        aria-colcount={colCount}
        aria-readonly={editable ? undefined : true}
        style={{ width: totalWidth }}
      >
        <colgroup>
          {leaves.map((l) => (
            <col key={l.id} style={{ width: l.getSize() }} />
          ))}
        </colgroup>
        <thead ref={headRef}>
          <tr aria-rowindex={1}>
            {leaves.map((l, i) =>
              l.id === SELECT_ID ? (
                <th key={l.id} scope="col" className="select-col" aria-colindex={i + 1}>
                  <input ref={allBox} type="checkbox" aria-label="Select all loaded rows" checked={table.getIsAllRowsSelected()} onChange={table.getToggleAllRowsSelectedHandler()} />
                </th>
              ) : (
                <HeaderCell
                  key={l.id}
                  column={columns[i - firstData] as GridColumn}
                  colIndex={i + 1}
                  isKey={props.pk.includes((columns[i - firstData] as GridColumn).name)}
                  sort={props.sort}
                  onSort={props.onSort}
                  menu={props.columnMenu?.(columns[i - firstData] as GridColumn)}
                />
              ),
            )}
          </tr>
          <tr aria-rowindex={2} className="filter-row">
            {leaves.map((l, i) => {
              const column = columns[i - firstData];
              return l.id === SELECT_ID || !column ? (
                <td key={l.id} aria-colindex={i + 1} />
              ) : (
                <FilterCell key={`${l.id}:${column.name}`} column={column} colIndex={i + 1} filter={props.filters[column.name]} onChange={props.onFilter} />
              );
            })}
          </tr>
        </thead>
        <tbody onKeyDown={onKeyDown} onFocus={onFocus} onDoubleClick={onDoubleClick}>
          {padTop > 0 && (
            <tr aria-hidden="true" className="grid-spacer">
              <td colSpan={colCount} style={{ height: padTop }} />
            </tr>
          )}
          {items.map((item) => {
            const modelRow = modelRows[item.index];
            if (!modelRow) {
              return (
                <tr key="tail" aria-rowindex={item.index + HEAD_ROWS + 1} className="grid-tail">
                  <td colSpan={colCount} style={{ height: ROW_HEIGHT }}>
                    {tailText}
                  </td>
                </tr>
              );
            }
            const row = modelRow.original;
            const selected = modelRow.getIsSelected();
            return (
              <tr
                key={row.id}
                aria-rowindex={item.index + HEAD_ROWS + 1}
                aria-selected={editable ? selected : undefined}
                className={selected ? 'row-selected' : row.added ? 'row-added' : undefined}
              >
                {leaves.map((l, col) => {
                  const tabIndex = item.index === tabRow && col === c ? 0 : -1;
                  if (l.id === SELECT_ID) {
                    return (
                      <td key={l.id} className="select-col" aria-colindex={col + 1}>
                        <input type="checkbox" data-cell={`${item.index}:${col}`} tabIndex={tabIndex} aria-label={`Select row ${item.index + 1}`} checked={selected} onChange={modelRow.getToggleSelectedHandler()} />
                      </td>
                    );
                  }
                  const column = columns[col - firstData] as GridColumn;
                  const text = textOf(row.values[col - firstData], column.kind);
                  const cell: CellRef = { row, rowNumber: item.index + 1, column, index: col - firstData };
                  const isEditing = editing?.rowId === row.id && editing.c === col;
                  return (
                    <td key={l.id} data-cell={`${item.index}:${col}`} tabIndex={tabIndex} aria-colindex={col + 1} className={column.kind === 'number' ? 'cell num' : 'cell'}>
                      <div className="cell-box">
                        <CellValue text={text} />
                        {isCut(text, column, l.getSize()) && (
                          <button type="button" tabIndex={-1} className="cell-expand" aria-label={`Show whole value of ${column.name} in row ${item.index + 1}`} onClick={() => props.onView(cell)}>
                            <span aria-hidden="true">⤢</span>
                          </button>
                        )}
                      </div>
                      {isEditing && (
                        <CellEditor
                          column={column}
                          rowNumber={item.index + 1}
                          initial={text}
                          nullable={props.nullable(column.name)}
                          onCancel={endEdit}
                          onSave={async (value) => {
                            const failure = await props.onSave(cell, value);
                            if (!failure) endEdit(true);
                            return failure;
                          }}
                        />
                      )}
                    </td>
                  );
                })}
              </tr>
            );
          })}
          {padBottom > 0 && (
            <tr aria-hidden="true" className="grid-spacer">
              <td colSpan={colCount} style={{ height: padBottom }} />
            </tr>
          )}
        </tbody>
      </table>
    </div>
  );
}

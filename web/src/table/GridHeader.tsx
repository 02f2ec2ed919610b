import { useEffect, useRef, useState, type ReactNode } from 'react';
import { FILTER_OPS, type FilterOp, type Order } from './statements.ts';
import type { GridColumn } from './useRows.ts';

/** The draft of one column's filter: applied once it has what its operator needs. */
export interface FilterDraft {
  op: FilterOp;
  value: string;
}

/**
 * A column's header: its name (the header's accessible name), a button that sorts by it, its
 * type, and for the owner a menu of column operations.
 */
export function HeaderCell({
  column,
  colIndex,
  isKey,
  sort,
  onSort,
  menu,
}: {
  column: GridColumn;
  colIndex: number;
  isKey: boolean;
  sort: Order['sort'];
  onSort(column: string): void;
  menu?: ReactNode;
}) {
  const sorted = sort?.column === column.name ? (sort.desc ? 'descending' : 'ascending') : undefined;
  const next = sorted === undefined ? 'ascending' : sorted === 'ascending' ? 'descending' : 'unsorted';
  return (
    <th scope="col" aria-label={column.name} aria-sort={sorted ?? 'none'} aria-colindex={colIndex} className={column.kind === 'number' ? 'col-head num' : 'col-head'}>
      <div className="col-head-row">
        <button type="button" className="col-sort" title={`${column.name}: click to sort ${next}`} onClick={() => onSort(column.name)}>
          <span className="col-name">{column.name}</span>
          <span className="col-sort-mark" aria-hidden="true">
            {sorted === 'ascending' ? '▲' : sorted === 'descending' ? '▼' : ''}
          </span>
        </button>
        {menu}
      </div>
      <div className="col-type" aria-hidden="true">
        {column.type}
        {isKey ? ' · key' : ''}
      </div>
    </th>
  );
}

const DEBOUNCE_MS = 450;

/**
 * The filter of one column: an operator and a value. A typed value applies after a short pause or
 * at Enter; an operator at once.
 */
export function FilterCell({ column, colIndex, filter, onChange }: { column: GridColumn; colIndex: number; filter: FilterDraft | undefined; onChange(column: string, draft: FilterDraft): void }) {
  const [op, setOp] = useState<FilterOp>(filter?.op ?? (column.kind === 'text' || column.kind === 'json' || column.kind === 'array' ? 'contains' : 'eq'));
  const [value, setValue] = useState(filter?.value ?? '');
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  const takesValue = FILTER_OPS.find((o) => o.op === op)?.takesValue ?? true;

  // Cleared from outside (e.g. the column was renamed): show what applies.
  useEffect(() => {
    if (filter === undefined) setValue('');
  }, [filter]);
  useEffect(() => () => clearTimeout(timer.current ?? undefined), []);

  const commit = (draft: FilterDraft) => {
    clearTimeout(timer.current ?? undefined);
    onChange(column.name, draft);
  };

  return (
    <td className="filter-cell" aria-colindex={colIndex}>
      <div className="filter">
        <select
          aria-label={`Filter operator for ${column.name}`}
          value={op}
          onChange={(e) => {
            const next = e.target.value as FilterOp;
            setOp(next);
            commit({ op: next, value });
          }}
        >
          {FILTER_OPS.map((o) => (
            <option key={o.op} value={o.op}>
              {o.label}
            </option>
          ))}
        </select>
        <input
          type="search"
          aria-label={`Filter ${column.name}`}
          value={takesValue ? value : ''}
          disabled={!takesValue}
          autoComplete="off"
          spellCheck={false}
          onChange={(e) => {
            const v = e.target.value;
            setValue(v);
            clearTimeout(timer.current ?? undefined);
            timer.current = setTimeout(() => onChange(column.name, { op, value: v }), DEBOUNCE_MS);
          }}
          onKeyDown={(e) => {
            if (e.key === 'Enter') commit({ op, value: e.currentTarget.value });
          }}
        />
      </div>
    </td>
  );
}

/**
 * The rows of a result as a table with virtualised DOM rows: only the rows in view (and a few
 * around them) exist in the page, so a million rows scroll like ten. Values are text: numbers
 * with the digits the API sent, NULL as a marked "NULL" (the empty string stays empty), jsonb
 * and arrays as their JSON.
 */
import { useVirtualizer } from '@tanstack/react-virtual';
import { useMemo, useRef } from 'react';
import { JsonNumber, stringifyExactJson, type JsonValue } from '../table/exact-json.ts';
import type { Field, Row } from './run.ts';

const ROW_HEIGHT = 32;
const HEADER_HEIGHT = 44;
/** Rows looked at to size the columns. */
const SAMPLE_ROWS = 100;

interface Cell {
  text: string;
  kind: 'null' | 'number' | 'bool' | 'json' | 'text';
}

export function cellOf(value: JsonValue | undefined): Cell {
  if (value === null || value === undefined) return { text: 'NULL', kind: 'null' };
  if (value instanceof JsonNumber) return { text: value.text, kind: 'number' };
  if (typeof value === 'boolean') return { text: String(value), kind: 'bool' };
  if (typeof value === 'string') return { text: value, kind: 'text' };
  return { text: stringifyExactJson(value), kind: 'json' };
}

/** Column widths in px from the names, types and the first rows' values. */
function columnWidths(fields: Field[], rows: readonly Row[]): number[] {
  return fields.map((f, i) => {
    let chars = Math.max(f.name.length, f.type.length * 0.8);
    for (const row of rows.slice(0, SAMPLE_ROWS)) chars = Math.max(chars, Math.min(cellOf(row[i]).text.length, 60));
    return Math.round(Math.min(480, Math.max(80, chars * 8.4 + 28)));
  });
}

interface Props {
  fields: Field[];
  /** Grows while the result streams in (the same array): `version` changes when it did, so the grid draws again. */
  rows: readonly Row[];
  version: number;
  /** Id of the heading naming the table. */
  labelledBy: string;
}

export function ResultGrid({ fields, rows, labelledBy }: Props) {
  const scroller = useRef<HTMLDivElement>(null);
  // Sized once the first rows are in, so columns do not jump while more stream in.
  const sized = rows.length > 0;
  const widths = useMemo(() => columnWidths(fields, rows), [fields, sized]);
  const template = widths.map((w) => `${w}px`).join(' ');
  const width = widths.reduce((a, b) => a + b, 0);
  const virtualizer = useVirtualizer({
    count: rows.length,
    getScrollElement: () => scroller.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 12,
    scrollMargin: HEADER_HEIGHT,
    useFlushSync: false,
  });
  const items = virtualizer.getVirtualItems();

  return (
    <div className="sql-grid-scroll" ref={scroller} tabIndex={0} role="region" aria-label="Result rows, scrollable">
      <div role="table" aria-labelledby={labelledBy} aria-rowcount={rows.length + 1} aria-colcount={fields.length} className="sql-grid" style={{ width }}>
        <div role="rowgroup" className="sql-grid-head">
          <div role="row" aria-rowindex={1} className="sql-grid-row" style={{ gridTemplateColumns: template, height: HEADER_HEIGHT }}>
            {fields.map((f, i) => (
              <div role="columnheader" aria-colindex={i + 1} key={i} className="sql-grid-header" title={`${f.name} (${f.type})`}>
                <span className="sql-grid-name">{f.name}</span>
                <span className="sql-grid-type" aria-hidden="true">
                  {f.type}
                </span>
              </div>
            ))}
          </div>
        </div>
        <div role="rowgroup" className="sql-grid-body" style={{ height: virtualizer.getTotalSize() }}>
          {items.map((item) => {
            const row = rows[item.index]!;
            return (
              <div
                role="row"
                aria-rowindex={item.index + 2}
                key={item.key}
                className="sql-grid-row sql-grid-data"
                style={{ gridTemplateColumns: template, height: ROW_HEIGHT, transform: `translateY(${item.start - HEADER_HEIGHT}px)` }}
              >
                {fields.map((_, i) => {
                  const cell = cellOf(row[i]);
                  return (
                    <div role="cell" aria-colindex={i + 1} key={i} className={`sql-cell sql-cell-${cell.kind}`} title={cell.text.length > 40 ? cell.text : undefined}>
                      {cell.text}
                    </div>
                  );
                })}
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}

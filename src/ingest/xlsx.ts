/**
 * The first worksheet of an XLSX workbook, streamed with exceljs' WorkbookReader (it reads ZIP
 * entries as they arrive and spools a sheet to a temporary file only when the shared strings
 * come after it in the archive). Cells become text the way a person reads them: numbers with
 * JavaScript's shortest exact digits, date-formatted cells as ISO dates or timestamps, formulas
 * as their cached result, rich text and hyperlinks as their text, error cells (#N/A) as NULL.
 */
import { Readable } from 'node:stream';
import type ExcelJS from 'exceljs';
import { PgError, SqlState } from '../shared/errors.js';
import type { ParsedRow, RowReader } from './types.js';

const pad = (n: number, width = 2) => String(n).padStart(width, '0');

function dateText(d: Date): string {
  const day = `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())}`;
  const ms = d.getUTCMilliseconds();
  if (d.getUTCHours() === 0 && d.getUTCMinutes() === 0 && d.getUTCSeconds() === 0 && ms === 0) return day;
  return `${day}T${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())}${ms ? '.' + pad(ms, 3) : ''}`;
}

/** The text of one cell value, or null. */
export function cellText(value: ExcelJS.CellValue): string | null {
  if (value === null || value === undefined) return null;
  if (typeof value === 'string') return value;
  if (typeof value === 'number') return Number.isFinite(value) ? String(value) : null;
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? null : dateText(value);
  if ('richText' in value) return value.richText.map((r) => r.text).join('');
  if ('error' in value) return null;
  if ('result' in value) return value.result === undefined ? null : cellText(value.result as ExcelJS.CellValue);
  if ('text' in value) return typeof value.text === 'string' ? value.text : cellText(value.text as ExcelJS.CellValue);
  return null;
}

function notXlsx(err: unknown): PgError {
  const reason = err instanceof Error ? err.message : String(err);
  return new PgError(SqlState.BadCopyFileFormat, `the file is not a readable XLSX workbook: ${reason}`, {
    hint: 'save it from your spreadsheet as "Excel Workbook (.xlsx)", or export the sheet as CSV',
  });
}

/** Rows of the first worksheet; `line` is the sheet's row number, and empty rows are skipped. */
export function xlsxReader(source: AsyncIterable<Buffer>): RowReader {
  return {
    unit: 'row',
    async *rows() {
      // Loaded on the first workbook, not at start-up in every worker (measured: a worker at rest
      // holds ≈ 4 MB less RSS, and exceljs alone grows a bare process by ≈ 26 MB).
      // (A CommonJS module: its exports arrive as the namespace's `default`.)
      const excel = ((await import('exceljs')) as unknown as { default: typeof ExcelJS }).default;
      const input = Readable.from(source, { objectMode: false });
      const workbook = new excel.stream.xlsx.WorkbookReader(input, {
        worksheets: 'emit',
        sharedStrings: 'cache',
        styles: 'cache', // date cells are numbers with a date format: styles tell which
        hyperlinks: 'ignore',
        entries: 'ignore',
      });
      let sheets = 0;
      try {
        for await (const sheet of workbook) {
          if (sheets++ > 0) {
            // Later sheets are skipped, but read through: the archive is consumed to its end.
            for await (const skipped of sheet) void skipped;
            continue;
          }
          let batch: ParsedRow[] = [];
          for await (const row of sheet) {
            const cells = row.values as ExcelJS.CellValue[];
            const values: (string | null)[] = [];
            for (let i = 1; i < cells.length; i++) values.push(cellText(cells[i]));
            if (values.every((v) => v === null)) continue;
            batch.push({ line: row.number, values });
            if (batch.length >= 1000) {
              yield batch;
              batch = [];
            }
          }
          if (batch.length) yield batch;
        }
      } catch (err: unknown) {
        if (err instanceof PgError) throw err;
        throw notXlsx(err);
      }
      if (sheets === 0) throw notXlsx(new Error('no worksheet'));
    },
  };
}

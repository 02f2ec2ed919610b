/**
 * Turns the NDJSON answer of `POST /query/` into the CLI's output formats without parsing a
 * number through a float: each row line is split into its top-level JSON values as text.
 *
 * Cells in table and CSV output: strings as they are, numbers with the server's digits, NULL as
 * an empty cell (in CSV unquoted, while an empty string is `""`), booleans as true/false, arrays
 * and json values as their JSON text. `--format json` writes the API's own JSON answer.
 */
import { Option } from 'commander';
import { csvField } from '../upstream/query-encode.js';
import { formatTable } from './table.js';

/** The top-level values of a JSON array text, each as its exact JSON text. */
export function splitRow(line: string): string[] {
  const cells: string[] = [];
  let i = line.indexOf('[') + 1;
  const skipSpace = () => {
    while (i < line.length && ' \t\r\n'.includes(line[i] ?? '')) i++;
  };
  skipSpace();
  if (line[i] === ']') return cells;
  while (i < line.length) {
    skipSpace();
    const start = i;
    let depth = 0;
    for (; i < line.length; i++) {
      const c = line[i];
      if (c === '"') {
        for (i++; i < line.length && line[i] !== '"'; i++) if (line[i] === '\\') i++;
      } else if (c === '[' || c === '{') depth++;
      else if (c === ']' || c === '}') {
        if (depth === 0) break;
        depth--;
      } else if (c === ',' && depth === 0) break;
    }
    cells.push(line.slice(start, i).trim());
    if (line[i] !== ',') break;
    i++;
  }
  return cells;
}

/** A JSON value's text as a cell: null → null, a string → its content, anything else as written. */
export function cellText(json: string): string | null {
  if (json === 'null') return null;
  if (json.startsWith('"')) return JSON.parse(json) as string;
  return json;
}

export type CliFormat = 'table' | 'csv' | 'json';

const FORMATS: readonly CliFormat[] = ['table', 'csv', 'json'];

/** `--format table|csv|json`. */
export function formatOption(defaultFormat: string): Option {
  return new Option('--format <format>', `output format (default: ${defaultFormat})`).choices(FORMATS);
}

/** Rows as a table on a terminal, CSV otherwise: pipes and files get data, not decoration. */
export function defaultFormat(): CliFormat {
  return process.stdout.isTTY ? 'table' : 'csv';
}

export interface Head {
  query_string: string;
  fields: Record<string, string>;
}

export interface Tail {
  command: string | null;
  row_count: number | null;
  truncated?: boolean;
}

/** Output of one answer: `row` per NDJSON row line, then `end` (or `fail` after an error line). */
export interface Renderer {
  row(line: string): void;
  end(tail: Tail): void;
  fail(errorJson: string): void;
}

/** The renderer of one answer in `format`, writing to `out` (data) and `err` (warnings). */
export function createRenderer(format: CliFormat, head: Head, headJson: string, out: (s: string) => void, err: (s: string) => void): Renderer {
  const names = Object.keys(head.fields);
  const truncNote = (t: Tail) => (t.truncated ? `WARNING: the server cut the result at ${t.row_count ?? 0} rows (its maxResultRows)\n` : '');
  switch (format) {
    case 'json': {
      let first = true;
      out(headJson.replace(/}\s*$/, ',"data":['));
      return {
        row: (line) => {
          out((first ? '' : ',') + line);
          first = false;
        },
        end: (t) => out(`],"command":${JSON.stringify(t.command)},"row_count":${JSON.stringify(t.row_count)}${t.truncated ? ',"truncated":true' : ''}}\n`),
        fail: (e) => out(`],"error":${e}}\n`),
      };
    }
    case 'csv':
      if (names.length) out(names.map(csvField).join(',') + '\n');
      return {
        row: (line) => out(splitRow(line).map((c) => csvField(cellText(c))).join(',') + '\n'),
        end: (t) => err(truncNote(t)),
        fail: () => undefined,
      };
    case 'table': {
      // A table needs every width before its first line: rows are kept (a terminal shows few).
      const rows: string[][] = [];
      return {
        // A line break would break the alignment: shown as ↵, as the table is for reading.
        row: (line) => void rows.push(splitRow(line).map((c) => (cellText(c) ?? '').replaceAll('\n', '↵'))),
        end: (t) => {
          if (names.length) out(formatTable(names, rows));
          else out(`${t.command ?? ''}${t.row_count !== null ? ` ${t.row_count}` : ''}\n`);
          err(truncNote(t));
        },
        fail: () => undefined,
      };
    }
    default:
      return assertNever(format);
  }
}

function assertNever(x: never): never {
  throw new Error(`unexpected format ${String(x)}`);
}

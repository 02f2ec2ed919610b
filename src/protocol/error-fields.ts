import { PgError, type Severity } from '../shared/errors.js';
import { Cursor } from './cursor.js';

/**
 * ErrorResponse / NoticeResponse fields ↔ `PgError`. The core fields map to PgError's own
 * properties; every other field lands in `extra` under the name node-postgres gives it
 * (`schema`, `table`, `where`, …) so errors converted by the upstream layer from `pg` and
 * errors decoded here look alike. A field letter this table doesn't know is kept under the
 * letter itself. Keys the builder can't map to a letter are not sent.
 *
 * @see https://www.postgresql.org/docs/current/protocol-error-fields.html
 */
// Maps, not object literals: a key such as `constructor` must not find Object.prototype's.
const EXTRA_FIELDS: ReadonlyMap<string, string> = new Map([
  ['s', 'schema'],
  ['t', 'table'],
  ['c', 'column'],
  ['d', 'dataType'],
  ['n', 'constraint'],
  ['W', 'where'],
  ['p', 'internalPosition'],
  ['q', 'internalQuery'],
  ['F', 'file'],
  ['L', 'line'],
  ['R', 'routine'],
]);
const EXTRA_LETTERS: ReadonlyMap<string, string> = new Map(
  [...EXTRA_FIELDS].map(([letter, name]) => [name, letter]),
);

/** `S` when it differs from `V` (a translated severity such as `ERREUR`). */
export const LOCALIZED_SEVERITY_KEY = 'severityLocalized';
/** The raw severity when it is not one `PgError.severity` can hold (`LOG`, `INFO`, `DEBUG1`…). */
export const RAW_SEVERITY_KEY = 'severity';
/** `P` when it is not a plain number. */
const RAW_POSITION_KEY = 'position';

const CORE_LETTERS = new Set(['S', 'V', 'C', 'M', 'D', 'H', 'P']);
const SEVERITIES: ReadonlySet<string> = new Set<Severity>([
  'ERROR',
  'FATAL',
  'PANIC',
  'WARNING',
  'NOTICE',
]);

/** Reads the field list of an `E` or `N` frame into letter → value. Server text, decoded leniently. */
export function readErrorFields(frame: Buffer, code: number, what: string): Map<string, string> {
  const cursor = Cursor.typed(frame, code, what);
  const fields = new Map<string, string>();
  for (let type = cursor.byte(); type !== 0; type = cursor.byte()) {
    fields.set(String.fromCharCode(type), cursor.cstring(false));
  }
  cursor.end();
  return fields;
}

/** The PgError for a field map; `fallback` is its severity when the raw one has no PgError equivalent. */
export function pgErrorFromFields(fields: Map<string, string>, fallback: Severity): PgError {
  const extra: Record<string, string> = {};
  const localized = fields.get('S');
  const raw = fields.get('V') ?? localized; // V exists since 9.6; before, S is all there is
  let severity = fallback;
  if (raw !== undefined) {
    if (SEVERITIES.has(raw)) severity = raw as Severity;
    else extra[RAW_SEVERITY_KEY] = raw;
  }
  if (localized !== undefined && localized !== raw) extra[LOCALIZED_SEVERITY_KEY] = localized;

  let position: number | undefined;
  const rawPosition = fields.get('P');
  if (rawPosition !== undefined) {
    if (/^[1-9][0-9]{0,9}$/.test(rawPosition)) position = Number(rawPosition);
    else extra[RAW_POSITION_KEY] = rawPosition;
  }
  for (const [letter, value] of fields) {
    if (!CORE_LETTERS.has(letter)) extra[EXTRA_FIELDS.get(letter) ?? letter] = value;
  }
  return new PgError(fields.get('C') ?? 'XX000', fields.get('M') ?? '', {
    severity,
    detail: fields.get('D'),
    hint: fields.get('H'),
    position,
    extra: Object.keys(extra).length > 0 ? extra : undefined,
    fromUpstream: true,
  });
}

/**
 * The ordered field list for a PgError. `severity`, when given, overrides the error's own
 * (e.g. FATAL when the connection is about to close) and with it any kept raw severity.
 * NULs are stripped, not refused: this runs while reporting an error, and messages can quote
 * client input.
 */
export function errorFieldsOf(err: PgError, severity?: Severity): [string, string][] {
  const extra = err.extra ?? {};
  const nonLocalized = severity ?? extra[RAW_SEVERITY_KEY] ?? err.severity;
  const localized = severity ?? extra[LOCALIZED_SEVERITY_KEY] ?? nonLocalized;
  const fields: [string, string][] = [
    ['S', localized],
    ['V', nonLocalized],
    ['C', err.code],
    ['M', err.message],
  ];
  if (err.detail !== undefined) fields.push(['D', err.detail]);
  if (err.hint !== undefined) fields.push(['H', err.hint]);
  const position = Number.isSafeInteger(err.position) ? String(err.position) : extra[RAW_POSITION_KEY];
  if (position !== undefined) fields.push(['P', position]);
  for (const [key, value] of Object.entries(extra)) {
    const letter = EXTRA_LETTERS.get(key) ?? (key.length === 1 && key !== '\0' ? key : undefined);
    if (letter !== undefined && !CORE_LETTERS.has(letter)) fields.push([letter, value]);
  }
  return fields.map(([letter, value]) => [letter, value.replaceAll('\0', '')]);
}

/**
 * Times as people type them: an ISO 8601 time (`2026-11-24`, `2026-11-24T05:00:00Z`) or a span
 * from now (`30m`, `1h`, `7d`, `2w`) — back from now for the start of a range of the audit log and
 * usage, ahead of now for a key's expiry.
 */
import { PgError, SqlState } from '../shared/errors.js';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
const SPAN = /^(\d{1,6})([smhdw])$/;
const ISO = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}(:?\d{2})?)?)?$/;

function parseTime(text: string, direction: 1 | -1, now: number, hint: string): Date {
  const t = text.trim();
  const span = SPAN.exec(t);
  if (span) return new Date(now + direction * Number(span[1]) * UNIT_MS[span[2] as keyof typeof UNIT_MS]);
  const at = ISO.test(t) ? new Date(t) : undefined;
  if (at && !Number.isNaN(at.getTime())) return at;
  throw new PgError(SqlState.InvalidDatetimeFormat, `invalid time "${text}"`, { hint });
}

/** `text` as the start of a range: a time, or a span back from now (22007 when it is neither form). */
export function parseSince(text: string, now = Date.now()): Date {
  return parseTime(text, -1, now, 'give an ISO time (2026-11-24T05:00:00Z) or a span back from now: 30m, 1h, 7d, 2w');
}

/** `text` as an end: a time, or a span ahead of now (22007 when it is neither form). */
export function parseUntil(text: string, now = Date.now()): Date {
  return parseTime(text, 1, now, 'give an ISO time (2027-01-01T00:00:00Z) or a span from now: 30m, 12h, 30d, 2w');
}

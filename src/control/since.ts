/**
 * The start of a time range as people type it for the audit log and usage: an ISO 8601 time
 * (`2026-11-24`, `2026-11-24T05:00:00Z`) or a span back from now (`30m`, `1h`, `7d`, `2w`).
 */
import { PgError } from '../shared/errors.js';

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 } as const;
const SPAN = /^(\d{1,6})([smhdw])$/;
const ISO = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}(:?\d{2})?)?)?$/;

/** `text` as a time (22007 when it is neither form). */
export function parseSince(text: string, now = Date.now()): Date {
  const t = text.trim();
  const span = SPAN.exec(t);
  if (span) return new Date(now - Number(span[1]) * UNIT_MS[span[2] as keyof typeof UNIT_MS]);
  const at = ISO.test(t) ? new Date(t) : undefined;
  if (at && !Number.isNaN(at.getTime())) return at;
  throw new PgError('22007' /* invalid_datetime_format */, `invalid time "${text}"`, { hint: 'give an ISO time (2026-11-24T05:00:00Z) or a span back from now: 30m, 1h, 7d, 2w' });
}

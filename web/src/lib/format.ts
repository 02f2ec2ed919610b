/** How the console shows dates, sizes, durations, permissions and visibility to people. */
import type { Access } from '../api.ts';

const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short' });

export function formatDate(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : dateTime.format(date);
}

const ACCESS_LABELS: Record<Access, string> = { own: 'Owner', write: 'Can write', read: 'Can read' };

export function accessLabel(access: Access): string {
  return ACCESS_LABELS[access];
}

export function visibilityLabel(isPrivate: boolean): string {
  return isPrivate ? 'Private' : 'Public';
}

const time = new Intl.DateTimeFormat(undefined, { timeStyle: 'short' });

/** The time of day of an ISO timestamp. */
export function formatTime(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : time.format(date);
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
const number = new Intl.NumberFormat(undefined, { maximumFractionDigits: 1 });

/** `0 B`, `12.3 MiB`, `10 GiB`. */
export function formatBytes(n: number): string {
  let i = 0;
  let v = n;
  while (v >= 1024 && i < UNITS.length - 1) {
    v /= 1024;
    i++;
  }
  return `${number.format(v)} ${UNITS[i]}`;
}

/** `250 ms`, `1.5 s`, `5 min`, `2 h`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${number.format(ms / 1000)} s`;
  if (ms < 3_600_000) return `${number.format(ms / 60_000)} min`;
  return `${number.format(ms / 3_600_000)} h`;
}

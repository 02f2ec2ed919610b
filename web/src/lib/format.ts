/** How the console shows dates, permissions and visibility to people. */
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

/** Sizes and durations as people write and read them: `10GiB`, `500MB`, `5m`, `30s`. */
import { createRequire } from 'node:module';
import ms from 'ms';

/** bytes-iec is CommonJS with `export =`, which an ES module can only take whole. */
const bytes = createRequire(import.meta.url)('bytes-iec') as typeof import('bytes-iec');

/** A duration as people write it (`30s`, `5m`, `1h`, `250ms`; a bare number is milliseconds); undefined if it is none. */
export function parseDuration(text: string): number | undefined {
  const t = text.trim();
  const value = /^\d+$/.test(t) ? Number(t) : ms(t as ms.StringValue);
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 && Number.isInteger(value) ? value : undefined;
}

/** A size as people write it (`10GiB`, `500MB`, `1024`); undefined if it is none. */
export function parseSize(text: string): number | undefined {
  const value = bytes.parse(text.trim());
  return typeof value === 'number' && Number.isFinite(value) && value >= 0 ? Math.floor(value) : undefined;
}

/** `10 GiB`, `512 MiB`, `0 B`. */
export function formatSize(n: number): string {
  return bytes.format(n, { mode: 'binary', unitSeparator: ' ' }) ?? `${n} B`;
}

/** `5m`, `1.5s`, `250ms`. */
export function formatDuration(n: number): string {
  return ms(n);
}

/** Median and spread of repeated measurements: only ratios taken in one run mean anything here. */
export interface Summary {
  median: number;
  min: number;
  max: number;
  /** (max - min) / median, in percent. */
  spreadPct: number;
  samples: number[];
}

export function summarize(samples: number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n === 0 ? NaN : n % 2 ? sorted[(n - 1) / 2]! : (sorted[n / 2 - 1]! + sorted[n / 2]!) / 2;
  const min = sorted[0] ?? NaN;
  const max = sorted[n - 1] ?? NaN;
  return { median, min, max, spreadPct: median ? ((max - min) / median) * 100 : NaN, samples };
}

export const fmt = (n: number, digits = 0): string => (Number.isFinite(n) ? n.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits }) : 'n/a');

/** The `p`-th percentile (0–100, nearest rank) of samples already sorted ascending; NaN when there are none. */
export function percentile(sorted: ArrayLike<number>, p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))]!;
}

/** Errors by SQLSTATE (or a pseudo code such as `socket`), each with the first message seen. */
export type ErrorTally = Record<string, { count: number; message: string }>;

export function countError(tally: ErrorTally, code: string, message: string): void {
  const seen = tally[code];
  if (seen) seen.count++;
  else tally[code] = { count: 1, message };
}

export const errorCount = (tally: ErrorTally): number => Object.values(tally).reduce((n, e) => n + e.count, 0);

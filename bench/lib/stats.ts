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

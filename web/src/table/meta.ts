/**
 * A table as the repo's detail describes it. The optional members are those the API may not send
 * yet (nullable, default, row_estimate, primary_key); the page works without them, read-only
 * where it needs a key.
 */
import type { RepoDetail } from '../api.ts';

export interface ColumnInfo {
  name: string;
  type: string;
  nullable?: boolean;
  default?: string | null;
}

export interface TableInfo {
  name: string;
  columns: ColumnInfo[];
  row_estimate?: number | null;
  primary_key?: string[];
}

export function findTable(detail: RepoDetail, name: string): TableInfo | undefined {
  const tables: readonly TableInfo[] = detail.tables;
  return tables.find((t) => t.name === name);
}

/** "about 1,234 rows" from Postgres' estimate; null when it has none (never analysed: -1). */
export function estimateText(estimate: number | null | undefined): string | null {
  if (estimate === null || estimate === undefined || estimate < 0) return null;
  return `about ${estimate.toLocaleString()} ${estimate === 1 ? 'row' : 'rows'}`;
}

/** An exact count as the API wrote it (any number of digits), grouped for reading. */
export function countText(digits: string): string {
  try {
    const n = BigInt(digits);
    return `${n.toLocaleString()} ${n === 1n ? 'row' : 'rows'}`;
  } catch {
    return `${digits} rows`;
  }
}

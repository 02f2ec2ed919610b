/** A CommandComplete tag read as its command and its row count. */
import { isDigit } from '../shared/chars.js';

/** `INSERT 0 3` → INSERT, 3; `SELECT 5` → SELECT, 5; `CREATE TABLE` → CREATE TABLE, null. */
export function parseCommandTag(tag: string): { command: string; rowCount: number | null } {
  // The counts are the trailing space-separated numbers; the row count is the last of them.
  let cut = tag.length;
  let rowCount: number | null = null;
  for (;;) {
    let i = cut;
    while (i > 0 && isDigit(tag.charCodeAt(i - 1))) i--;
    if (i === cut || i === 0 || tag.charCodeAt(i - 1) !== SPACE) break;
    rowCount ??= Number(tag.slice(i, cut));
    cut = i - 1;
  }
  return { command: tag.slice(0, cut), rowCount };
}

const SPACE = 0x20;

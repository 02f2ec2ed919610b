/**
 * What the relay learns from the upstream's answers for usage and the DDL audit: a
 * CommandComplete's tag says how many rows a SELECT or FETCH returned and what ran.
 */
import { isDdlTag } from '../control/audit.js';
import type { UsageMeter } from '../control/usage.js';
import { BackendCode } from '../protocol/index.js';

/** Backend messages the usage meter looks at: statement ends, and what says rows are coming. */
export const METERED = new Uint8Array(256);
for (const code of [BackendCode.CommandComplete, BackendCode.RowDescription, BackendCode.CopyOutResponse, BackendCode.NoData, BackendCode.ErrorResponse]) METERED[code] = 1;

/** The row count at the end of the tag of the CommandComplete from `start` to `end` of `buf` (`SELECT 7`, `FETCH 2`, `COPY 10`). */
function tagCount(buf: Buffer, start: number, end: number): number {
  let n = 0;
  let scale = 1;
  for (let i = end - 2; i > start + 5; i--) {
    const c = buf[i]!;
    if (c < 0x30 || c > 0x39) break;
    n += (c - 0x30) * scale;
    scale *= 10;
  }
  return n;
}

/** Counts statements and rows of one connection from its answers; tells of DDL that ran. */
export class AnswerMeter {
  /** A RowDescription or CopyOutResponse came: the next CommandComplete counts rows returned. */
  private rowsFollow = false;

  constructor(
    private readonly meter: UsageMeter,
    private readonly onDdl: (tag: string) => void,
  ) {}

  /** One METERED frame from the upstream: bytes `start` to `end` of `buf`. */
  frame(code: number, buf: Buffer, start: number, end: number): void {
    if (code !== BackendCode.CommandComplete) {
      this.rowsFollow = code === BackendCode.RowDescription || code === BackendCode.CopyOutResponse;
      return;
    }
    this.meter.statements++;
    if (this.rowsFollow) this.meter.rowsReturned += tagCount(buf, start, end);
    this.rowsFollow = false;
    // The hot tags (SELECT, INSERT, UPDATE, FETCH) are told apart by their first bytes, undecoded.
    const first = buf[start + 5];
    if (first === 0x49 || first === 0x55 || first === 0x46 || (first === 0x53 && buf[start + 7] === 0x4c)) return;
    const tag = buf.toString('latin1', start + 5, end - 1);
    if (isDdlTag(tag)) this.onDdl(tag.replace(/ \d+$/, ''));
  }
}

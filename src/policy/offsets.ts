// The parser reports node locations as UTF-8 byte offsets; JavaScript strings index UTF-16 code
// units, and Postgres reports error positions in characters. For ASCII text all three agree,
// which is nearly always, so the tables are built only for other text.

export interface Offsets {
  /** UTF-16 index of a byte offset. */
  index(byte: number): number;
  /** 1-based character position of a byte offset, as in a Postgres error. */
  position(byte: number): number;
}

const ascii: Offsets = { index: (b) => b, position: (b) => b + 1 };

/** Offset conversions for one query string. */
export function offsetsOf(sql: string): Offsets {
  if (/^[\x00-\x7f]*$/.test(sql)) return ascii;
  let tables: { index: Int32Array; chars: Int32Array } | undefined;
  const build = (): { index: Int32Array; chars: Int32Array } => {
    const size = Buffer.byteLength(sql) + 1;
    const index = new Int32Array(size);
    const chars = new Int32Array(size);
    let byte = 0;
    let unit = 0;
    let char = 0;
    for (const ch of sql) {
      const len = Buffer.byteLength(ch);
      for (let k = 0; k < len; k++) {
        index[byte + k] = unit;
        chars[byte + k] = char;
      }
      byte += len;
      unit += ch.length;
      char++;
    }
    index[byte] = unit;
    chars[byte] = char;
    return { index, chars };
  };
  const at = (table: Int32Array, byte: number): number => table[Math.max(0, Math.min(byte, table.length - 1))] ?? 0;
  return {
    index: (b) => at((tables ??= build()).index, b),
    position: (b) => at((tables ??= build()).chars, b) + 1,
  };
}

import { describe, expect, it } from 'vitest';
import { describedBy, uniqueNames } from '../../../src/upstream/row-descriptions.js';
import { SqlState } from '../../../src/shared/errors.js';
import { pgErrorOf, rawTyped } from '../protocol/helpers.js';

/** A RowDescription of `columns` (name, type oid, typmod), text format, as Postgres sends it. */
function rowDescription(columns: readonly [string, number, number][]): Buffer {
  const parts = [Buffer.alloc(2)];
  parts[0]!.writeInt16BE(columns.length);
  for (const [name, oid, typmod] of columns) {
    const field = Buffer.alloc(18);
    field.writeInt32BE(0, 0); // table oid
    field.writeInt16BE(0, 4); // column number
    field.writeUInt32BE(oid, 6);
    field.writeInt16BE(-1, 10); // type size
    field.writeInt32BE(typmod, 12);
    field.writeInt16BE(0, 16); // text format
    parts.push(Buffer.from(`${name}\0`, 'utf8'), field);
  }
  return rawTyped('T', Buffer.concat(parts));
}

describe('describedBy', () => {
  it('reads the columns: type oids and modifiers in order, names made unique', () => {
    const d = describedBy(rowDescription([['id', 23, -1], ['?column?', 25, -1], ['?column?', 1043, 14], ['naïve', 1700, 655366]]));
    expect(d.wanted).toEqual([
      { oid: 23, typmod: -1 },
      { oid: 25, typmod: -1 },
      { oid: 1043, typmod: 14 },
      { oid: 1700, typmod: 655366 },
    ]);
    expect(d.names).toEqual(['id', '?column?', '?column?_2', 'naïve']);
  });

  it('decodes a message once: the same bytes, even in another buffer, give the same columns back', () => {
    const frame = rowDescription([['a', 23, -1], ['b', 25, -1]]);
    const first = describedBy(frame);
    expect(describedBy(Buffer.from(frame))).toBe(first);
    // A view into a larger chunk, as the frame reader hands frames out.
    const chunk = Buffer.concat([Buffer.from('xyz'), frame, Buffer.from('tail')]);
    expect(describedBy(chunk.subarray(3, 3 + frame.length))).toBe(first);
  });

  it('tells messages apart by every byte', () => {
    const a = describedBy(rowDescription([['a', 23, -1]]));
    expect(describedBy(rowDescription([['a', 23, 4]]))).not.toBe(a);
    expect(describedBy(rowDescription([['a', 20, -1]]))).not.toBe(a);
    expect(describedBy(rowDescription([['b', 23, -1]])).names).toEqual(['b']);
  });

  it('refuses a malformed message with 08P01 and keeps nothing of it', () => {
    const good = rowDescription([['c', 23, -1]]);
    const truncated = Buffer.from(good.subarray(0, good.length - 4));
    truncated.writeInt32BE(truncated.length - 1, 1);
    expect(pgErrorOf(() => describedBy(truncated)).code).toBe(SqlState.ProtocolViolation);
    expect(pgErrorOf(() => describedBy(truncated)).code).toBe(SqlState.ProtocolViolation);
    expect(describedBy(good).names).toEqual(['c']);
  });

  it('keeps a bounded number of messages: past it the oldest is decoded again', () => {
    const oldest = rowDescription([['oldest', 23, -1]]);
    const kept = describedBy(oldest);
    for (let i = 0; i < 1_000; i++) describedBy(rowDescription([[`column_${i}`, 23, -1]]));
    const again = describedBy(oldest);
    expect(again).not.toBe(kept);
    expect(again).toEqual(kept);
  });
});

describe('uniqueNames', () => {
  it('makes duplicate column names unique, keeping the order', () => {
    expect(uniqueNames(['?column?', '?column?', '?column?'])).toEqual(['?column?', '?column?_2', '?column?_3']);
    expect(uniqueNames(['a', 'a', 'a_2'])).toEqual(['a', 'a_3', 'a_2']);
    expect(uniqueNames(['x', 'y'])).toEqual(['x', 'y']);
  });
});

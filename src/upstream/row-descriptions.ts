/**
 * A REST statement's columns as its RowDescription gives them, decoded once per distinct message:
 * a statement answers with the same bytes every time it runs, so a repeated query allocates nothing
 * for its columns but the key it is looked up by.
 *
 * Why: V8 decides early in a process' life whether an allocation site's objects go straight to the
 * old generation (pretenuring), for as long as the process lives. In standing services the field
 * descriptions decoded for each request outlived scavenges — 224–245 of the 425–1,005 bytes per
 * request that did, against 1.6 in a fresh process (V8's heap profiler;
 * bench/notes/2026-11-27-rest-scavenge-survivors.md). Kept once, none are made per request.
 */
import { decodeRowDescription } from '../protocol/index.js';

/** What a RowDescription says of the columns, as the REST answer uses it. */
export interface Described {
  /** Each column's type oid and modifier, in order (what the type catalog is asked). */
  readonly wanted: readonly { readonly oid: number; readonly typmod: number }[];
  /** Each column's name, made unique (see uniqueNames). */
  readonly names: readonly string[];
}

/** A statement that returns no rows (no RowDescription before its end). */
export const NO_COLUMNS: Described = { wanted: [], names: [] };

/** Distinct RowDescriptions kept; past it the oldest goes (a service runs far fewer distinct statements). */
const MAX_KEPT = 1_000;

const kept = new Map<string, Described>();

/** The columns of a RowDescription frame (08P01 when it is malformed). */
export function describedBy(frame: Buffer): Described {
  const key = frame.toString('latin1', 5); // the message's body: its bytes, one character each
  const known = kept.get(key);
  if (known !== undefined) return known;
  const fields = decodeRowDescription(frame);
  const described: Described = {
    wanted: fields.map((f) => ({ oid: f.typeOid, typmod: f.typmod })),
    names: uniqueNames(fields.map((f) => f.name)),
  };
  if (kept.size >= MAX_KEPT) kept.delete(kept.keys().next().value!);
  kept.set(key, described);
  return described;
}

/**
 * Column names made unique so that `fields` (an object) keeps one entry per column and rows stay
 * aligned with it: the second `?column?` becomes `?column?_2`, the third `?column?_3`, skipping
 * names that already exist.
 */
export function uniqueNames(names: readonly string[]): readonly string[] {
  if (names.length < 2) return names;
  const taken = new Set(names);
  const seen = new Set<string>();
  return names.map((name) => {
    if (!seen.has(name)) {
      seen.add(name);
      return name;
    }
    let n = 2;
    while (taken.has(`${name}_${n}`) || seen.has(`${name}_${n}`)) n++;
    const unique = `${name}_${n}`;
    seen.add(unique);
    return unique;
  });
}

/**
 * A pooled client's sequence state — what currval and lastval answer — kept as Postgres keeps it
 * for a session of its own, though its backends change (pooling by transaction).
 *
 * A backend holds the values of the nextval/setval run there since its state was last cleared.
 * The client's own are captured after each transaction that may have made some (the sequences it
 * named, those its tables take defaults from, every one after code the proxy could not see into)
 * and carried as the setting `repobase.sequences`, which the stand-ins of currval and lastval read
 * when the backend has no value (src/policy/session-stand-ins.ts). A backend whose state is another
 * client's, or an older one of this client's, is cleared (DISCARD SEQUENCES) before the client's
 * first statement there that reads or makes sequence state.
 */
import { CATALOG_SCHEMA } from '../policy/index.js';
import { literal } from './session-settings.js';

/** What a client's statements may have done to its sequence state since the last capture. */
export class SequenceWrites {
  readonly sequences = new Set<string>();
  readonly tables = new Set<string>();
  /** Code the proxy could not see into ran (a user's function, DO, CALL). */
  every = false;

  get empty(): boolean {
    return !this.every && this.sequences.size === 0 && this.tables.size === 0;
  }
}

/**
 * Tables (as written, under a role and search_path) known to take no default from a sequence:
 * writes to them need no capture (pgbench's history table, most tables). Forgotten at any schema
 * change of any repo (a column may have been given a serial default). Kept by role, then path,
 * then table: each is a string the connection or the policy's cached analysis keeps, whose hash
 * V8 keeps with it, so a look-up after every write hashes nothing new.
 */
export class SequenceFreeTables {
  private readonly known = new Map<string, Map<string, Set<string>>>();
  private count = 0;

  has(role: string, path: string, table: string): boolean {
    return this.count > 0 && this.known.get(role)?.get(path)?.has(table) === true;
  }

  add(role: string, path: string, tables: readonly string[]): void {
    if (this.count > 10_000) this.clear();
    let paths = this.known.get(role);
    if (paths === undefined) this.known.set(role, (paths = new Map()));
    let set = paths.get(path);
    if (set === undefined) paths.set(path, (set = new Set()));
    for (const t of tables) {
      if (set.has(t)) continue;
      set.add(t);
      this.count++;
    }
  }

  clear(): void {
    this.known.clear();
    this.count = 0;
  }
}

/** The capture's query, or undefined when nothing is left to ask after (every table known free). */
export function captureSql(writes: SequenceWrites, free: (table: string) => boolean): { sql: string; tables: string[] } | undefined {
  if (!writes.every && writes.sequences.size === 0 && everyOne(writes.tables, free)) return undefined;
  const tables = [...writes.tables].filter((t) => !free(t));
  const array = (items: Iterable<string>) => `ARRAY[${[...items].map(literal).join(', ')}]::text[]`;
  return { sql: `SELECT * FROM ${CATALOG_SCHEMA}.capture_sequences(${array(writes.sequences)}, ${array(tables)}, ${writes.every})`, tables };
}

/** Whether every table is known free (no array made: this runs after every transaction that wrote). */
function everyOne(tables: ReadonlySet<string>, free: (table: string) => boolean): boolean {
  for (const t of tables) if (!free(t)) return false;
  return true;
}

/** The capture's one row: the state to carry, and the tables found to take no default from a sequence. */
export function parseCapture(row: readonly (string | null)[]): { state: string; free: string[] } {
  return { state: row[0] ?? '{}', free: JSON.parse(row[1] ?? '[]') as string[] };
}

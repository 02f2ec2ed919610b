/**
 * How many schema changes this process has heard of: DDL its clients ran (counted when it
 * succeeded) and every schema change of any repo from any instance (the live-schema events).
 * A server statement prepared before a later generation may plan on what changed since: a client
 * whose own statement is newer must not be given it (prepared.ts).
 */
let generation = 0;

export function schemaGeneration(): number {
  return generation;
}

export function schemaChanged(): void {
  generation++;
}

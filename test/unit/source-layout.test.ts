// The code's layout as docs/development.md states it: small files, no import cycle, and front
// ends that never import each other. Read from the sources, so a change that breaks it fails here.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { describe, expect, it } from 'vitest';

const SRC = join(import.meta.dirname, '..', '..', 'src');
const MAX_LINES = 400;
const FRONT_ENDS = ['wire', 'http', 'cli'];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? sources(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []));
}

const files = sources(SRC);
const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
const IMPORT = /(?:^|\n)\s*(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]/g;

/** The files of src/ a file imports (type-only imports too: they tie the modules together as much for a reader). */
function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const m of text.get(file)!.matchAll(IMPORT)) {
    const target = normalize(join(dirname(file), m[1]!.replace(/\.js$/, '.ts')));
    if (text.has(target)) out.push(target);
  }
  return out;
}

const graph = new Map(files.map((f) => [f, importsOf(f)]));
const name = (f: string) => relative(SRC, f);

describe('the source layout', () => {
  it(`keeps every file in src/ under ${MAX_LINES} lines`, () => {
    const long = files.map((f) => [name(f), text.get(f)!.split('\n').length - 1] as const).filter(([, n]) => n >= MAX_LINES);
    expect(long).toEqual([]);
  });

  it('has no import cycle', () => {
    // Depth-first search; a file met again while still on the path closes a cycle.
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const path: string[] = [];
    const visit = (f: string): void => {
      state.set(f, 'open');
      path.push(f);
      for (const g of graph.get(f)!) {
        if (state.get(g) === 'open') cycles.push([...path.slice(path.indexOf(g)), g].map(name).join(' → '));
        else if (state.get(g) === undefined) visit(g);
      }
      path.pop();
      state.set(f, 'done');
    };
    for (const f of files) if (!state.has(f)) visit(f);
    expect(cycles).toEqual([]);
  });

  it('keeps the front ends (wire, http, cli) from importing each other', () => {
    const room = (f: string) => name(f).split('/')[0]!;
    const crossings = files.flatMap((f) =>
      FRONT_ENDS.includes(room(f)) ? graph.get(f)!.filter((g) => FRONT_ENDS.includes(room(g)) && room(g) !== room(f)).map((g) => `${name(f)} → ${name(g)}`) : [],
    );
    expect(crossings).toEqual([]);
  });
});

/**
 * The documents are a set of linked guides: every relative link in the repository's Markdown must
 * reach a file that exists, and every `#anchor` into a Markdown file must name one of its headings
 * (GitHub's slugs). Also the size limits that keep each document readable in one sitting.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import MarkdownIt, { type Token } from 'markdown-it';
import { afterAll, describe, expect, it } from 'vitest';
import { packageRoot } from '../../src/shared/package-root.js';

const markdown = new MarkdownIt();

/** Folders that hold no document of the project: dependencies, builds, data and test output. */
const SKIPPED = new Set(['.git', 'node_modules', 'dist', 'data', 'coverage', 'test-results']);

function markdownFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.isDirectory()) return SKIPPED.has(entry.name) ? [] : markdownFiles(join(dir, entry.name));
    return entry.isFile() && entry.name.endsWith('.md') ? [join(dir, entry.name)] : [];
  });
}

/** The anchors GitHub gives a document's headings, in order (a repeated heading gets `-1`, `-2`…). */
function headingSlugs(text: string): string[] {
  const slugger = new GithubSlugger();
  const tokens = markdown.parse(text, {});
  return tokens.flatMap((token, i) => {
    if (token.type !== 'heading_open') return [];
    // The heading's text as rendered: code spans and link texts count, their markup does not.
    const words = (tokens[i + 1]?.children ?? []).filter((t) => t.type === 'text' || t.type === 'code_inline').map((t) => t.content);
    return [slugger.slug(words.join(''))];
  });
}

/** Every link and image target of a document, as written (reference links resolved). */
function linkTargets(text: string): string[] {
  const targets: string[] = [];
  const visit = (tokens: Token[]): void => {
    for (const token of tokens) {
      const target = token.type === 'link_open' ? token.attrGet('href') : token.type === 'image' ? token.attrGet('src') : null;
      if (target !== null) targets.push(String(target));
      if (token.children) visit(token.children);
    }
  };
  visit(markdown.parse(text, {}));
  return targets;
}

/** `file: target (why)` for each relative link of `files` that does not resolve. */
function brokenLinks(root: string, files: string[]): string[] {
  const slugs = new Map<string, Set<string>>();
  const slugsOf = (file: string): Set<string> => {
    let found = slugs.get(file);
    if (!found) slugs.set(file, (found = new Set(headingSlugs(readFileSync(file, 'utf8')))));
    return found;
  };
  const broken: string[] = [];
  for (const file of files) {
    for (const target of linkTargets(readFileSync(file, 'utf8'))) {
      // Absolute URLs (https:, mailto:) and protocol-relative ones leave the repository.
      if (/^[a-z][a-z0-9+.-]*:/i.test(target) || target.startsWith('//')) continue;
      const hash = target.indexOf('#');
      const path = decodeURIComponent(hash < 0 ? target : target.slice(0, hash));
      const anchor = hash < 0 ? undefined : decodeURIComponent(target.slice(hash + 1));
      const at = `${relative(root, file)}: ${target}`;
      const linked = path === '' ? file : resolve(dirname(file), path);
      let exists = true;
      try {
        statSync(linked);
      } catch {
        exists = false;
      }
      if (!exists) broken.push(`${at} (no such file)`);
      else if (anchor !== undefined && linked.endsWith('.md') && !slugsOf(linked).has(anchor)) broken.push(`${at} (no heading with that anchor)`);
    }
  }
  return broken;
}

describe('links between the documents', () => {
  const scratch = mkdtempSync(join(tmpdir(), 'docs-links-'));
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it('gives headings the anchors GitHub gives them', () => {
    const text = '# The `repobase` CLI\n\n## Client encodings and standard_conforming_strings\n\n## Sessions\n\n## Sessions\n\n### Functions that take an object, and reg* casts\n\n```\n# not a heading\n```\n';
    expect(headingSlugs(text)).toEqual([
      'the-repobase-cli',
      'client-encodings-and-standard_conforming_strings',
      'sessions',
      'sessions-1',
      'functions-that-take-an-object-and-reg-casts',
    ]);
  });

  it('finds a link to a missing file, a missing anchor and a missing heading of the same page', () => {
    mkdirSync(join(scratch, 'docs'));
    writeFileSync(join(scratch, 'docs', 'guide.md'), '# Guide\n\n## Limits\n');
    writeFileSync(
      join(scratch, 'README.md'),
      [
        '# Start',
        '[ok](docs/guide.md#limits) [folder](docs/) [web](https://example.org/x.md#nowhere) [top](#start)',
        '[gone](docs/missing.md) [moved](docs/guide.md#sessions) [here](#nowhere)',
        '`[in code](docs/missing.md)`',
        '',
        '```',
        '[in a block](docs/missing.md)',
        '```',
        '',
        '[ref]: docs/other.md',
        'A [reference link][ref].',
      ].join('\n'),
    );
    expect(brokenLinks(scratch, [join(scratch, 'README.md')])).toEqual([
      'README.md: docs/missing.md (no such file)',
      'README.md: docs/guide.md#sessions (no heading with that anchor)',
      'README.md: #nowhere (no heading with that anchor)',
      'README.md: docs/other.md (no such file)',
    ]);
  });

  it('resolve in every Markdown file of the repository', () => {
    const files = markdownFiles(packageRoot);
    // The guides this test is for must be among them (a wrong root would pass with nothing checked).
    for (const doc of ['README.md', 'docs/wire.md', 'bench/README.md']) expect(files).toContain(join(packageRoot, doc));
    expect(brokenLinks(packageRoot, files)).toEqual([]);
  });
});

describe('document sizes', () => {
  const bytes = (path: string) => statSync(join(packageRoot, path)).size;

  it('keeps the README under 8 KB', () => {
    expect(bytes('README.md')).toBeLessThanOrEqual(8192);
  });

  it('keeps bench/README.md under 25 KB and each bench note under 10 KB', () => {
    expect(bytes('bench/README.md')).toBeLessThanOrEqual(25_600);
    const notes = readdirSync(join(packageRoot, 'bench', 'notes')).filter((name) => name.endsWith('.md'));
    expect(notes.length).toBeGreaterThan(0);
    const tooLarge = notes.map((name) => ({ name, bytes: bytes(join('bench', 'notes', name)) })).filter((n) => n.bytes > 10_240);
    expect(tooLarge).toEqual([]);
  });
});

import { previewUpload, type ParseOptions, type Preview } from '../../../src/ingest/index.js';

/** Chunks of `text` split every `size` bytes: parsers must not care where chunks end. */
export async function* chunks(data: string | Buffer, size = 7): AsyncGenerator<Buffer> {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data;
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

/** Preview of `data` with default options (header auto, null = empty unquoted). */
export function preview(data: string | Buffer, opts: Partial<ParseOptions> = {}, size = 7): Promise<Preview> {
  return previewUpload(chunks(data, size), { header: 'auto', nullValues: [''], encoding: 'utf-8', ...opts });
}

/** name → type of a preview, in order. */
export function typesOf(p: Preview): Record<string, string> {
  return Object.fromEntries(p.columns.map((c) => [c.name, c.written ? `${c.type} ${c.written.layout}${c.written.clock12 ? ' 12h' : ''}` : c.type]));
}

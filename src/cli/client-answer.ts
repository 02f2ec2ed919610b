/**
 * A query answer in NDJSON — `POST /query/`, or an async query's stored result — written out in
 * the CLI's formats as it streams in.
 */
import { PgError, SqlState } from '../shared/errors.js';
import { fromJson, lines } from './client-http.js';
import { createRenderer, type CliFormat, type Head, type Tail } from './client-render.js';
import type { CliContext } from './context.js';

/**
 * Writes a query answer in NDJSON (`POST /query/`, or an async query's stored result) as it
 * streams in, in `format`; an error line is thrown (exit 1) after the rows before it.
 */
export async function writeAnswer(ctx: CliContext, res: Response, format: CliFormat): Promise<void> {
  let renderer: ReturnType<typeof createRenderer> | undefined;
  for await (const line of lines(res)) {
    if (!line) continue;
    if (!renderer) {
      renderer = createRenderer(format, JSON.parse(line) as Head, line, ctx.out, ctx.err);
    } else if (line.startsWith('[')) {
      renderer.row(line);
    } else {
      const last = JSON.parse(line) as Tail & { error?: Record<string, unknown> };
      if (last.error) {
        renderer.fail(JSON.stringify(last.error));
        throw fromJson(last.error);
      }
      renderer.end(last);
      return;
    }
  }
  throw new PgError(SqlState.ConnectionFailure, 'the answer ended before it was complete');
}

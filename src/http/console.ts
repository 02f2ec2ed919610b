/**
 * The web console's files: the single-page app `npm run build` writes to `dist/web`, served at
 * `/`. Client-side routes (`/login`, `/alice/sales`) are not files: a browser navigation to any
 * path outside `/api/` that names no file gets `index.html`, and the app routes from there.
 *
 * Vite names the files under `assets/` by their content hash, so they can be cached for a year;
 * `index.html` must be revalidated every time, or a browser keeps asking for assets that a new
 * build no longer has. Without a build, pages answer 503 saying so; the API works regardless.
 */
import { existsSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import fastifyStatic from '@fastify/static';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { packageRoot } from '../shared/package-root.js';

/** Where `npm run build` puts the console. */
export const CONSOLE_DIR = join(packageRoot, 'dist', 'web');

const INDEX = 'index.html';
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** Serves the files of `dir` at `/` with cache headers by kind (hashed asset or not). */
export async function registerConsole(app: FastifyInstance, dir: string): Promise<void> {
  await app.register(fastifyStatic, {
    root: dir,
    prefix: '/',
    index: [INDEX],
    // Cache-Control is set per file below; send's default (max-age=0) would be wrong for both kinds.
    cacheControl: false,
    dotfiles: 'ignore',
    // A missing build is reported by the 503 page, not by a warning at every start.
    suppressWarning: true,
    setHeaders: (reply, path) => {
      const assets = relative(dir, path).startsWith(`assets${sep}`);
      reply.header('cache-control', assets ? IMMUTABLE : 'no-cache');
    },
  });
}

function isApiPath(path: string): boolean {
  return path === '/api' || path.startsWith('/api/') || path === '/healthz';
}

/**
 * The not-found answer for page navigations: `index.html` of `dir` (the app then shows the client
 * route), or 503 when the console is not built. Returns false, answering nothing, for every other
 * request (API paths, non-GET, requests that do not accept HTML), which keep the JSON 404.
 */
export function consolePages(dir: string): (req: FastifyRequest, reply: FastifyReply) => boolean {
  return (req, reply) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') return false;
    const path = req.url.split('?')[0] ?? '';
    if (isApiPath(path)) return false;
    // `/` is the console whoever asks; elsewhere only browsers (Accept: text/html) get the page.
    if (path !== '/' && !(req.headers.accept ?? '').includes('text/html')) return false;
    if (!existsSync(join(dir, INDEX))) {
      reply.code(503).header('cache-control', 'no-store').type('text/plain; charset=utf-8').send('The web console is not built: run `npm run build`. The API at /api/v1beta works without it.\n');
      return true;
    }
    reply.code(200).sendFile(INDEX, dir);
    return true;
  };
}

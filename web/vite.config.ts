/**
 * Build of the web console: sources in web/, output in dist/web/ at the project root, which the
 * server serves with an index.html fallback for client routes.
 */
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { defineConfig } from 'vite';
import react from '@vitejs/plugin-react';

const webRoot = path.dirname(fileURLToPath(import.meta.url));
const projectRoot = path.resolve(webRoot, '..');

export default defineConfig({
  root: webRoot,
  base: '/',
  plugins: [react()],
  build: {
    outDir: path.resolve(projectRoot, 'dist/web'),
    emptyOutDir: true,
    // The CSP allows no inline script: keep the module preload helper out of index.html.
    modulePreload: { polyfill: false },
    target: 'es2022',
  },
  server: {
    // `vite --config web/vite.config.ts` during development: the API comes from a running server.
    proxy: { '/api': process.env.REPOBASE_URL ?? 'http://127.0.0.1:8080' },
  },
});

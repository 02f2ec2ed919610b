#!/usr/bin/env -S node --max-semi-space-size=32
// Entry point of the `repobase` command; the code lives in the compiled dist/ (npm run build).
// The young generation may grow to 32 MB a half (Node's default stops near 16): with many wire
// clients waiting for few backends, the state of each waiting transaction outlived the
// scavenges of a smaller one and was promoted, 1 KB per transaction for the old generation's
// collector (bench/notes/2026-11-28-wire-waits.md). Run as `node bin/repobase.js`, it goes without.
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));

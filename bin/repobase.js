#!/usr/bin/env node
// Entry point of the `repobase` command; the code lives in the compiled dist/ (npm run build).
import { main } from '../dist/src/cli/main.js';

process.exitCode = await main(process.argv.slice(2));

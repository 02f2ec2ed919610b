import type { Config } from '../shared/config.js';

/** Where a command writes, and what it reads from the environment (tests pass their own). */
export interface CliContext {
  out(text: string): void;
  err(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
}

/** A usage problem: exit code 2 with the message. */
export class UsageError extends Error {
  override name = 'UsageError';
}

export type ConfigOf = (cmd: import('commander').Command) => Config;

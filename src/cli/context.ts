import type { Command } from 'commander';
import type { ControlPlane } from '../control/control-plane.js';
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

/** The configuration a command runs with (the defaults, the environment, its flags): loaded only by the commands that need it. */
export type ConfigOf = (cmd: Command) => Promise<Config>;

/** Runs `fn` on the control plane of the configured cluster, opened for it and closed after. */
export type WithControl = <T>(ctx: CliContext, config: Promise<Config>, fn: (control: ControlPlane) => Promise<T>) => Promise<T>;

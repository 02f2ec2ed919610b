/**
 * Where an error came from (the policy, the proxy, the upstream), carried with the error across a
 * throw: the REST front end's error counter sees only the error thrown.
 */
import type { ErrorOrigin } from './metrics.js';

const origins = new WeakMap<object, ErrorOrigin>();

/**
 * Marks where `err` comes from, for the counter of the REST front end's error answers (which
 * sees only the error thrown); returns it, to throw. Unmarked errors count as `proxy`.
 */
export function tagOrigin<E>(err: E, origin: ErrorOrigin): E {
  if (typeof err === 'object' && err !== null) origins.set(err, origin);
  return err;
}

/** The origin `tagOrigin` marked `err` with, if any. */
export function originOf(err: unknown): ErrorOrigin | undefined {
  return typeof err === 'object' && err !== null ? origins.get(err) : undefined;
}

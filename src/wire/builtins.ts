/**
 * The functions built into the upstream server (pg_catalog, extensions included), read from it
 * once: a call of any other unqualified name is a user's function, whose effect on the session
 * the proxy cannot know (client-state.ts). Until the list is read, every call counts as a user's.
 */
import type { Logger } from '../shared/logger.js';
import type { BuiltinFunctions } from './client-state.js';

const SQL = "SELECT DISTINCT proname FROM pg_catalog.pg_proc WHERE pronamespace = 'pg_catalog'::pg_catalog.regnamespace";

export function loadBuiltins(query: (sql: string) => Promise<{ rows: { proname: string }[] }>, log: Logger): BuiltinFunctions {
  let names: ReadonlySet<string> | undefined;
  let loading: Promise<void> | undefined;
  const load = () => {
    loading ??= query(SQL).then(
      ({ rows }) => void (names = new Set(rows.map((r) => r.proname))),
      (err: unknown) => {
        log.warn({ err }, 'the names of the built-in functions could not be read: calls count as user functions meanwhile');
        setTimeout(() => (loading = undefined), 10_000).unref();
      },
    );
  };
  load();
  return {
    has(name: string): boolean {
      if (names === undefined) load();
      return names?.has(name) ?? false;
    },
  };
}

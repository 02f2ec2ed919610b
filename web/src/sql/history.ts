/**
 * The person's last statements on this browser, newest first, in localStorage under
 * `repobase.sql.history.<user>`: statements only, never keys or results. A statement run again
 * moves to the top instead of appearing twice.
 */

export const HISTORY_SIZE = 50;

const keyOf = (user: string) => `repobase.sql.history.${user}`;

export function loadHistory(user: string): string[] {
  try {
    const value: unknown = JSON.parse(localStorage.getItem(keyOf(user)) ?? '[]');
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string').slice(0, HISTORY_SIZE) : [];
  } catch {
    // unreadable (or storage refused): start afresh
    return [];
  }
}

function save(user: string, statements: string[]): void {
  try {
    localStorage.setItem(keyOf(user), JSON.stringify(statements));
  } catch {
    // storage full or refused (private mode): the history lives for this page only
  }
}

/** Puts `statement` on top of the history and returns the new list. */
export function remember(user: string, statement: string): string[] {
  const statements = [statement, ...loadHistory(user).filter((s) => s !== statement)].slice(0, HISTORY_SIZE);
  save(user, statements);
  return statements;
}

export function clearHistory(user: string): string[] {
  save(user, []);
  return [];
}

/**
 * How every front end and the policy name a scoped API key and its scope in messages, so that a
 * refusal says the same whichever way the statement came.
 */

/** `API key "dashboard" (rb_0123456789ab)`, or `API key rb_0123456789ab` when it has no name. */
export function keyLabel(id: string, name: string): string {
  return name ? `API key "${name}" (rb_${id})` : `API key rb_${id}`;
}

/** What a key reaches, in words: `read access to alice/sales`, `write access to every repo of alice`. */
export function scopeWords(user: string, access: string, repos: readonly string[] | null): string {
  return `${access} access to ${repos === null ? `every repo of ${user}` : repos.join(', ')}`;
}

/** The hint of a refusal of a key's scope: how to get a wider key. */
export const WIDER_KEY_HINT =
  'use a key that reaches it: create one with POST /api/v1beta/keys/ ("repos", "access") or `repobase key create --repo … --access …`, or use a full key';

/**
 * More users on a running service, made through its own HTTP API (sign-up, then an API key) so a
 * scenario needs neither the server secret nor the CLI: a scenario that needs more wire sessions
 * than one user may hold (`pgSessionsPerUser`) spreads its clients over several users.
 */
import { randomBytes } from 'node:crypto';

async function expect(res: Response, status: number, what: string): Promise<Response> {
  if (res.status !== status) throw new Error(`${what}: HTTP ${res.status} ${await res.text()}`);
  return res;
}

/** Signs `username` up (the console's open sign-up) and returns a new API key of theirs. */
export async function signUpWithKey(httpUrl: string, username: string): Promise<string> {
  const api = `${httpUrl}/api/v1beta`;
  const password = randomBytes(16).toString('hex');
  const signup = await expect(
    await fetch(`${api}/auth/signup`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ username, password }) }),
    201,
    `sign-up of ${username}`,
  );
  const { csrf_token: csrf } = (await signup.json()) as { csrf_token: string };
  const cookie = signup.headers.getSetCookie().map((c) => c.split(';')[0]).join('; ');
  const key = await expect(await fetch(`${api}/keys/`, { method: 'POST', headers: { cookie, 'x-csrf-token': csrf } }), 201, `a key for ${username}`);
  return ((await key.json()) as { key: string }).key;
}

/** Shares `repo` ("owner/name") with `user`, as its owner (`ownerKey`). */
export async function shareRepo(httpUrl: string, ownerKey: string, repo: string, user: string, permission: 'read' | 'write'): Promise<void> {
  const res = await fetch(`${httpUrl}/api/v1beta/repos/${repo}/collaborators/${user}`, {
    method: 'PUT',
    headers: { authorization: `Bearer ${ownerKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ permission }),
  });
  await expect(res, 200, `sharing ${repo} with ${user}`);
}

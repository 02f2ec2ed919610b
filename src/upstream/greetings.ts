/**
 * What a session pool greets clients with before they hold a session: the ParameterStatus values
 * of the latest login per key (role and start-up parameters), learnt once from a real login —
 * concurrent first logins wait for that one instead of each opening a session.
 */
export class Greetings {
  private readonly known = new Map<string, ReadonlyMap<string, string>>();
  private readonly learning = new Map<string, Promise<ReadonlyMap<string, string>>>();

  get(key: string): ReadonlyMap<string, string> | undefined {
    return this.known.get(key);
  }

  /** Notes the values of a login of `key`. */
  set(key: string, parameters: ReadonlyMap<string, string>): void {
    if (this.known.size > 10_000) this.known.clear();
    this.known.set(key, parameters);
  }

  /** The values of `key` as `login` learns them; one login at a time per key. */
  learn(key: string, login: () => Promise<ReadonlyMap<string, string>>): Promise<ReadonlyMap<string, string>> {
    let learning = this.learning.get(key);
    if (!learning) {
      learning = login().finally(() => this.learning.delete(key));
      this.learning.set(key, learning);
    }
    return learning;
  }
}

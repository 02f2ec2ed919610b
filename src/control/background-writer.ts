/**
 * Writes what the audit log and the usage meter collect in memory to the control plane, off the
 * statement path: every `intervalMs`, when the owner asks (a full batch), and at close. One write
 * runs at a time (a request during it is served right after), so batches never race each other
 * and a slow or unreachable control plane delays only these writes, never a client's statement.
 */
export class BackgroundWriter {
  private running: Promise<void> | undefined;
  private again = false;
  private readonly timer: NodeJS.Timeout;

  /** @param write takes the owner's pending rows and writes them; it handles its own failures. */
  constructor(
    intervalMs: number,
    private readonly write: () => Promise<void>,
  ) {
    this.timer = setInterval(() => this.kick(), intervalMs);
    this.timer.unref();
  }

  /** Starts a write now, or right after the one running. */
  kick(): void {
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = this.loop();
  }

  private async loop(): Promise<void> {
    try {
      do {
        this.again = false;
        await this.write().catch(() => undefined); // the owner logs its own failures
      } while (this.again);
    } finally {
      this.running = undefined;
    }
  }

  /** Resolves once everything collected before the call has been written (or its write failed). */
  async flush(): Promise<void> {
    this.kick();
    while (this.running) await this.running;
  }

  /** Stops the timer and writes what is left. */
  async close(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }
}

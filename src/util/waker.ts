/**
 * Waker: what a command that follows the records waits on instead of sleeping (`berth wait`,
 * `get -w`, `events -w`): a poke (a file event, a signal) or a timeout, whichever comes first.
 */
export class Waker {
  private wake: (() => void) | undefined;
  private pending = false;
  private closed = false;

  /** Marks that something changed; the current or next wait() returns at once. */
  poke(): void {
    this.pending = true;
    this.wake?.();
  }

  /** Resolves on a poke (one that came since the last wait counts) or after `ms`. */
  wait(ms: number): Promise<void> {
    if (this.pending || this.closed) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        if (this.wake === done) this.wake = undefined;
        this.pending = false;
        resolve();
      };
      const t = setTimeout(done, Math.max(0, ms));
      this.wake = done;
    });
  }

  close(): void {
    this.closed = true;
    this.wake?.();
  }
}

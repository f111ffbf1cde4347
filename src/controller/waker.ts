/**
 * Waker: what a reconcile loop waits on between passes instead of sleeping: engine events of
 * this instance (a container died, was removed, ...), spec folder changes, requeue times and
 * the resync period. `wait(ms)` resolves on the first of them.
 */
import type { Engine } from '../engine/types';
import { instanceFilters } from '../observe/snapshot';
import type { Logger } from '../util/log';

export class Waker {
  private wake: (() => void) | undefined;
  private pending = false;
  private readonly abort = new AbortController();
  private lastEventSeconds: number | undefined;
  /** Stream reconnects so far (metrics). */
  reconnects = 0;

  /** Marks that something changed; the current or next wait() returns at once. */
  poke(): void {
    this.pending = true;
    this.wake?.();
  }

  wait(ms: number): Promise<void> {
    if (this.pending || this.abort.signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.wake = undefined;
        this.pending = false;
        resolve();
      };
      const t = setTimeout(done, Math.max(0, ms));
      this.wake = done;
    });
  }

  private settle: NodeJS.Timeout | undefined;
  private recheck: NodeJS.Timeout | undefined;

  /**
   * The engine logs `die` before the container lists show it exited (dockerd updates its
   * list view after emitting the event), so a pass right on the event can still see it
   * running: batch events for a moment, and look once more a little later.
   */
  private engineChanged(): void {
    clearTimeout(this.settle);
    clearTimeout(this.recheck);
    this.settle = setTimeout(() => this.poke(), 20);
    this.recheck = setTimeout(() => this.poke(), 300);
  }

  /** Follows the engine's events for this instance; reconnects with back-off, resuming where it stopped. */
  followEngine(engine: Engine, instance: string, log: Logger): void {
    const run = async () => {
      let delay = 250;
      while (!this.abort.signal.aborted) {
        try {
          const since = this.lastEventSeconds;
          const events = await engine.events.stream(instanceFilters(instance), {
            ...(since !== undefined ? { since } : {}),
            signal: this.abort.signal,
          });
          delay = 250;
          for await (const ev of events) {
            this.lastEventSeconds = Number(ev.timeNano / 1_000_000_000n);
            if (ev.type === 'container' || ev.type === 'network' || ev.type === 'volume') this.engineChanged();
          }
        } catch (err) {
          if (this.abort.signal.aborted) return;
          log.debug(`engine event stream broke: ${(err as Error).message}`);
        }
        if (this.abort.signal.aborted) return;
        // The stream ended (engine restart, socket error): relist on the next pass, then resume.
        this.reconnects++;
        this.poke();
        await new Promise((r) => setTimeout(r, delay));
        delay = Math.min(delay * 2, 10_000);
      }
    };
    void run();
  }

  close(): void {
    clearTimeout(this.settle);
    clearTimeout(this.recheck);
    this.abort.abort();
    this.wake?.();
  }
}

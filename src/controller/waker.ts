/**
 * Waker: what a reconcile loop waits on between passes instead of sleeping: engine events of
 * this instance (a container died, was removed, ...), spec folder changes, requeue times and
 * the resync period. `wait(ms)` resolves on the first of them.
 */
import type { Engine } from '../engine/types';
import { EngineSource } from './engine-source';
import type { Logger } from '../util/log';

export class Waker {
  private wake: (() => void) | undefined;
  private pending = false;
  private readonly abort = new AbortController();
  private source: EngineSource | undefined;

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

  /** Follows the engine's events for this instance; a reconnect pokes too (relist on the next pass). */
  followEngine(engine: Engine, instance: string, log: Logger): void {
    this.source = new EngineSource(engine, instance, log, {
      onEvent: (ev) => {
        if (ev.type === 'container' || ev.type === 'network' || ev.type === 'volume') this.engineChanged();
      },
      onReconnect: () => this.poke(),
    });
    this.source.start();
  }

  close(): void {
    clearTimeout(this.settle);
    clearTimeout(this.recheck);
    this.source?.close();
    this.abort.abort();
    this.wake?.();
  }
}

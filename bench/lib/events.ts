/**
 * Waiting for "container X started" without polling: one subscription to the engine's event
 * stream, filtered to container start events with a label, and waiters keyed by container name.
 */
import type { EngineEvent, RawEngine } from './engine';

export class StartWatch {
  private readonly seen = new Map<string, EngineEvent>();
  private readonly waiters = new Map<string, (ev: EngineEvent) => void>();
  private sub: { close(): void } | undefined;

  static async open(engine: RawEngine, labels: string[]): Promise<StartWatch> {
    const w = new StartWatch();
    w.sub = await engine.subscribe({ type: ['container'], event: ['start'], label: labels }, (ev) => {
      const name = ev.attributes.name ?? '';
      const waiter = w.waiters.get(name);
      if (waiter) {
        w.waiters.delete(name);
        waiter(ev);
      } else {
        w.seen.set(name, ev);
      }
    });
    return w;
  }

  /** The start event of the container with this name (one that already arrived counts). */
  started(name: string, timeoutMs: number): Promise<EngineEvent> {
    const ev = this.seen.get(name);
    if (ev) {
      this.seen.delete(name);
      return Promise.resolve(ev);
    }
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => {
        this.waiters.delete(name);
        reject(new Error(`container ${name} did not start within ${timeoutMs} ms`));
      }, timeoutMs);
      this.waiters.set(name, (e) => {
        clearTimeout(t);
        resolve(e);
      });
    });
  }

  close(): void {
    this.sub?.close();
  }
}

/**
 * The engine as a source of keys: follows the engine's event stream filtered to this
 * instance's labels. When the stream breaks (daemon restart, socket error) it reconnects with
 * back-off, resumes `since` the last event it saw, and reports the reconnect so the caller
 * relists everything: the engine replays only a bounded number of events.
 */
import { DEFAULTS } from '../constants';
import type { Engine, EngineEvent } from '../engine/types';
import { instanceFilters } from '../observe/snapshot';
import type { Logger } from '../util/log';

export interface EngineSourceHandlers {
  onEvent(ev: EngineEvent): void;
  /** The stream broke and is connected again (or failed to connect): relist. */
  onReconnect(attempt: number): void;
  /** The stream is (re)connected. */
  onConnected?(): void;
}

export class EngineSource {
  private readonly abort = new AbortController();
  private lastEventSeconds: number | undefined;
  connected = false;
  reconnects = 0;

  /** While connected, a number that changes at every break of the stream (what it may have missed since: nothing); undefined while not connected. */
  get epoch(): number | undefined {
    return this.connected ? this.reconnects : undefined;
  }

  /**
   * `follow`: the stream followed; default: the engine's events of this instance's labels. The
   * controller also follows the image events (`Engine.events.images`) with one of these.
   */
  constructor(
    private readonly engine: Engine,
    private readonly instance: string,
    private readonly log: Logger,
    private readonly h: EngineSourceHandlers,
    private readonly follow: (opts: { since?: number; signal: AbortSignal }) => Promise<AsyncIterable<EngineEvent>> = (opts) =>
      this.engine.events.stream(instanceFilters(this.instance), opts),
  ) {}

  /** `sinceSeconds`: replay from then (the engine's clock, whole seconds); default: from now on. */
  start(sinceSeconds?: number): void {
    this.lastEventSeconds ??= sinceSeconds;
    void this.loop();
  }

  private async loop(): Promise<void> {
    let delay: number = DEFAULTS.streamRetryMs.first;
    const signal = this.abort.signal;
    while (!signal.aborted) {
      try {
        const since = this.lastEventSeconds;
        const events = await this.follow({ ...(since !== undefined ? { since } : {}), signal });
        this.connected = true;
        this.h.onConnected?.();
        delay = DEFAULTS.streamRetryMs.first;
        for await (const ev of events) {
          // `since` is of this engine's clock: not from an event another engine (a swarm node) reported
          if (ev.origin === undefined) this.lastEventSeconds = Number(ev.timeNano / 1_000_000_000n);
          this.h.onEvent(ev);
        }
      } catch (err) {
        if (signal.aborted) return;
        this.log.debug(`engine event stream: ${(err as Error).message}`);
      }
      this.connected = false;
      if (signal.aborted) return;
      this.reconnects++;
      this.log.info(`engine event stream ended; reconnecting in ${delay} ms`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, delay);
        signal.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
      });
      delay = Math.min(delay * 2, DEFAULTS.streamRetryMs.max);
      if (!signal.aborted) this.h.onReconnect(this.reconnects);
    }
  }

  close(): void {
    this.abort.abort();
  }
}

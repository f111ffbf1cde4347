/**
 * The controller's image GC (image-gc.ts): after a full pass (every attempt's record and spec in
 * hand), at most once every DEFAULTS.imageGcIntervalMs, one round at a time and never blocking
 * the pass. A backend that cannot remove images (none yet) has none.
 */
import { DEFAULTS } from '../constants';
import type { Engine } from '../engine/types';
import type { LoadedSpec } from '../spec/types';
import type { AttemptStatus } from '../status/types';
import type { Clock } from '../util/clock';
import { collectImages, type ImageGcDeps } from './image-gc';
import type { ControllerOptions } from './options';

export class ImageCollector {
  private running: Promise<void> | undefined;
  private last: number | undefined;
  private closed = false;

  private constructor(
    private readonly deps: ImageGcDeps,
    private readonly clock: Clock,
  ) {}

  static for(o: ControllerOptions, engine: Engine, clock: Clock): ImageCollector | undefined {
    const config = o.cfg.imageGc;
    if (!config || !engine.local) return undefined;
    const p = o.cfg.policy;
    return new ImageCollector(
      {
        engine,
        stateDir: o.cfg.stateDir,
        instance: o.cfg.instance,
        config,
        ...(p.egress?.proxyImage ? { proxyImage: p.egress.proxyImage } : {}),
        ...(p.infraRetries !== undefined ? { infraRetries: p.infraRetries } : {}),
        log: o.log,
        now: () => clock.now(),
      },
      clock,
    );
  }

  /** A full pass's specs and records: a round begins when none is under way and the last began long enough ago. */
  after(specs: readonly LoadedSpec[], statuses: ReadonlyMap<string, AttemptStatus>): void {
    const now = this.clock.now();
    if (this.closed || this.running || (this.last !== undefined && now - this.last < DEFAULTS.imageGcIntervalMs)) return;
    this.last = now;
    this.running = collectImages(this.deps, specs, statuses)
      .then(() => undefined)
      .catch((err: unknown) => this.deps.log.warn(`image GC: ${(err as Error).message}`))
      .finally(() => (this.running = undefined));
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.running;
  }
}

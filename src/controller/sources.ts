/**
 * The controller's sources (controller-runtime's): each only puts attempt names on the work
 * queue, never plans. The specs folder's watch (spec-source.ts: changed names) or a git source's
 * poller (a new revision: everything), the engine's events (the attempt label; a stream back after
 * a break: everything), its image events (attempts Blocked for a missing image), the requests of
 * `rerun`/`delete`/`regrade` (request-watch.ts), the disk meter (an attempt measured over its
 * limit) and a periodic resync of everything.
 */
import { DEFAULTS, LABELS, REASONS } from '../constants';
import { RELIST_EVENT, type Engine, type EngineEvent } from '../engine/types';
import { GitPoller } from '../git/poller';
import type { GitSource } from '../git/source';
import type { ControllerRequest, RequestAnswer } from '../status/requests';
import { keptChildNames, type StatusStore } from '../status/store';
import type { Clock } from '../util/clock';
import type { Logger } from '../util/log';
import { DiskMeter } from './disk-meter';
import { EngineSource } from './engine-source';
import type { ControllerMetrics } from './metrics';
import { lastGoodOf, type PassConfig } from './pass';
import { RequestWatch } from './request-watch';
import { SpecErrorLog } from './spec-errors';
import { SpecSource } from './spec-source';

/** The key that means "everything": startup, resync, a reconnected event stream. */
export const ALL = '*';

export interface SourcesOptions {
  cfg: PassConfig;
  /** The engine, as the controller calls it (instrumented). */
  engine: Engine;
  store: StatusStore;
  log: Logger;
  clock: Clock;
  resyncMs: number;
  debounceMs?: number;
  settleMs?: number;
  metrics?: ControllerMetrics;
  git?: GitSource;
  /** A finite run: the specs are read once, no resync. */
  finite: boolean;
  /** Aborted when the controller stops. */
  signal: AbortSignal;
  queue(key: string): void;
  /** An engine event of attempt `key` (informer.ts decides when to look). */
  engineEvent(key: string, ev: EngineEvent): void;
  /** An image event, or the image events' stream back after a break: the engine's images may have changed. */
  imagesChanged(): void;
  carryOut(req: ControllerRequest): Promise<RequestAnswer>;
  /** How long the batch under way has taken (undefined: none), for the resync's warning. */
  batchAge(): number | undefined;
}

export class Sources {
  readonly specs: SpecSource;
  /** The spec errors of the last load, each logged once (spec-errors.ts). */
  readonly specErrors: SpecErrorLog;
  /** Fetches the git source, when there is one. */
  readonly poller: GitPoller | undefined;
  readonly events: EngineSource;
  /** The engine's image events (a pull, a load, a tag): attempts Blocked for a missing image look again. */
  private readonly imageEvents: EngineSource;
  private readonly requests: RequestWatch | undefined;
  /** What the running attempts with a disk limit hold, measured at an interval (disk-meter.ts). */
  readonly meter: DiskMeter;
  private resyncTimer: ReturnType<Clock['setTimeout']> | undefined;

  constructor(private readonly o: SourcesOptions) {
    this.specErrors = new SpecErrorLog(o.log);
    this.specs = new SpecSource(
      {
        specsDir: o.cfg.specsDir,
        resultsRoot: o.cfg.resultsRoot,
        stateDir: o.cfg.stateDir,
        keptNames: () => keptChildNames(o.cfg.stateDir, o.cfg.instance),
        lastGood: lastGoodOf(o.cfg),
        debounceMs: o.debounceMs ?? 30,
        ...(o.settleMs !== undefined ? { settleMs: o.settleMs } : {}),
        log: o.log,
        onLoaded: (load) => this.specErrors.update(load.errors),
        ...(o.git ? { git: { current: () => o.git?.current(), url: o.git.cfg.url.display } } : {}),
      },
      (names, load) => {
        o.metrics?.specErrors.set(load.errors.length);
        for (const n of names) o.queue(n);
      },
    );
    // A new revision: load it (changed names are queued) and look at everything (what it no longer holds).
    this.poller = o.git
      ? new GitPoller(o.git, o.clock, () => {
          this.specs.reload();
          o.queue(ALL);
        })
      : undefined;
    this.meter = new DiskMeter({
      engine: o.engine,
      records: () => o.store.loadAll(),
      clock: o.clock,
      intervalMs: o.cfg.diskIntervalMs ?? DEFAULTS.diskIntervalMs,
      log: o.log,
      onOver: (name) => o.queue(name),
      signal: o.signal,
    });
    this.events = new EngineSource(o.engine, o.cfg.instance, o.log, {
      onEvent: (ev) => {
        // a part of a merged stream (a swarm node's) was away: what happened meanwhile was not reported
        if (ev.type === RELIST_EVENT) return o.queue(ALL);
        const key = ev.attributes[LABELS.attempt];
        if (key) o.engineEvent(key, ev);
      },
      onReconnect: () => {
        o.metrics?.streamReconnects.inc();
        o.queue(ALL);
      },
    });
    // a finite run takes requests too: `berth release` of its sandboxes, a rerun while it waits
    this.requests = new RequestWatch({ stateDir: o.cfg.stateDir, instance: o.cfg.instance, log: o.log }, (req) => o.carryOut(req));
    const images = o.engine.events.images.bind(o.engine.events);
    // an image event, or the stream back after a break: the kept image list is stale, and a Blocked attempt may go
    const imageNews = () => {
      o.imagesChanged();
      void this.imageAppeared();
    };
    this.imageEvents = new EngineSource(o.engine, o.cfg.instance, o.log, { onEvent: imageNews, onReconnect: imageNews }, (opts) => images(opts));
  }

  /** The image events' stream while connected: a number that changes at every break (engine-source.ts `epoch`). */
  get imagesEpoch(): number | undefined {
    return this.imageEvents.epoch;
  }

  /** An image event (or its stream back after a break): every attempt Blocked for a missing image is looked at again. */
  private async imageAppeared(): Promise<void> {
    const recs = await this.o.store.loadAll().catch(() => undefined);
    for (const r of recs?.values() ?? []) if (r.phase === 'Blocked' && r.reason === REASONS.imageMissing) this.o.queue(r.name);
  }

  async start(): Promise<void> {
    const { o } = this;
    if (o.finite) {
      // from a second before the first lists: an exit between them and the stream's start is replayed
      this.events.start(Math.floor(Date.now() / 1000) - 1);
      this.imageEvents.start(Math.floor(Date.now() / 1000) - 1);
      this.meter.start();
      await this.requests?.start();
      return;
    }
    if (o.git) await o.git.prepare();
    if (this.poller) this.poller.start();
    else {
      this.specs.watch();
      await this.specs.ready();
    }
    this.events.start();
    this.imageEvents.start();
    this.scheduleResync();
    this.meter.start();
    await this.requests?.start();
  }

  /** Every resyncMs, whatever the event stream and the engine do. */
  private scheduleResync(): void {
    this.resyncTimer = this.o.clock.setTimeout(() => {
      const age = this.o.batchAge();
      if (age !== undefined && age > this.o.resyncMs)
        this.o.log.warn(`a reconcile batch has been under way for ${Math.round(age / 1000)} s; the resync waits for it`);
      this.o.queue(ALL);
      this.requests?.look(); // a request the folder's watch missed
      this.scheduleResync();
    }, this.o.resyncMs);
  }

  /** No request is taken from now on; the promise settles once those under way are answered. */
  closeRequests(): Promise<void> | undefined {
    return this.requests?.close();
  }

  async close(): Promise<void> {
    if (this.resyncTimer) this.o.clock.clearTimeout(this.resyncTimer);
    this.events.close();
    this.imageEvents.close();
    this.meter.close();
    await this.poller?.stop();
    await this.specs.close();
  }
}

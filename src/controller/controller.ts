/**
 * The controller: sources put attempt names on a work queue, a reconcile loop takes what is
 * queued as one batch and reconciles it level-triggered (re-reads the specs if the folder
 * changed, takes one snapshot of the engine, plans the batch, hands each attempt's action to
 * the executor). Sources: the specs folder (changed names), engine events (the attempt label),
 * requeue times (deadlines, TTLs, back-offs) and a periodic resync of everything.
 *
 * Queue semantics (client-go): a key is never worked on twice at once; a key added while it is
 * worked on is worked on again after; failures back off per key (and globally rate-limited).
 *
 * The engine's state is kept as an informer keeps it: a full list (4 calls) at start, on every
 * resync and after the event stream reconnects; in between, a batch of a few keys lists only
 * those attempts (plus any whose own actions ended since they were last listed) and merges
 * them into the kept snapshot. Every change of an attempt's containers queues its key (engine
 * events, the folder, our own actions), so the rest of the snapshot stays current, and the
 * planner still sees every attempt (admission counts what runs everywhere). A container's
 * `die` queues its key once an inspect of that container has answered (the engine answers it
 * once it has set the state, while its lists lag): a stopped state is laid over the lists
 * until they show it (ExitWatch), so the batch plans the finish from what the engine said.
 *
 * Nothing here waits on the event stream: the resync timer and the work loop only need engine
 * calls, and every engine call has a deadline, so a batch whose engine does not answer fails
 * (and is retried) instead of holding the loop, and with it every later resync, forever.
 *
 * A finite run (`reconcile --once --wait`, `finite`) is the same loop over specs read once: the
 * folder is not watched (a git source is not polled: its caller fetched the revision), there is
 * no resync timer, the event stream starts a second before the first lists (so no exit falls
 * between them), and an exit the lists keep lagging is looked at again until they show it. Its
 * caller ends it (stop()) once every attempt is final, as `watcher.settled` lets it see.
 *
 * Actions run in the background, in two lanes. Ending a run (a deadline's stop, an exit's
 * harvest, a TTL's removal) has a lane of its own, as wide as --max-running: it never waits
 * behind slow starts, and no attempt's stop (which may wait its whole grace) holds back another's
 * deadline. Everything else (starts, replacements, attestations, removals) is bounded by
 * --workers. An attempt whose batch found its action still under way is looked at again when
 * that action ends (what the action did, a start say, is news the batch could not plan from).
 */
import { activity } from './activity';
import { EXIT, LABELS, PHASES, REASONS, type Phase } from '../constants';
import { RELIST_EVENT, type Engine } from '../engine/types';
import { describeEngineError, isEngineDown } from '../engine/errors';
import { instrumentEngine } from '../engine/wrap';
import type { ActionResult } from '../execute/executor';
import { mergeSnapshot, observe, observeAttempts } from '../observe/snapshot';
import type { Snapshot } from '../observe/types';
import { DEFAULTS, RUNNING_STATES } from '../constants';
import type { AttemptAction, Plan } from '../plan/types';
import type { LoadReport } from '../spec/loader';
import type { StatusStore } from '../status/store';
import type { AttemptStatus } from '../status/types';
import type { Clock } from '../util/clock';
import { systemClock } from '../util/clock';
import type { Logger } from '../util/log';
import { nextTurn, Semaphore } from '../util/pool';
import { DiskMeter } from './disk-meter';
import { EngineHealth } from './engine-health';
import { EngineSource } from './engine-source';
import { ExitWatch } from './exit-watch';
import type { ControllerMetrics } from './metrics';
import { executorFor, knownContainerIds, planInput, planWithRunFloors, quotasFor, readDisk, type PassConfig } from './pass';
import { diskPressure, pressured, type DiskInput } from '../plan/disk-pressure';
import { WorkQueue } from './queue';
import { SpecSource } from './spec-source';
import { SpecErrorLog } from './spec-errors';
import { MARKS } from './marks';
import { RequestWatch } from './request-watch';
import type { ControllerRequest, RequestAnswer, RequestResult } from '../status/requests';
import { GitPoller } from '../git/poller';
import type { GitSource } from '../git/source';
import type { RevisionOutcomes } from '../git/outcome';

/** The key that means "everything": startup, resync, a reconnected event stream. */
export const ALL = '*';
/** Looks again for an exit the lists do not show yet: after 50 ms, doubling to 2 s, this many times (~8 s). */
const EXIT_LOOKS = 9;

/** A batch of at most this many attempts to look at lists only them; a bigger one lists everything. */
export const TARGETED_MAX = 8;

export interface ControllerOptions {
  cfg: PassConfig;
  engine: Engine;
  store: StatusStore;
  log: Logger;
  /** Attempt actions executed at once. */
  workers: number;
  resyncMs: number;
  debounceMs?: number;
  /** A spec file the watcher names is read once it has had no write this long (default 60 ms). */
  settleMs?: number;
  clock?: Clock;
  metrics?: ControllerMetrics;
  /** Specs from git (prepared): polled instead of watching the specs folder. */
  git?: GitSource;
  /** Specs from git: each revision's outcome, once all its attempts finished. */
  outcomes?: RevisionOutcomes;
  /** A finite run (`reconcile --once --wait`; see the header). */
  finite?: boolean;
  watcher?: ControllerWatcher;
}

/** What a caller hears of the loop (a finite run's progress and end). */
export interface ControllerWatcher {
  /** A batch's plan, once its actions are dispatched, with the load it was made from. */
  planned?(load: LoadReport, plan: Plan): void;
  /** After every batch and every action's end: a moment the controller may have become idle. */
  settled?(): void;
  /** A batch failed because the engine did not answer. */
  engineDown?(err: unknown): void;
}

export class Controller {
  readonly queue: WorkQueue;
  /** Whether the engine answers the controller's calls. */
  readonly health: EngineHealth;
  /** The engine, its calls feeding `health`. */
  readonly engine: Engine;
  private readonly specs: SpecSource;
  /** The spec errors of the last load, each logged once (spec-errors.ts). */
  readonly specErrors: SpecErrorLog;
  /** Fetches the git source, when there is one. */
  readonly poller: GitPoller | undefined;
  private readonly events: EngineSource;
  /** The engine's image events (a pull, a load, a tag): attempts Blocked for a missing image look again. */
  private readonly imageEvents: EngineSource | undefined;
  private readonly clock: Clock;
  private readonly slots: Semaphore;
  /** The ending lane (see the header). */
  private readonly ending: Semaphore;
  private readonly inflight = new Map<string, Promise<void>>();
  /** Aborted on stop: actions still waiting for a worker are dropped, not begun. */
  private readonly halt = new AbortController();
  private readonly waitingForSlot = new Set<string>();
  /** Attempts whose last plan was to wait (for a slot, a set's room, a retry's back-off). */
  private readonly waiting = new Set<string>();
  /** Attempts whose last action failed (tried again after a back-off). */
  private readonly failing = new Set<string>();
  /** Attempts a batch found busy: looked at again when their action ends. */
  private readonly lookAfterWork = new Set<string>();
  private reserved = 0;
  /** Of `reserved`: admissions per AttemptSet (its maxParallel counts them too). */
  private reservedBySet = new Map<string, number>();
  private resyncTimer: ReturnType<Clock['setTimeout']> | undefined;
  private loopDone: Promise<void> | undefined;
  /** When the batch under way began (undefined: none). */
  private batchSince: number | undefined;
  /** The engine's calls in flight were given up (stopping while the engine is down). */
  private abandoned = false;
  private passes = 0;
  /** The engine's state as last seen (see the header); undefined: list everything next time. */
  private snapshot: Snapshot | undefined;
  /** Attempts whose own actions ended since they were last listed, with the generation it happened in. */
  private readonly stale = new Map<string, number>();
  private generation = 0;
  /**
   * Containers the engine said died or were destroyed, by attempt, until the lists show it:
   * the engine sends the event before its lists change, and for a container on a network of
   * its own the lists can lag by seconds (the network is taken down first). Like client-go's
   * controller expectations: a batch that still sees the old state looks again shortly.
   */
  private readonly exits = new Map<string, { id: string; gone: boolean; looks: number }>();
  /** Exits seen by inspecting the container on its `die`, laid over the lists until they show them. */
  private readonly seen: ExitWatch;
  /** What the running attempts with a disk limit hold, measured at an interval (disk-meter.ts). */
  private readonly meter: DiskMeter;
  /**
   * Attempts whose only news since they were last listed is an exit such an inspect saw: a batch
   * plans them from the kept lists with the exit laid over them, without listing them again
   * (an informer's cache updated by the one read that tells what changed). Any other event of
   * the attempt, its own action's end (stale) or a full list ends that.
   */
  private readonly inspectedOnly = new Set<string>();
  /** Requests of `rerun`, `delete`, `regrade` (not in a finite run). */
  private readonly requests: RequestWatch | undefined;
  /**
   * Attempts a request marks: no batch numbered up to this (Infinity while marking) dispatches
   * an action for them, as it planned from their records before the mark.
   */
  private readonly held = new Map<string, number>();
  /** Requests waiting for an attempt's action: each settles with the first batch numbered above `after`. */
  private readonly carrying = new Map<string, Array<{ after: number; done: (r: RequestResult) => void }>>();
  /** A full pass succeeded (readiness). */
  synced = false;
  /** Why new runs wait for disk space, as the last batch read the disks (readiness, metrics); undefined: none. */
  diskPressure: string | undefined;
  stopping = false;

  constructor(private readonly o: ControllerOptions) {
    this.clock = o.clock ?? systemClock;
    this.health = new EngineHealth(o.log, this.clock, (up) => o.metrics?.engineUp.set(up ? 1 : 0));
    this.engine = instrumentEngine(o.engine, this.health.listener);
    this.queue = new WorkQueue({ clock: this.clock, ...(o.metrics ? { metrics: o.metrics.queueMetrics() } : {}) });
    this.specErrors = new SpecErrorLog(o.log);
    this.slots = new Semaphore(Math.max(1, o.workers));
    this.ending = new Semaphore(Math.max(1, o.workers, o.cfg.maxRunning));
    this.specs = new SpecSource(
      {
        specsDir: o.cfg.specsDir,
        resultsRoot: o.cfg.resultsRoot,
        stateDir: o.cfg.stateDir,
        debounceMs: o.debounceMs ?? 30,
        ...(o.settleMs !== undefined ? { settleMs: o.settleMs } : {}),
        log: o.log,
        onLoaded: (load) => this.specErrors.update(load.errors),
        ...(o.git ? { git: { current: () => o.git?.current(), url: o.git.cfg.url.display } } : {}),
      },
      (names, load) => {
        o.metrics?.specErrors.set(load.errors.length);
        for (const n of names) this.queue.add(n);
      },
    );
    // A new revision: load it (changed names are queued) and look at everything (what it no longer holds).
    this.poller = o.git
      ? new GitPoller(o.git, this.clock, () => {
          this.specs.reload();
          this.queue.add(ALL);
        })
      : undefined;
    // Whatever the inspect said (stopped, still running, gone, no answer), the batch looks; a
    // stopped container is laid over its lists (observe), the rest is the lists' (lookAgainIfLagging).
    this.seen = new ExitWatch(
      this.engine,
      () => this.clock.now(),
      (key, seen) => {
        if (seen) this.inspectedOnly.add(key);
        this.queue.add(key);
        // The exit frees a slot now: the batch that plans its finish admits a waiting attempt too,
        // rather than after the harvest.
        if (seen) for (const w of this.waitingForSlot) this.queue.add(w);
      },
    );
    this.meter = new DiskMeter({
      engine: this.engine,
      records: () => o.store.loadAll(),
      clock: this.clock,
      intervalMs: o.cfg.diskIntervalMs ?? DEFAULTS.diskIntervalMs,
      log: o.log,
      onOver: (name) => this.queue.add(name),
      signal: this.halt.signal,
    });
    this.events = new EngineSource(this.engine, o.cfg.instance, o.log, {
      onEvent: (ev) => {
        // a part of a merged stream (a swarm node's) was away: what happened meanwhile was not reported
        if (ev.type === RELIST_EVENT) return this.queue.add(ALL);
        const key = ev.attributes[LABELS.attempt];
        if (!key) return;
        this.inspectedOnly.delete(key); // news the lists may tell (a die: once its inspect has answered)
        if (ev.type === 'container' && (ev.action === 'die' || ev.action === 'destroy')) {
          this.exits.set(key, { id: ev.id, gone: ev.action === 'destroy', looks: 0 });
        }
        // A die: look once the engine has set the container's state, as an inspect of it says (ExitWatch).
        if (ev.type === 'container' && ev.action === 'die') return this.seen.died(key, ev.id);
        // The engine logs an event before its lists show the change: look a little later (and again, for exits).
        this.clock.setTimeout(() => this.queue.add(key), 20);
      },
      onReconnect: () => {
        o.metrics?.streamReconnects.inc();
        this.queue.add(ALL);
      },
    });
    this.requests = o.finite ? undefined : new RequestWatch({ stateDir: o.cfg.stateDir, instance: o.cfg.instance, log: o.log }, (req) => this.carryOut(req));
    const images = this.engine.events.images?.bind(this.engine.events);
    this.imageEvents = images
      ? new EngineSource(
          this.engine,
          o.cfg.instance,
          o.log,
          { onEvent: () => void this.imageAppeared(), onReconnect: () => void this.imageAppeared() },
          (opts) => images(opts),
        )
      : undefined;
  }

  /** An image event (or its stream back after a break): every attempt Blocked for a missing image is looked at again. */
  private async imageAppeared(): Promise<void> {
    const recs = await this.o.store.loadAll().catch(() => undefined);
    for (const r of recs?.values() ?? []) if (r.phase === 'Blocked' && r.reason === REASONS.imageMissing) this.queue.add(r.name);
  }

  get engineConnected(): boolean {
    return this.events.connected;
  }

  async start(): Promise<void> {
    if (this.o.finite) {
      // from a second before the first lists: an exit between them and the stream's start is replayed
      this.events.start(Math.floor(Date.now() / 1000) - 1);
      this.imageEvents?.start(Math.floor(Date.now() / 1000) - 1);
      this.queue.add(ALL);
      this.meter.start();
      this.loopDone = this.loop();
      return;
    }
    if (this.o.git) await this.o.git.prepare();
    if (this.poller) this.poller.start();
    else {
      this.specs.watch();
      await this.specs.ready();
    }
    this.events.start();
    this.imageEvents?.start();
    this.queue.add(ALL);
    this.scheduleResync();
    this.meter.start();
    await this.requests?.start();
    this.loopDone = this.loop();
  }

  /** Nothing queued, no batch under way, no action in flight. */
  idle(): boolean {
    return this.queue.len() === 0 && this.queue.processingLen() === 0 && this.inflight.size === 0;
  }

  /** Whether the attempt's last plan was to wait, or its last action failed and will be tried again. */
  pending(attempt: string): boolean {
    return this.waiting.has(attempt) || this.failing.has(attempt);
  }

  /** The specs as last loaded (undefined before the first batch). */
  latestLoad(): LoadReport | undefined {
    return this.specs.latest();
  }

  /** Every resyncMs, whatever the event stream and the engine do. */
  private scheduleResync(): void {
    this.resyncTimer = this.clock.setTimeout(() => {
      if (this.batchSince !== undefined && this.clock.now() - this.batchSince > this.o.resyncMs) {
        this.o.log.warn(`a reconcile batch has been under way for ${Math.round((this.clock.now() - this.batchSince) / 1000)} s; the resync waits for it`);
      }
      this.queue.add(ALL);
      this.requests?.look(); // a request the folder's watch missed
      this.scheduleResync();
    }, this.o.resyncMs);
  }

  private async loop(): Promise<void> {
    for (;;) {
      const first = await this.queue.get();
      if (first === undefined) return;
      const batch = [first];
      while (this.queue.len() > 0) {
        const k = await this.queue.get();
        if (k === undefined) break;
        batch.push(k);
      }
      this.batchSince = this.clock.now();
      await this.reconcile(batch);
      this.batchSince = undefined;
      this.o.watcher?.settled?.();
    }
  }

  /** One batch: observe, plan the batch's keys, dispatch their actions. */
  /**
   * What the controller holds in memory, for its live report page: the last spec load (the
   * folder is read only before the first) and the status records (the store's copy: this
   * controller is their only writer).
   */
  async view(): Promise<{ load: LoadReport; statuses: ReadonlyMap<string, AttemptStatus> }> {
    const [load, statuses] = await Promise.all([this.specs.latest() ?? this.specs.specs(), this.o.store.loadAll()]);
    return { load, statuses };
  }

  private async reconcile(batch: string[]): Promise<void> {
    const started = this.clock.now();
    const batchNo = ++this.passes;
    const id = `${batchNo.toString(36)}-${started.toString(36)}`;
    const log = this.o.log.child({ reconcileId: id });
    const all = batch.includes(ALL);
    const keys = new Set(batch.filter((k) => k !== ALL));
    let load: LoadReport;
    try {
      // No invalidate(): this controller holds the instance's lock, so it is the only writer and its copy is current.
      // Admissions in flight when the lists go out hold their slots for this batch, also if they
      // end before it plans: what they started may not be in the lists.
      const reserved = this.reserved;
      const reservedBySet = new Map(this.reservedBySet);
      // The lists go out first; the records and specs load (synchronous reads, the first time)
      // a turn of the event loop later, while the engine answers (as a pass's do, pass.ts).
      const listsOut = nextTurn();
      const statusesP = listsOut.then(() => this.o.store.loadAll());
      const snapshotP = this.observe(all, keys, statusesP.then(knownContainerIds));
      const diskP = readDisk(this.o.cfg, this.engine);
      const [l, statuses, snapshot, disk] = await Promise.all([listsOut.then(() => this.specs.specs()), statusesP, snapshotP, diskP]);
      load = l;
      this.notePressure(disk);
      const quotas = await quotasFor(this.o.cfg, load, this.engine);
      const busy = new Set(this.inflight.keys());
      const p = planWithRunFloors(
        planInput(this.o.cfg, load, snapshot, statuses, this.clock.now(), {
          ...(all ? {} : { only: keys }),
          reservedSlots: reserved,
          reservedBySet,
          pins: this.o.store.pins.loadAll(),
          ...(disk ? { disk } : {}),
          diskUsage: this.meter.current(),
          ...quotas,
        }),
      );
      if (this.o.outcomes) void this.o.outcomes.check(statuses.values()).catch((err: unknown) => log.warn(`revision outcome: ${String(err)}`));
      if (load.revision !== undefined)
        void this.o.git?.applied(load.revision, load.errors).catch((err: unknown) => log.warn(`git source status: ${String(err)}`));
      if (all) {
        this.synced = true;
        this.queue.forget(ALL); // a failed resync's back-off starts over
      }
      if (this.o.metrics) {
        this.o.metrics.specErrors.set(load.errors.length);
        const counts = new Map<Phase, number>(PHASES.map((ph) => [ph, 0]));
        for (const s of statuses.values()) counts.set(s.phase, (counts.get(s.phase) ?? 0) + 1);
        this.o.metrics.phases(counts);
      }
      const byName = new Map(p.actions.map((a) => [a.attempt, a]));
      const handled = new Set<string>();
      for (const a of p.actions) {
        const heldTill = this.held.get(a.attempt);
        if (heldTill !== undefined && batchNo > heldTill) this.held.delete(a.attempt);
        if (busy.has(a.attempt) || (heldTill !== undefined && batchNo <= heldTill)) {
          this.lookAfterWork.add(a.attempt); // in flight from an earlier batch (or a request marks it): looked at again when it ends
          continue;
        }
        if (a.waitsForSlot) this.waitingForSlot.add(a.attempt);
        else this.waitingForSlot.delete(a.attempt);
        if (a.kind === 'wait') this.waiting.add(a.attempt);
        else this.waiting.delete(a.attempt);
        handled.add(a.attempt);
        this.dispatch(a, keys.has(a.attempt), log, load.revision, batchNo);
      }
      // a request's attempt the plan has nothing for: nothing to carry out
      for (const n of this.carrying.keys()) if ((all || keys.has(n)) && !byName.has(n)) this.settleCarried(n, batchNo, { name: n, ops: [] });
      this.o.watcher?.planned?.(load, p);
      for (const k of keys) this.lookAgainIfLagging(k, snapshot, log);
      for (const k of keys) if (!handled.has(k)) this.endWork(k, true, byName.has(k) ? { type: 'in-flight' } : { type: 'done' });
      this.o.metrics?.reconciled('success', (this.clock.now() - started) / 1000);
    } catch (err) {
      this.snapshot = undefined;
      const msg = describeEngineError(err);
      if (this.abandoned) log.debug(`reconcile stopped: ${msg}`);
      else log.error(`reconcile failed: ${msg}`);
      this.o.metrics?.reconciled('error', (this.clock.now() - started) / 1000);
      for (const k of keys) this.endWork(k, true, { type: 'error' });
      for (const n of [...this.carrying.keys()])
        if (all || keys.has(n))
          this.settleCarried(n, batchNo, { name: n, error: `reconcile failed: ${msg} (the mark is recorded: the controller carries it out when it can)` });
      if (all) this.queue.addRateLimited(ALL);
      if (isEngineDown(err)) {
        this.synced = false;
        this.o.watcher?.engineDown?.(err);
      }
      return;
    } finally {
      if (all) this.queue.done(ALL);
    }
  }

  /** An exit the engine reported but the lists do not show yet: queue the attempt again shortly. */
  /** The disk readings of a batch: kept for /readyz, and the metrics (berth_disk_pressure, berth_disk_free_ratio). */
  private notePressure(disk: DiskInput | undefined): void {
    if (!disk) return;
    const was = this.diskPressure;
    this.diskPressure = diskPressure(disk);
    if (this.diskPressure && this.diskPressure !== was) this.o.log.warn(this.diskPressure);
    else if (!this.diskPressure && was) this.o.log.info('disk pressure is over: new runs start again');
    this.o.metrics?.observeDisk(disk.readings, pressured(disk));
  }

  private lookAgainIfLagging(key: string, snapshot: Snapshot, log: Logger): void {
    const e = this.exits.get(key);
    if (!e) return;
    const c = snapshot.attempts.get(key)?.containers.find((x) => x.id === e.id);
    const lagging = e.gone ? c !== undefined : c !== undefined && RUNNING_STATES.has(c.state);
    if (!lagging) {
      this.exits.delete(key);
      return;
    }
    // A finite run has no resync to look again: it looks until the lists show the exit.
    if (e.looks >= EXIT_LOOKS && !this.o.finite) {
      this.exits.delete(key);
      log.warn(
        `${key}: the engine reported container ${e.id.slice(0, 12)} ${e.gone ? 'removed' : 'exited'}, but its lists still do not show it; the next resync looks again`,
      );
      return;
    }
    this.clock.setTimeout(() => this.queue.add(key), Math.min(2000, 50 * 2 ** Math.min(e.looks++, EXIT_LOOKS)));
  }

  /**
   * The snapshot for one batch: everything, or the batch's attempts (and the stale ones)
   * merged into the kept snapshot. Keeps the lists' result, and returns it with the exits seen
   * by inspection laid over it (ExitWatch).
   */
  private async observe(all: boolean, keys: ReadonlySet<string>, known: Promise<ReturnType<typeof knownContainerIds>>): Promise<Snapshot> {
    const { cfg } = this.o;
    const engine = this.engine;
    const upTo = this.generation;
    const refresh = new Set([...keys, ...this.stale.keys()]);
    const kept = this.snapshot;
    if (!all && kept) for (const k of keys) if (this.inspectedOnly.has(k) && !this.stale.has(k) && this.seen.names(kept, k)) refresh.delete(k);
    const targeted = !all && kept !== undefined && refresh.size <= TARGETED_MAX;
    // what is listed now, or planned from the kept lists now, needs a new inspect to skip its lists again
    if (targeted) for (const k of [...keys, ...refresh]) this.inspectedOnly.delete(k);
    else this.inspectedOnly.clear();
    let snapshot: Snapshot;
    if (!targeted) snapshot = await observe(engine, cfg.instance, known, this.clock.now());
    else if (refresh.size > 0) snapshot = mergeSnapshot(kept, await observeAttempts(engine, cfg.instance, [...refresh], known, this.clock.now()), refresh);
    else {
      await known; // no lists to go with it: still the records' failure is this batch's
      snapshot = kept;
    }
    // What ended while the lists were out stays stale: its change may have come after them.
    for (const [name, gen] of [...this.stale]) if (gen <= upTo && (!targeted || refresh.has(name))) this.stale.delete(name);
    // The lists are kept as they are; the planner (and the look again) see the exits inspected on their `die` too.
    this.snapshot = snapshot;
    return this.seen.apply(snapshot);
  }

  /**
   * Runs one attempt's action in the background, bounded by --workers. With a git source, the
   * revision it was planned from is held until it ends: its fixtures stay readable while it
   * waits for a worker, also if later revisions are switched to meanwhile.
   */
  private dispatch(a: AttemptAction, queued: boolean, log: Logger, revision: string | undefined, batchNo: number): void {
    if (a.ops.length === 0) {
      this.failing.delete(a.attempt);
      this.endWork(a.attempt, queued, outcome(a, undefined));
      this.settleCarried(a.attempt, batchNo, { name: a.attempt, ops: [] });
      return;
    }
    const release = revision !== undefined ? this.o.git?.hold(revision) : undefined;
    const admits = a.takesSlot === true;
    if (admits) this.reserved++;
    const set = admits ? a.set : undefined;
    if (set !== undefined) this.reservedBySet.set(set, (this.reservedBySet.get(set) ?? 0) + 1);
    // Stopping interrupts a harvest's hashing; the next controller harvests the run again.
    const executor = executorFor({ ...this.o.cfg, log, now: () => this.clock.now() }, this.engine, this.o.store, { concurrency: 1, signal: this.halt.signal });
    let began = false;
    const lane = a.ending ? this.ending : this.slots;
    const work = lane
      .run(() => {
        began = true;
        return executor.runAction(a);
      }, this.halt.signal)
      .catch((err: unknown): ActionResult | undefined => (began ? { attempt: a.attempt, ok: false, done: 0, ran: [], error: String(err) } : undefined))
      .then(async (res) => {
        // Given up because the controller stopped while the engine did not answer: the next
        // controller finds the attempt where this one left it, as after a crash (nothing logged).
        const told = res !== undefined && !(this.abandoned && !res.ok);
        // The action's line before the attempt is free for its next action: its `finished` line
        // never comes before this action's `created; started`.
        if (told && !res.ok) log.warn(`${a.attempt}: ${res.error}`);
        const did = told ? activity(a, res.ran, await this.o.store.get(a.attempt)) : undefined;
        if (did) log.info(did);
        this.stale.set(a.attempt, ++this.generation);
        if (admits) this.reserved--;
        if (set !== undefined) {
          const left = (this.reservedBySet.get(set) ?? 1) - 1;
          if (left > 0) this.reservedBySet.set(set, left);
          else this.reservedBySet.delete(set);
        }
        this.inflight.delete(a.attempt);
        this.settleCarried(
          a.attempt,
          batchNo,
          !res
            ? { name: a.attempt, error: 'the controller stopped before carrying it out (the mark is recorded: the next reconcile does)' }
            : { name: a.attempt, ops: a.ops.map((op) => op.type), ...(res.ok ? {} : { error: res.error ?? 'failed' }) },
        );
        // Still waiting for a worker when the controller stopped: never begun, nothing to record;
        // the attempt is where it was, and the next controller takes it up.
        if (!told) return;
        await this.settleAfterWork(a, res, queued);
        // (a failed action's back-off brings it back, no sooner)
        if (this.lookAfterWork.delete(a.attempt) && res.ok) this.queue.add(a.attempt);
        // An attempt may have finished the last run of its revision.
        if (this.o.outcomes) {
          const outcomes = this.o.outcomes;
          void this.o.store
            .loadAll()
            .then((all) => outcomes.check(all.values()))
            .catch((err: unknown) => log.warn(`revision outcome: ${String(err)}`));
        }
        // A run ended or a slot may have freed: let the waiting ones try.
        for (const w of this.waitingForSlot) this.queue.add(w);
      })
      .finally(() => this.o.watcher?.settled?.());
    this.inflight.set(a.attempt, work);
    if (release) void work.then(release, release);
  }

  private async settleAfterWork(a: AttemptAction, res: ActionResult, queued: boolean): Promise<void> {
    if (res.ok) this.failing.delete(a.attempt);
    else this.failing.add(a.attempt);
    if (!res.ok) {
      const failures = this.queue.numRequeues(a.attempt) + 1;
      const nextMs = this.queue.backoffFor(a.attempt);
      const rec = await this.o.store.get(a.attempt);
      if (rec) {
        await this.o.store
          .put({
            ...rec,
            lastError: {
              at: new Date(this.clock.now()).toISOString(),
              message: res.error ?? 'failed',
              failures,
              nextRetryAt: new Date(this.clock.now() + nextMs).toISOString(),
            },
          })
          .catch(() => undefined);
      }
    } else {
      const rec = await this.o.store.get(a.attempt);
      if (rec?.lastError) {
        const { lastError: _e, ...rest } = rec;
        await this.o.store.put(rest).catch(() => undefined);
      }
    }
    this.endWork(a.attempt, queued, outcome(a, res));
  }

  /**
   * The one retry switch (controller-runtime's): every end of work on a key comes here. `queued`:
   * the key was taken from the queue by this batch, so it is the queue's to forget and mark done;
   * an attempt worked on because a full resync planned it only gets its next look scheduled.
   */
  private endWork(key: string, queued: boolean, r: KeyOutcome): void {
    switch (r.type) {
      case 'error': // back off, growing per failure; a success forgets it
        this.queue.addRateLimited(key);
        break;
      case 'requeue-after': // a deadline, TTL or retry back-off the planner asked for
        if (queued) this.queue.forget(key);
        this.queue.addAfter(key, r.ms);
        break;
      case 'done':
        if (queued) this.queue.forget(key);
        break;
      case 'in-flight': // an earlier batch's work holds the key; its end settles it
        break;
    }
    if (queued) this.queue.done(key);
  }

  /**
   * A request of `rerun`, `delete` or `regrade` (request-watch.ts): the attempts' actions under
   * way end first and none begins meanwhile, then their records are marked as the command would
   * mark them (marks.ts), and the answer waits for the batch after the marks and the actions it
   * dispatched for them: it tells what was carried out.
   */
  async carryOut(req: ControllerRequest): Promise<RequestAnswer> {
    const names = [...new Set(req.names)];
    const results = new Map<string, RequestResult>();
    const waits: Promise<RequestResult>[] = [];
    for (const n of names) this.held.set(n, Infinity);
    try {
      for (;;) {
        const under = names.map((n) => this.inflight.get(n)).filter((w) => w !== undefined);
        if (!under.length) break;
        await Promise.allSettled(under);
      }
      const load = await this.specs.specs();
      const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
      const at = new Date(this.clock.now()).toISOString();
      for (const name of names) {
        const rec = await this.o.store.get(name);
        const invalid = load.protectedNames.has(name) || rec?.reason === REASONS.invalidSpec || rec?.reason === REASONS.duplicateName;
        const m = MARKS[req.command]({ name, rec, spec: specs.get(name), invalid, instance: this.o.cfg.instance, at });
        if (m && 'refused' in m) {
          results.set(name, { name, refused: m.refused });
          continue;
        }
        if (m) await this.o.store.put(m);
        const after = this.passes;
        waits.push(
          new Promise<RequestResult>((done) => this.carrying.set(name, [...(this.carrying.get(name) ?? []), { after, done }])).then((r) => {
            results.set(name, r);
            return r;
          }),
        );
      }
    } finally {
      for (const n of names) this.held.set(n, this.passes);
    }
    if (this.stopping) for (const n of [...this.carrying.keys()]) this.settleCarried(n, Infinity, { name: n, error: 'the controller is stopping' });
    for (const n of names) this.queue.add(n);
    await Promise.all(waits);
    return { id: req.id, results: names.map((n) => results.get(n) ?? { name: n, error: 'not carried out' }) };
  }

  /** Settles the requests waiting for `name` that were made before batch `batchNo`. */
  private settleCarried(name: string, batchNo: number, r: RequestResult): void {
    const list = this.carrying.get(name);
    if (!list) return;
    const left = list.filter((w) => w.after >= batchNo);
    for (const w of list) if (w.after < batchNo) w.done(r);
    if (left.length) this.carrying.set(name, left);
    else this.carrying.delete(name);
  }

  /**
   * Stop taking work, finish what is in flight, stop the sources. Attempts keep running. While
   * the engine does not answer, the calls in flight are given up instead of each waiting out its
   * deadline: berth is safe to stop at any step, and the next controller takes the attempts up.
   */
  async stop(): Promise<number> {
    this.stopping = true;
    // no request is taken from now on; those under way are answered once their batches settle (below)
    const requestsClosed = this.requests?.close();
    this.halt.abort(new Error('the controller is stopping'));
    if (this.resyncTimer) this.clock.clearTimeout(this.resyncTimer);
    this.events.close();
    this.imageEvents?.close();
    this.seen.close();
    this.meter.close();
    await this.poller?.stop();
    await this.specs.close();
    this.queue.shutDown();
    const settled = (async () => {
      await this.loopDone;
      await Promise.allSettled([...this.inflight.values()]);
      // requests whose attempts no batch took up: their marks stay, the next controller carries them out
      for (const n of [...this.carrying.keys()])
        this.settleCarried(n, Infinity, { name: n, error: 'the controller stopped before carrying it out (the mark is recorded: the next reconcile does)' });
      await requestsClosed;
    })();
    // A finite run does not own its engine (`reconcile --once --wait` in-process): its calls in
    // flight end by their own deadlines (--engine-timeout) rather than by giving the engine up.
    const down = this.o.finite ? new Promise<never>(() => undefined) : this.health.whenDown();
    const hung = await Promise.race([settled.then(() => false), down.then(() => true)]);
    if (hung) {
      this.abandoned = true;
      this.o.log.warn('the engine does not answer: giving up the engine calls in flight; the next controller takes the attempts up');
      this.engine.abandon?.('the controller is stopping');
      await settled;
    }
    return EXIT.ok;
  }
}

/** How work on a key ended, for the retry switch (Controller.endWork). */
type KeyOutcome = { type: 'done' } | { type: 'requeue-after'; ms: number } | { type: 'error' } | { type: 'in-flight' };

function outcome(a: AttemptAction, res: ActionResult | undefined): KeyOutcome {
  if (res && !res.ok) return { type: 'error' };
  return a.requeueAfterMs !== undefined ? { type: 'requeue-after', ms: a.requeueAfterMs } : { type: 'done' };
}

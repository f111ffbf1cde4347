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
 * Beside the loop: the engine's state kept as an informer keeps it (informer.ts), the requests
 * of `rerun`, `delete` and `regrade` (carrier.ts), pulls, builds and image GC (image-work.ts); a
 * batch observes and plans as a pass does (pass.ts observeAndPlan).
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
 * Actions run in the background, in the two lanes the planner assigns (plan/lanes.ts). Ending a
 * run (a deadline's stop, an exit's harvest, a TTL's removal) has a lane of its own, as wide as
 * --max-running: it never waits behind slow starts, and no attempt's stop (which may wait its
 * whole grace) holds back another's deadline. Everything else is bounded by --workers. An
 * attempt whose batch found its action still under way is looked at again when that action ends.
 */
import { activity, planActivity } from './activity';
import { EXIT } from '../constants';
import type { Engine } from '../engine/types';
import { describeEngineError, isEngineDown } from '../engine/errors';
import { instrumentEngine } from '../engine/wrap';
import type { ActionResult } from '../execute/executor';
import type { GitPoller } from '../git/poller';
import { diskPressure, pressured, type DiskInput } from '../plan/disk-pressure';
import { changesLists } from '../plan/list-effects';
import type { AttemptAction } from '../plan/types';
import type { LoadReport } from '../spec/loader';
import type { ControllerRequest, RequestAnswer } from '../status/requests';
import type { AttemptStatus } from '../status/types';
import { systemClock, type Clock } from '../util/clock';
import type { Logger } from '../util/log';
import { Semaphore } from '../util/pool';
import { RequestCarrier } from './carrier';
import { EngineHealth } from './engine-health';
import { SnapshotCache } from './informer';
import type { ControllerOptions } from './options';
import { ImageWork } from './image-work';
import { WorkEnds } from './key-outcome';
import { executorFor, observeAndPlan, upgradePins } from './pass';
import { QuietAttempts } from './quiet';
import { WorkQueue } from './queue';
import { Reservations } from './reservations';
import { ALL, Sources } from './sources';
import type { SpecErrorLog } from './spec-errors';

export { ALL } from './sources';
export { TARGETED_MAX } from './informer';
export type { ControllerOptions, ControllerWatcher } from './options';

export class Controller {
  readonly queue: WorkQueue;
  /** Whether the engine answers the controller's calls. */
  readonly health: EngineHealth;
  /** The engine, its calls feeding `health`. */
  readonly engine: Engine;
  /** What puts names on the queue (sources.ts). */
  private readonly sources: Sources;
  private readonly clock: Clock;
  private readonly slots: Semaphore;
  /** The ending lane (see the header). */
  private readonly ending: Semaphore;
  private readonly inflight = new Map<string, Promise<void>>();
  /** Aborted on stop: actions still waiting for a worker are dropped, not begun. */
  private readonly halt = new AbortController();
  /** What the controller keeps of each attempt between batches, and the one retry switch (key-outcome.ts). */
  private readonly ends: WorkEnds;
  /** Slots held by starts in flight (reservations.ts). */
  private readonly reserved = new Reservations();
  private loopDone: Promise<void> | undefined;
  /** When the batch under way began (undefined: none). */
  private batchSince: number | undefined;
  /** The engine's calls in flight were given up (stopping while the engine is down). */
  private abandoned = false;
  private passes = 0;
  /** The engine's state as last seen (informer.ts). */
  private readonly cache: SnapshotCache;
  /** Requests of `rerun`, `delete`, `regrade` carried out (carrier.ts). */
  private readonly carrier: RequestCarrier;
  private readonly quiet = new QuietAttempts(); // attempts a resync need not plan again (quiet.ts)
  /** Pulls, builds and image GC (image-work.ts). */
  readonly images: ImageWork;
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
    this.slots = new Semaphore(Math.max(1, o.workers));
    this.ending = new Semaphore(Math.max(1, o.workers, o.cfg.maxRunning));
    this.ends = new WorkEnds({ queue: this.queue, cache: () => this.cache, store: o.store, clock: this.clock });
    this.cache = new SnapshotCache({
      engine: this.engine,
      instance: o.cfg.instance,
      clock: this.clock,
      finite: o.finite === true,
      queue: (key) => this.queue.add(key),
      exitSeen: (key, seen) => {
        this.queue.add(key);
        // The exit frees a slot now: the batch that plans its finish admits a waiting attempt too, not after the harvest.
        if (seen) this.ends.lookForSlots();
      },
      streamEpoch: () => this.sources.events.epoch,
      imagesEpoch: () => this.sources.imagesEpoch,
    });
    this.carrier = new RequestCarrier({
      store: o.store,
      instance: o.cfg.instance,
      clock: this.clock,
      inflight: this.inflight,
      passes: () => this.passes,
      specs: () => this.sources.specs.specs(),
      queue: (n) => this.queue.add(n),
      stopping: () => this.stopping,
    });
    this.images = new ImageWork(
      o,
      this.engine,
      this.clock,
      this.queue,
      () => this.ends.lookForSlots(),
      this.reserved,
      () => this.cache.imagesChanged(),
    );
    this.sources = new Sources({
      ...o,
      engine: this.engine,
      clock: this.clock,
      finite: o.finite === true,
      signal: this.halt.signal,
      queue: (key) => this.queue.add(key),
      engineEvent: (key, ev) => this.cache.event(key, ev),
      imagesChanged: () => this.cache.imagesChanged(),
      carryOut: (req) => this.carrier.carryOut(req),
      batchAge: () => (this.batchSince === undefined ? undefined : this.clock.now() - this.batchSince),
    });
  }

  get engineConnected(): boolean {
    return this.sources.events.connected;
  }

  /** The spec errors of the last load, each logged once (spec-errors.ts). */
  get specErrors(): SpecErrorLog {
    return this.sources.specErrors;
  }

  /** Fetches the git source, when there is one. */
  get poller(): GitPoller | undefined {
    return this.sources.poller;
  }

  async start(): Promise<void> {
    await this.sources.start();
    this.queue.add(ALL);
    this.loopDone = this.loop();
  }

  /** Nothing queued, no batch under way, no action in flight. */
  idle(): boolean {
    return this.queue.len() === 0 && this.queue.processingLen() === 0 && this.inflight.size === 0;
  }

  /** Whether the attempt's last plan was to wait, or its last action failed and will be tried again. */
  pending(attempt: string): boolean {
    return this.ends.pending(attempt);
  }

  /** The specs as last loaded (undefined before the first batch). */
  latestLoad(): LoadReport | undefined {
    return this.sources.specs.latest();
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

  /**
   * What the controller holds in memory, for its live report page: the last spec load (the
   * folder is read only before the first) and the status records (the store's copy: this
   * controller is their only writer).
   */
  async view(): Promise<{ load: LoadReport; statuses: ReadonlyMap<string, AttemptStatus> }> {
    const [load, statuses] = await Promise.all([this.sources.specs.latest() ?? this.sources.specs.specs(), this.o.store.loadAll()]);
    return { load, statuses };
  }

  /** One batch: observe, plan the batch's keys, dispatch their actions. */
  private async reconcile(batch: string[]): Promise<void> {
    const started = this.clock.now();
    const batchNo = ++this.passes;
    const id = `${batchNo.toString(36)}-${started.toString(36)}`;
    const log = this.o.log.child({ reconcileId: id });
    const all = batch.includes(ALL);
    const scope = this.o.only;
    const keys = new Set(batch.filter((k) => k !== ALL && (!scope || scope.has(k))));
    // a run over some attempts only: the others' news is let go
    if (scope) for (const k of batch) if (k !== ALL && !scope.has(k)) this.ends.end(k, true, { type: 'done' });
    if (scope && !all && keys.size === 0) return;
    let load: LoadReport;
    try {
      // No invalidate(): this controller holds the instance's lock, so it is the only writer and its copy is current.
      // Admissions in flight when the lists go out hold their slots for this batch, even if they end before it plans: what they started may not be listed.
      const busy = new Set(this.inflight.keys());
      const resync = all && this.synced && !scope && !this.o.finite; // its quiet attempts are not planned again (quiet.ts)
      const o = await observeAndPlan(this.o.cfg, this.engine, this.o.store, {
        ...(resync ? { only: (l: LoadReport, st: ReadonlyMap<string, AttemptStatus>, sn) => this.quiet.toPlan(l, st, sn) } : {}),
        load: () => this.sources.specs.specs(),
        observe: (known) => this.cache.observe(all, keys, known),
        now: () => this.clock.now(),
        extra: {
          ...(all ? (scope ? { only: scope } : {}) : { only: keys }),
          ...this.reserved.now(),
          diskUsage: this.sources.meter.current(),
        },
      });
      const { statuses, snapshot, plan: p } = o;
      load = o.load;
      this.quiet.note(p, all ? (resync ? this.quiet.planned : undefined) : keys, load, statuses, snapshot);
      await upgradePins(this.o.store, load);
      for (const line of planActivity(p)) log.info(line);
      this.images.planned(p, all, load.specs, statuses); // pulls, builds, image GC (image-work.ts)
      this.notePressure(o.disk);
      if (this.o.outcomes) void this.o.outcomes.check(statuses.values(), load).catch((err: unknown) => log.warn(`revision outcome: ${String(err)}`));
      if (load.revision !== undefined)
        void this.o.git?.applied(load.revision, load.errors).catch((err: unknown) => log.warn(`git source status: ${String(err)}`));
      if (all) {
        // in sync (start-up, or the engine back): a line for whoever waits for it (an operator, the bench)
        if (!this.synced)
          log.info(`synced: a full pass planned over ${load.specs.length} specs and ${statuses.size} status records`, { ms: this.clock.now() - started });
        this.synced = true;
        this.queue.forget(ALL); // a failed resync's back-off starts over
      }
      this.o.metrics?.observeLoad(load.errors.length, statuses.values());
      const byName = new Map(p.actions.map((a) => [a.attempt, a]));
      const handled = new Set<string>();
      for (const a of p.actions) {
        if (this.carrier.holds(a.attempt, batchNo) || busy.has(a.attempt)) {
          this.ends.busy(a.attempt); // in flight from an earlier batch (or a request marks it): looked at again when it ends
          continue;
        }
        this.ends.planned(a);
        handled.add(a.attempt);
        this.dispatch(a, keys.has(a.attempt), log, load.revision, batchNo);
      }
      // a request's attempt the plan has nothing for: nothing to carry out
      for (const n of this.carrier.waitingFor()) if ((all || keys.has(n)) && !byName.has(n)) this.carrier.settle(n, batchNo, { name: n, ops: [] });
      this.o.watcher?.planned?.(load, p);
      for (const k of keys) this.cache.lookAgainIfLagging(k, snapshot, log);
      for (const k of keys) if (!handled.has(k)) this.ends.end(k, true, byName.has(k) ? { type: 'in-flight' } : { type: 'done' });
      this.o.metrics?.reconciled('success', (this.clock.now() - started) / 1000);
    } catch (err) {
      this.cache.invalidate();
      const msg = describeEngineError(err);
      if (this.abandoned) log.debug(`reconcile stopped: ${msg}`);
      else log.error(`reconcile failed: ${msg}`);
      this.o.metrics?.reconciled('error', (this.clock.now() - started) / 1000);
      for (const k of keys) this.ends.end(k, true, { type: 'error' });
      for (const n of this.carrier.waitingFor())
        if (all || keys.has(n))
          this.carrier.settle(n, batchNo, { name: n, error: `reconcile failed: ${msg} (the mark is recorded: the controller carries it out when it can)` });
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

  /** The disk readings of a batch: kept for /readyz, and the metrics (berth_disk_pressure, berth_disk_free_ratio). */
  private notePressure(disk: DiskInput | undefined): void {
    if (!disk) return;
    const was = this.diskPressure;
    this.diskPressure = diskPressure(disk);
    if (this.diskPressure && this.diskPressure !== was) this.o.log.warn(this.diskPressure);
    else if (!this.diskPressure && was) this.o.log.info('disk pressure is over: new runs start again');
    this.o.metrics?.observeDisk(disk.readings, pressured(disk));
  }

  /**
   * Runs one attempt's action in the background, bounded by --workers. With a git source, the
   * revision it was planned from is held until it ends: its fixtures stay readable while it
   * waits for a worker, also if later revisions are switched to meanwhile.
   */
  private dispatch(a: AttemptAction, queued: boolean, log: Logger, revision: string | undefined, batchNo: number): void {
    if (a.ops.length === 0) {
      this.ends.nothingToDo(a, queued);
      this.carrier.settle(a.attempt, batchNo, { name: a.attempt, ops: [] });
      return;
    }
    const release = revision !== undefined ? this.o.git?.hold(revision) : undefined;
    const unreserve = this.reserved.take(a);
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
        // Given up as the controller stopped with the engine down: the next finds the attempt where this one left it (as after a crash; nothing logged).
        const told = res !== undefined && !(this.abandoned && !res.ok);
        // The action's line before the attempt is free for its next: its `finished` never comes before this action's `created; started`.
        if (told && !res.ok) log.warn(`${a.attempt}: ${res.error}`);
        const did = told ? activity(a, res.ran, await this.o.store.get(a.attempt)) : undefined;
        if (did) log.info(did);
        // listed again, unless the action only read the engine (a finish, an attestation, a record) and the kept lists are current
        this.cache.actionEnded(a.attempt, !res || changesLists(a.ops, res.ran, res.ok, res.outcome));
        unreserve();
        this.inflight.delete(a.attempt);
        this.carrier.settle(
          a.attempt,
          batchNo,
          !res
            ? { name: a.attempt, error: 'the controller stopped before carrying it out (the mark is recorded: the next reconcile does)' }
            : { name: a.attempt, ops: a.ops.map((op) => op.type), ...(res.ok ? {} : { error: res.error ?? 'failed' }) },
        );
        // Still waiting for a worker when the controller stopped: never begun, nothing to record; the next controller takes it up.
        if (!told) return;
        await this.ends.actionEnded(a, res, queued);
        // An attempt may have finished the last run of its revision.
        if (this.o.outcomes) {
          const outcomes = this.o.outcomes;
          void this.o.store
            .loadAll()
            .then((all) => outcomes.check(all.values(), this.latestLoad()))
            .catch((err: unknown) => log.warn(`revision outcome: ${String(err)}`));
        }
        // A run ended or a slot may have freed: let the waiting ones try.
        this.ends.lookForSlots();
      })
      .finally(() => this.o.watcher?.settled?.());
    this.inflight.set(a.attempt, work);
    if (release) void work.then(release, release);
  }

  /** The specs changed where no watcher looks (a finite run) or before it would: load them again, the changed names queued. */
  reloadSpecs(): void {
    this.sources.specs.reload();
  }

  /** A request of `rerun`, `delete`, `regrade` or `release`, carried out (carrier.ts). */
  carryOut(req: ControllerRequest): Promise<RequestAnswer> {
    return this.carrier.carryOut(req);
  }

  /**
   * Stop taking work, finish what is in flight, stop the sources. Attempts keep running. While
   * the engine does not answer, the calls in flight are given up instead of each waiting out its
   * deadline: berth is safe to stop at any step, and the next controller takes the attempts up.
   */
  async stop(): Promise<number> {
    this.stopping = true;
    // no request is taken from now on; those under way are answered once their batches settle (below)
    const requestsClosed = this.sources.closeRequests();
    this.halt.abort(new Error('the controller is stopping'));
    this.cache.close();
    await this.images.close();
    await this.sources.close();
    this.queue.shutDown();
    const settled = (async () => {
      await this.loopDone;
      await Promise.allSettled([...this.inflight.values()]);
      // requests whose attempts no batch took up: their marks stay, the next controller carries them out
      this.carrier.settleAll(Infinity, 'the controller stopped before carrying it out (the mark is recorded: the next reconcile does)');
      await requestsClosed;
    })();
    // A finite run does not own its engine (`reconcile --once --wait` in-process): its calls in
    // flight end by their own deadlines (--engine-timeout) rather than by giving the engine up.
    const down = this.o.finite ? new Promise<never>(() => undefined) : this.health.whenDown();
    const hung = await Promise.race([settled.then(() => false), down.then(() => true)]);
    if (hung) {
      this.abandoned = true;
      this.o.log.warn('the engine does not answer: giving up the engine calls in flight; the next controller takes the attempts up');
      this.engine.abandon('the controller is stopping');
      await settled;
    }
    return EXIT.ok;
  }
}

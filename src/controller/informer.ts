/**
 * The controller's snapshot cache, as an informer keeps one: a full list (4 calls) at start, on
 * every resync and after the event stream reconnects; in between, a batch of a few keys lists
 * only those attempts (plus any whose own actions ended since they were last listed) and merges
 * them into the kept snapshot. Every change of an attempt's containers queues its key (engine
 * events, the folder, the controller's own actions), so the rest of the snapshot stays current,
 * and the planner still sees every attempt (admission counts what runs everywhere). By the same
 * rule a key queued only to be planned again (a slot freed, a time come) is not listed while
 * nothing was told of it since its last listing (`replan`), and the engine's images and boot are
 * kept until image news or a break of the event stream (`engineWide`).
 *
 * A container's `die` queues its key once an inspect of that container has answered (the engine
 * answers it once it has set the state, while its lists lag): a stopped state is laid over the
 * lists until they show it (ExitWatch), so the batch plans the finish from what the engine said.
 * An exit or removal the lists keep lagging is looked at again shortly (client-go's controller
 * expectations); a finite run (`reconcile --once --wait`) has no resync, and looks until they show it.
 */
import { RUNNING_STATES } from '../constants';
import type { Engine, EngineEvent, ImageSummary } from '../engine/types';
import { engineWideOf, mergeSnapshot, observe, observeAttempts, type EngineWide } from '../observe/snapshot';
import type { Snapshot } from '../observe/types';
import type { RecordedContainers } from '../ownership';
import type { Clock } from '../util/clock';
import type { Logger } from '../util/log';
import { ExitWatch } from './exit-watch';

/** Looks again for an exit the lists do not show yet: after 50 ms, doubling to 2 s, this many times (~8 s). */
const EXIT_LOOKS = 9;

/** A batch of at most this many attempts to look at lists only them; a bigger one lists everything. */
export const TARGETED_MAX = 8;

export interface SnapshotCacheOptions {
  engine: Engine;
  instance: string;
  clock: Clock;
  /** A finite run: an exit the lists lag is looked at until they show it. */
  finite: boolean;
  /** Look at attempt `key` (queue it). */
  queue(key: string): void;
  /** The inspect of a `die` of `key` has answered: `seen`, it showed the container stopped. */
  exitSeen(key: string, seen: boolean): void;
  /**
   * The engine's event stream, while it has been connected without a break: a number that changes
   * at every break; undefined while it is not connected. A boot read in one epoch holds for it (a
   * restarted engine breaks the stream).
   */
  streamEpoch(): number | undefined;
  /** The same of the engine's image events: images listed in one epoch stay current for it, but for the image news (`imagesChanged`). */
  imagesEpoch(): number | undefined;
}

export class SnapshotCache {
  /** The engine's state as last listed; undefined: list everything next time. */
  private snapshot: Snapshot | undefined;
  /** Attempts whose own actions ended since they were last listed, with the generation it happened in. */
  private readonly stale = new Map<string, number>();
  private generation = 0;
  /**
   * Containers the engine said died or were destroyed, by attempt, until the lists show it: the
   * engine sends the event before its lists change, and for a container on a network of its own
   * the lists can lag by seconds (the network is taken down first).
   */
  private readonly exits = new Map<string, { id: string; gone: boolean; looks: number }>();
  /** Exits seen by inspecting the container on its `die`, laid over the lists until they show them. */
  private readonly seen: ExitWatch;
  /**
   * Attempts whose only news since they were last listed is an exit such an inspect saw: a batch
   * plans them from the kept lists with the exit laid over them, without listing them again. Any
   * other event of the attempt, its own action's end (stale) or a full list ends that.
   */
  private readonly inspectedOnly = new Set<string>();
  /**
   * Attempts queued to be planned again for no news of their own resources (a slot or a set's room
   * may have freed; their own action, which changed nothing listed, ended): a batch plans them from
   * the kept lists unless the engine told something of them since they were last listed (`news`),
   * an action of theirs that changed the engine ended (`stale`) or an exit of theirs still lags
   * the lists (`exits`). Without this every run's end would list every waiting attempt (hundreds:
   * a whole list of the instance each time).
   */
  private readonly replanOnly = new Set<string>();
  /** Attempts the engine told something of (an event) since they were last listed, with the generation it happened in. */
  private readonly news = new Map<string, number>();
  /** The engine's images as last listed, the generation the list went out in and the image events' epoch; undefined: list them next time. */
  private images: { list: readonly ImageSummary[]; upTo: number; epoch: number } | undefined;
  /** The generation of the last news of the engine's images (an image event, a pull or build of berth's ended). */
  private imagesNewsAt = 0;
  /** The engine's boot as last read, and the event stream's epoch it was read in. */
  private boot: { value: NonNullable<Snapshot['boot']>; epoch: number } | undefined;

  constructor(private readonly o: SnapshotCacheOptions) {
    // Whatever the inspect said (stopped, still running, gone, no answer), the batch looks; a
    // stopped container is laid over its lists (observe), the rest is the lists' (lookAgainIfLagging).
    this.seen = new ExitWatch(
      o.engine,
      () => o.clock.now(),
      (key, seen) => {
        if (seen) this.inspectedOnly.add(key);
        o.exitSeen(key, seen);
      },
    );
  }

  /** An engine event of attempt `key`: what it tells, and when to look. */
  event(key: string, ev: EngineEvent): void {
    this.inspectedOnly.delete(key); // news the lists may tell (a die: once its inspect has answered)
    this.news.set(key, ++this.generation);
    if (ev.type === 'container' && (ev.action === 'die' || ev.action === 'destroy')) {
      this.exits.set(key, { id: ev.id, gone: ev.action === 'destroy', looks: 0 });
    }
    // A die: look once the engine has set the container's state, as an inspect of it says (ExitWatch).
    if (ev.type === 'container' && ev.action === 'die') return this.seen.died(key, ev.id);
    // The engine logs an event before its lists show the change: look a little later (and again, for exits).
    this.o.clock.setTimeout(() => this.o.queue(key), 20);
  }

  /**
   * An action of `name` ended: what it changed may come after the lists, so it is listed again.
   * `changedLists` false: it only read the engine (plan/list-effects.ts).
   */
  actionEnded(name: string, changedLists = true): void {
    // An action that changed nothing listed (a finish, say) still lists its attempt when the kept
    // lists are behind what the engine told of it (a `die` planned from its inspect alone): else
    // they would show its container running once that inspect no longer lies over them.
    if (!changedLists && !this.news.has(name) && !this.exits.has(name)) return;
    this.stale.set(name, ++this.generation);
  }

  /** The engine's images may have changed (an image event, its stream back after a break, a pull or build ended): the next batch lists them. */
  imagesChanged(): void {
    this.imagesNewsAt = ++this.generation;
  }

  /** Whether the kept images are as the engine holds them, as far as its events and berth's own image work tell. */
  private imagesCurrent(): boolean {
    const epoch = this.o.imagesEpoch();
    return this.images !== undefined && this.imagesNewsAt <= this.images.upTo && epoch !== undefined && this.images.epoch === epoch;
  }

  /**
   * The images and boot for one batch: the kept ones while nothing could have changed them (no
   * image news since the images were listed; the event stream unbroken since the boot was read),
   * else asked of the engine and kept. A full list (start, resync, reconnect, a failed batch) asks both.
   */
  private engineWide(full: boolean): EngineWide {
    const asked = engineWideOf(this.o.engine);
    const at = this.generation;
    const epoch = this.o.streamEpoch();
    const kept = this.images;
    const keptImages = !full && kept !== undefined && this.imagesCurrent() ? kept.list : undefined;
    const keptBoot = !full && epoch !== undefined && this.boot?.epoch === epoch ? this.boot.value : undefined;
    return {
      images: async () => {
        if (keptImages) return keptImages;
        const imagesEpoch = this.o.imagesEpoch();
        const list = await asked.images();
        // kept only when the image events were followed all along (what a break hid, no event tells)
        if (imagesEpoch !== undefined && this.o.imagesEpoch() === imagesEpoch && (!this.images || this.images.upTo <= at))
          this.images = { list, upTo: at, epoch: imagesEpoch };
        return list;
      },
      boot: async () => {
        if (keptBoot) return keptBoot;
        const value = await asked.boot();
        // kept only when the stream was connected all along (a break meanwhile: the engine may have restarted after it answered)
        if (value && epoch !== undefined && this.o.streamEpoch() === epoch) this.boot = { value, epoch };
        return value;
      },
      calls: () => (keptImages ? 0 : 1),
    };
  }

  /** `key` is queued (by the caller) to be planned again, for no news of its own resources: see `replanOnly`. */
  replan(key: string): void {
    this.replanOnly.add(key);
  }

  /** Whether the kept lists of `key` are as current as the engine's events tell (nothing since it was last listed). */
  private current(key: string): boolean {
    return !this.news.has(key) && !this.stale.has(key) && !this.exits.has(key);
  }

  /** A batch failed: the next one lists everything. */
  invalidate(): void {
    this.snapshot = undefined;
    this.images = undefined;
    this.boot = undefined;
  }

  /**
   * The snapshot for one batch: everything, or the batch's attempts (and the stale ones) merged
   * into the kept snapshot. Keeps the lists' result, and returns it with the exits seen by
   * inspection laid over it.
   */
  async observe(all: boolean, keys: ReadonlySet<string>, known: Promise<RecordedContainers>): Promise<Snapshot> {
    const { engine, instance, clock } = this.o;
    const upTo = this.generation;
    const refresh = new Set([...keys, ...this.stale.keys()]);
    const kept = this.snapshot;
    if (!all && kept) for (const k of keys) if (this.inspectedOnly.has(k) && !this.stale.has(k) && this.seen.names(kept, k)) refresh.delete(k);
    if (!all && kept) for (const k of keys) if (this.replanOnly.has(k) && this.current(k)) refresh.delete(k);
    for (const k of keys) this.replanOnly.delete(k);
    const targeted = !all && kept !== undefined && refresh.size <= TARGETED_MAX;
    // what is listed now, or planned from the kept lists now, needs a new inspect to skip its lists again
    if (targeted) for (const k of [...keys, ...refresh]) this.inspectedOnly.delete(k);
    else this.inspectedOnly.clear();
    let snapshot: Snapshot;
    if (!targeted) snapshot = await observe(engine, instance, known, clock.now(), this.engineWide(true));
    // (no attempt to list, but image news since the images were listed: they alone)
    else if (refresh.size > 0 || this.imagesNewsAt > (this.images?.upTo ?? -1))
      snapshot = mergeSnapshot(kept, await observeAttempts(engine, instance, [...refresh], known, clock.now(), this.engineWide(false)), refresh);
    else {
      await known; // no lists to go with it: still the records' failure is this batch's
      snapshot = kept;
    }
    // What ended while the lists were out stays stale: its change may have come after them.
    for (const [name, gen] of [...this.stale]) if (gen <= upTo && (!targeted || refresh.has(name))) this.stale.delete(name);
    // So does the news told while they were out (an event comes before the lists show its change).
    for (const [name, gen] of [...this.news]) if (gen <= upTo && (!targeted || refresh.has(name))) this.news.delete(name);
    // The lists are kept as they are; the planner (and the look again) see the exits inspected on their `die` too.
    this.snapshot = snapshot;
    return this.seen.apply(snapshot);
  }

  /** An exit the engine reported but the lists do not show yet: queue the attempt again shortly. */
  lookAgainIfLagging(key: string, snapshot: Snapshot, log: Logger): void {
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
    this.o.clock.setTimeout(() => this.o.queue(key), Math.min(2000, 50 * 2 ** Math.min(e.looks++, EXIT_LOOKS)));
  }

  close(): void {
    this.seen.close();
  }
}

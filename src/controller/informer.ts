/**
 * The controller's snapshot cache, as an informer keeps one: a full list (4 calls) at start, on
 * every resync and after the event stream reconnects; in between, a batch of a few keys lists
 * only those attempts (plus any whose own actions ended since they were last listed) and merges
 * them into the kept snapshot. Every change of an attempt's containers queues its key (engine
 * events, the folder, the controller's own actions), so the rest of the snapshot stays current,
 * and the planner still sees every attempt (admission counts what runs everywhere).
 *
 * A container's `die` queues its key once an inspect of that container has answered (the engine
 * answers it once it has set the state, while its lists lag): a stopped state is laid over the
 * lists until they show it (ExitWatch), so the batch plans the finish from what the engine said.
 * An exit or removal the lists keep lagging is looked at again shortly (client-go's controller
 * expectations); a finite run (`reconcile --once --wait`) has no resync, and looks until they show it.
 */
import { RUNNING_STATES } from '../constants';
import type { Engine, EngineEvent } from '../engine/types';
import { mergeSnapshot, observe, observeAttempts } from '../observe/snapshot';
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
    if (ev.type === 'container' && (ev.action === 'die' || ev.action === 'destroy')) {
      this.exits.set(key, { id: ev.id, gone: ev.action === 'destroy', looks: 0 });
    }
    // A die: look once the engine has set the container's state, as an inspect of it says (ExitWatch).
    if (ev.type === 'container' && ev.action === 'die') return this.seen.died(key, ev.id);
    // The engine logs an event before its lists show the change: look a little later (and again, for exits).
    this.o.clock.setTimeout(() => this.o.queue(key), 20);
  }

  /** An action of `name` ended: what it changed may come after the lists, so it is listed again. */
  actionEnded(name: string): void {
    this.stale.set(name, ++this.generation);
  }

  /** A batch failed: the next one lists everything. */
  invalidate(): void {
    this.snapshot = undefined;
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
    const targeted = !all && kept !== undefined && refresh.size <= TARGETED_MAX;
    // what is listed now, or planned from the kept lists now, needs a new inspect to skip its lists again
    if (targeted) for (const k of [...keys, ...refresh]) this.inspectedOnly.delete(k);
    else this.inspectedOnly.clear();
    let snapshot: Snapshot;
    if (!targeted) snapshot = await observe(engine, instance, known, clock.now());
    else if (refresh.size > 0) snapshot = mergeSnapshot(kept, await observeAttempts(engine, instance, [...refresh], known, clock.now()), refresh);
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

/**
 * ExitWatch: on a container's `die` event, one inspect of the container the event names; what
 * it saw (src/observe/exits.ts) is kept and laid over the snapshots that still list the
 * container running, until the lists catch up. The engine answers that inspect once it has set
 * the container's state (it holds the container while it handles the exit; measured here, the
 * first inspect asked on the event said `exited` every time), so whoever follows the events
 * looks again exactly when there is something to see, instead of listing while the engine is
 * still busy and backing off (issue 18: the lists lag the `die` event by up to seconds).
 *
 * The controller (its event handler and its batches) and `reconcile --once --wait` (its Waker,
 * its passes and side passes) use it; the planner only ever sees a snapshot.
 */
import type { Engine } from '../engine/types';
import { listsShow, overlayExits, seenExit, type SeenExit } from '../observe/exits';
import type { Snapshot } from '../observe/types';

/**
 * An exit seen by inspection is laid over lists taken at most this long after it: the lists'
 * lag is seconds, not more. After that the lists decide again (a container someone started
 * again by hand runs, whatever an old inspect said).
 */
export const EXIT_OVERLAY_MS = 10_000;

export class ExitWatch {
  /** By container id. */
  private readonly seen = new Map<string, SeenExit>();
  private closed = false;

  /**
   * @param settled called once the inspect of a `die` has answered: `seen` when it showed the
   *        container stopped (kept, and laid over the lists), false when it still ran, was gone
   *        or the engine did not answer (the lists decide, as without it); with the container's id.
   */
  constructor(
    private readonly engine: Engine,
    private readonly now: () => number,
    private readonly settled: (attempt: string, seen: boolean, id: string) => void,
  ) {}

  /** A `die` event of container `id` of `attempt`: inspect it. */
  died(attempt: string, id: string): void {
    void this.engine.containers
      .inspect(id)
      .then(
        (d) => {
          const e = seenExit(attempt, id, d, this.now());
          if (e && !this.closed) this.seen.set(id, e);
          return e !== undefined;
        },
        () => false,
      )
      .then((seen) => {
        if (!this.closed) this.settled(attempt, seen, id);
      });
  }

  /** The snapshot with the exits seen laid over it; those its lists show (or that are too old to) are forgotten. */
  apply(s: Snapshot): Snapshot {
    for (const [id, e] of [...this.seen]) if (listsShow(s, e) || s.at - e.at > EXIT_OVERLAY_MS) this.seen.delete(id);
    return this.seen.size ? overlayExits(s, this.seen.values()) : s;
  }

  /** Whether an exit seen of `attempt` names a container `s` lists (so that laying it over `s` tells the attempt's news). */
  names(s: Snapshot, attempt: string): boolean {
    const listed = s.attempts.get(attempt)?.containers;
    if (!listed) return false;
    for (const e of this.seen.values()) if (e.attempt === attempt && listed.some((c) => c.id === e.id)) return true;
    return false;
  }

  /** How many exits are laid over the lists now (tests, metrics). */
  get size(): number {
    return this.seen.size;
  }

  close(): void {
    this.closed = true;
    this.seen.clear();
  }
}

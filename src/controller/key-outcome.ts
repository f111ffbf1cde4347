/**
 * How work on a key ended, and the controller's one retry switch (controller-runtime's) every end
 * of work comes to, with what the controller keeps of each attempt between batches: whether its
 * last plan waited (for a slot), whether its last action failed, whether a batch found it busy.
 */
import type { ActionResult } from '../execute/executor';
import type { AttemptAction } from '../plan/types';
import type { StatusStore } from '../status/store';
import type { Clock } from '../util/clock';
import type { SnapshotCache } from './informer';
import { clearFailure, noteFailure } from './last-error';
import type { WorkQueue } from './queue';

/** How work on a key ended, for the retry switch (WorkEnds.end). */
export type KeyOutcome = { type: 'done' } | { type: 'requeue-after'; ms: number } | { type: 'error' } | { type: 'in-flight' };

export function outcome(a: AttemptAction, res: ActionResult | undefined): KeyOutcome {
  if (res && !res.ok) return { type: 'error' };
  return a.requeueAfterMs !== undefined ? { type: 'requeue-after', ms: a.requeueAfterMs } : { type: 'done' };
}

export class WorkEnds {
  /** Attempts whose last plan waited for a slot (or a set's room): a run's end looks at them again. */
  private readonly waitingForSlot = new Set<string>();
  /** Attempts whose last plan was to wait (for a slot, a set's room, a retry's back-off). */
  private readonly waiting = new Set<string>();
  /** Attempts whose last action failed (tried again after a back-off). */
  private readonly failing = new Set<string>();
  /** Attempts a batch found busy: looked at again when their action ends. */
  private readonly lookAfterWork = new Set<string>();

  constructor(private readonly o: { queue: WorkQueue; cache: () => SnapshotCache; store: StatusStore; clock: Clock }) {}

  /** The plan's action for an attempt, handed out now. */
  planned(a: AttemptAction): void {
    if (a.waitsForSlot) this.waitingForSlot.add(a.attempt);
    else this.waitingForSlot.delete(a.attempt);
    if (a.kind === 'wait') this.waiting.add(a.attempt);
    else this.waiting.delete(a.attempt);
  }

  /** A batch found the attempt's action still under way (or a request marks it): looked at again when it ends. */
  busy(name: string): void {
    this.lookAfterWork.add(name);
  }

  /** Whether the attempt's last plan was to wait, or its last action failed and will be tried again. */
  pending(name: string): boolean {
    return this.waiting.has(name) || this.failing.has(name);
  }

  /**
   * A slot (or a set's room) may have freed: every attempt waiting for one is looked at again (the
   * planner admits in its order, and only it knows which can go). A slot is no news of their own
   * resources: their batch plans them from the kept lists (informer.ts `replan`).
   */
  lookForSlots(): void {
    for (const w of this.waitingForSlot) {
      this.o.cache().replan(w);
      this.o.queue.add(w);
    }
  }

  /** An action with nothing to do. */
  nothingToDo(a: AttemptAction, queued: boolean): void {
    this.failing.delete(a.attempt);
    this.end(a.attempt, queued, outcome(a, undefined));
  }

  /** An action ended (`res`): its failure noted or cleared, its key's next look, and the look a batch that found it busy asked for. */
  async actionEnded(a: AttemptAction, res: ActionResult, queued: boolean): Promise<void> {
    if (res.ok) this.failing.delete(a.attempt);
    else this.failing.add(a.attempt);
    if (res.ok) await clearFailure(this.o.store, a.attempt);
    else {
      const e = { message: res.error ?? 'failed', failures: this.o.queue.numRequeues(a.attempt) + 1, nextMs: this.o.queue.backoffFor(a.attempt) };
      await noteFailure(this.o.store, a.attempt, this.o.clock.now(), e);
    }
    this.end(a.attempt, queued, outcome(a, res));
    // (a failed action's back-off brings it back, no sooner)
    if (this.lookAfterWork.delete(a.attempt) && res.ok) {
      this.o.cache().replan(a.attempt); // (what changed meanwhile is its news, or its action's: listed)
      this.o.queue.add(a.attempt);
    }
  }

  /**
   * The one retry switch: every end of work on a key comes here. `queued`: the key was taken from
   * the queue by this batch, so it is the queue's to forget and mark done; an attempt worked on
   * because a full resync planned it only gets its next look scheduled.
   */
  end(key: string, queued: boolean, r: KeyOutcome): void {
    const queue = this.o.queue;
    switch (r.type) {
      case 'error': // back off, growing per failure; a success forgets it
        queue.addRateLimited(key);
        break;
      case 'requeue-after': // a deadline, TTL or retry back-off the planner asked for
        if (queued) queue.forget(key);
        this.o.cache().replan(key); // a time come is no news of its resources (what the engine told meanwhile is)
        queue.addAfter(key, r.ms);
        break;
      case 'done':
        if (queued) queue.forget(key);
        break;
      case 'in-flight': // an earlier batch's work holds the key; its end settles it
        break;
    }
    if (queued) queue.done(key);
  }
}

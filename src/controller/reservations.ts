/**
 * Running slots held by the controller's starts in flight: an action that starts a run
 * (AttemptAction.takesSlot) holds one, and its set's room, from its dispatch until it ends, also
 * if it ends before the next batch plans (what it started may not be in that batch's lists yet).
 * A batch plans with the count as the lists went out (plan/input.ts reservedSlots, reservedBySet).
 */
import type { AttemptAction } from '../plan/types';

export class Reservations {
  private held = 0;
  private readonly bySet = new Map<string, number>();
  private readonly released: (() => void)[] = [];

  /** Starts in flight now. */
  get starting(): number {
    return this.held;
  }

  /** Called whenever a start in flight ends (the puller's prefetches wait for them: puller.ts). */
  onRelease(fn: () => void): void {
    this.released.push(fn);
  }

  /** The counts a batch plans with (a copy: actions end while it plans). */
  now(): { reservedSlots: number; reservedBySet: Map<string, number> } {
    return { reservedSlots: this.held, reservedBySet: new Map(this.bySet) };
  }

  /** Holds a slot for `a` when it takes one; returns its release (called once, when the action ends). */
  take(a: AttemptAction): () => void {
    if (!a.takesSlot) return () => undefined;
    const set = a.set;
    this.held++;
    if (set !== undefined) this.bySet.set(set, (this.bySet.get(set) ?? 0) + 1);
    return () => {
      this.held--;
      if (set !== undefined) {
        const left = (this.bySet.get(set) ?? 1) - 1;
        if (left > 0) this.bySet.set(set, left);
        else this.bySet.delete(set);
      }
      for (const fn of this.released) fn();
    };
  }
}

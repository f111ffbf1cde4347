/**
 * Synchronous work in slices: a walk that reads the file system with the synchronous calls (a
 * hundred thousand async lstats cost 4-5x more on a loaded 2-core machine) gives the event loop
 * back once it has held it for a slice, so a controller keeps serving everything else meanwhile.
 */
import { nextTurn } from './pool';

export class Slicer {
  private start = performance.now();

  /** `ms`: the longest the event loop is held at once (plus the one call under way). */
  constructor(private readonly ms = 5) {}

  /** Gives the event loop back once the slice is used up (then stops if `signal` was aborted meanwhile). */
  async tick(signal?: AbortSignal): Promise<void> {
    if (performance.now() - this.start < this.ms) return;
    await nextTurn();
    signal?.throwIfAborted();
    this.start = performance.now();
  }
}

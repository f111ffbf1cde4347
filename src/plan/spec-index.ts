/**
 * The specs of a load by name, made once per load (issue 55): a controller's batch plans a few
 * queued attempts among 100,000 specs, and the specs' array stays the same object from batch to
 * batch until the folder changes; finding the queued ones and asking whether a name is declared
 * were a walk over every spec per batch. A memo of the input, keyed by the array itself: the
 * planner stays a function of its input.
 */
import type { LoadedSpec } from '../spec/types';

export interface SpecIndex {
  /** Each spec's position in the array, by name. */
  readonly at: ReadonlyMap<string, number>;
}

const memo = new WeakMap<readonly LoadedSpec[], SpecIndex>();

export function specIndex(specs: readonly LoadedSpec[]): SpecIndex {
  let x = memo.get(specs);
  if (!x) {
    const at = new Map<string, number>();
    specs.forEach((s, i) => at.set(s.spec.name, i));
    x = { at };
    memo.set(specs, x);
  }
  return x;
}

/** The specs named in `only`, in the array's order (as `specs.filter(s => only.has(name))` gives them). */
export function specsNamed(specs: readonly LoadedSpec[], only: ReadonlySet<string>): LoadedSpec[] {
  // a large `only` (a run over most attempts): the walk is as cheap
  if (only.size * 8 > specs.length) return specs.filter((s) => only.has(s.spec.name));
  const { at } = specIndex(specs);
  const idx: number[] = [];
  for (const n of only) {
    const i = at.get(n);
    if (i !== undefined) idx.push(i);
  }
  return idx.sort((a, b) => a - b).map((i) => specs[i] as LoadedSpec);
}

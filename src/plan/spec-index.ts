/**
 * The specs of a load by name, made once per load (issue 55): a controller's batch plans a few
 * queued attempts among 100,000 specs, and the specs' array stays the same object from batch to
 * batch until the folder changes; finding the queued ones and asking whether a name is declared
 * were a walk over every spec per batch. A memo of the input, keyed by the array itself: the
 * planner stays a function of its input. A load made from the one before by a few files
 * (spec/quick-update.ts) hands its index on (`deriveSpecIndex`) instead of a walk of the new array.
 */
import type { LoadedSpec } from '../spec/types';

export interface SpecIndex {
  /** Each spec, by name. */
  readonly byName: ReadonlyMap<string, LoadedSpec>;
}

const memo = new WeakMap<readonly LoadedSpec[], SpecIndex>();

export function specIndex(specs: readonly LoadedSpec[]): SpecIndex {
  let x = memo.get(specs);
  if (!x) {
    const byName = new Map<string, LoadedSpec>();
    for (const s of specs) byName.set(s.spec.name, s);
    x = { byName };
    memo.set(specs, x);
  }
  return x;
}

/**
 * The index of `specs`, made from the index of `before` (made now if it was not): `specs` is
 * `before` without the specs named in `removed`, with `added` (their names unique in `specs`).
 */
export function deriveSpecIndex(specs: readonly LoadedSpec[], before: readonly LoadedSpec[], removed: Iterable<string>, added: readonly LoadedSpec[]): void {
  const byName = new Map(specIndex(before).byName);
  for (const n of removed) byName.delete(n);
  for (const s of added) byName.set(s.spec.name, s);
  memo.set(specs, { byName });
}

/** The specs named in `only`, in the array's order (as `specs.filter(s => only.has(name))` gives them). */
export function specsNamed(specs: readonly LoadedSpec[], only: ReadonlySet<string>): LoadedSpec[] {
  // a large `only` (a run over most attempts): the walk is as cheap
  if (only.size * 8 > specs.length) return specs.filter((s) => only.has(s.spec.name));
  const { byName } = specIndex(specs);
  const found: LoadedSpec[] = [];
  for (const n of only) {
    const s = byName.get(n);
    if (s !== undefined) found.push(s);
  }
  // the array's order: among a few, by a position looked up once each; more, by a walk
  if (found.length < 2) return found;
  if (found.length > 64) return specs.filter((s) => only.has(s.spec.name));
  const pos = new Map<LoadedSpec, number>();
  for (const s of found) pos.set(s, specs.indexOf(s));
  return found.sort((a, b) => (pos.get(a) as number) - (pos.get(b) as number));
}

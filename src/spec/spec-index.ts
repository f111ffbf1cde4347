/**
 * The specs of a load by name, made once per load (issue 55): a controller's batch plans a few
 * queued attempts among 100,000 specs, and the specs' array stays the same object from batch to
 * batch until the folder changes; finding the queued ones and asking whether a name is declared
 * were a walk over every spec per batch. A memo of the input, keyed by the array itself: the
 * planner stays a function of its input. A load made from the one before by a few files
 * (spec/quick-update.ts) hands its index on (`deriveSpecIndex`) instead of a walk of the new array.
 */
import type { LoadedSpec } from './types';

/** Specs by name: what the index answers. */
export interface SpecsByName {
  get(name: string): LoadedSpec | undefined;
  has(name: string): boolean;
}

export interface SpecIndex {
  /** Each spec, by name. */
  readonly byName: SpecsByName;
}

/**
 * An index made from another by a few names removed and added, without a copy of it: looked up
 * here first, then in the one it was made from (never changed). Made flat again once its own
 * changes grow (OVERLAY_MAX).
 */
class Overlay implements SpecsByName {
  constructor(
    readonly base: ReadonlyMap<string, LoadedSpec>,
    /** name → spec, or null: removed. */
    readonly over: Map<string, LoadedSpec | null>,
  ) {}

  get(name: string): LoadedSpec | undefined {
    const o = this.over.get(name);
    return o === null ? undefined : (o ?? this.base.get(name));
  }

  has(name: string): boolean {
    return this.get(name) !== undefined;
  }
}

const OVERLAY_MAX = 4096;

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
  const prev = specIndex(before).byName;
  const base = prev instanceof Overlay ? prev.base : (prev as ReadonlyMap<string, LoadedSpec>);
  const over = new Map(prev instanceof Overlay ? prev.over : []);
  for (const n of removed) {
    if (base.has(n)) over.set(n, null);
    else over.delete(n);
  }
  for (const s of added) over.set(s.spec.name, s);
  if (over.size > OVERLAY_MAX) {
    memo.delete(specs);
    specIndex(specs);
    return;
  }
  memo.set(specs, { byName: new Overlay(base, over) });
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

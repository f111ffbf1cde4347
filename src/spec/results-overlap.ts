/**
 * Results folders of different attempts never overlap: one that equals, lies inside or contains
 * another's (after resolving links in what exists of either path) would let one attempt write
 * into, or plant links in, what another's run folders are made from. Each such pair is an error
 * at both attempts (naming the other); neither loads and both names are protected, as for any
 * spec error. Each child of an AttemptSet has its own results folder (by default its own name),
 * so children are held to the same rule.
 */
import * as path from 'node:path';
import { RealCache, realpathLooseSync } from './path-util';
import type { LoadedSpec, SpecError } from './types';

export interface OverlapOutcome {
  /** The specs whose results folder overlaps no other's. */
  specs: LoadedSpec[];
  errors: SpecError[];
  /** Names of the specs left out. */
  refused: Set<string>;
}

/** One path segment that path.resolve leaves as it is (the default results folder: the name). */
const ONE_SEGMENT = /^[A-Za-z0-9_-][A-Za-z0-9_.-]*$/;

/**
 * Each spec's results folder as the overlap check places it: `seg`, a name right under the results
 * root's real path, or else `full`, its whole real path (one of the two per spec).
 */
export interface ResultsFolders {
  rootReal: string;
  prefix: string;
  seg: (string | undefined)[];
  full: (string | undefined)[];
}

export function resultsFolders(specs: readonly LoadedSpec[], resultsRoot: string, cache = new RealCache()): ResultsFolders {
  const root = path.resolve(resultsRoot);
  // One cache for every attempt: a set's thousands of children share their parent folders.
  const rootReal = realpathLooseSync(root, cache);
  // (issue 55) A folder right under the results root's real path is kept by its name alone (the
  // default results folder, a set's children): a load of 100,000 makes no path string for them,
  // and the controller checks every load (each dropped file).
  const prefix = rootReal === '/' ? '/' : `${rootReal}/`;
  const segOf = (real: string): string | undefined =>
    real.length > prefix.length && real.startsWith(prefix) && !real.includes('/', prefix.length) ? real.slice(prefix.length) : undefined;
  const seg: (string | undefined)[] = [];
  const full: (string | undefined)[] = [];
  for (const s of specs) {
    const results = s.spec.results;
    if (ONE_SEGMENT.test(results) && root !== '/' && rootReal !== '/' && cache.noLinkIn(root, results)) {
      seg.push(results);
      full.push(undefined);
      continue;
    }
    const real =
      ONE_SEGMENT.test(results) && root !== '/' ? realpathLooseSync(`${root}/${results}`, cache) : realpathLooseSync(path.resolve(root, results), cache);
    const name = segOf(real);
    seg.push(name);
    full.push(name === undefined ? real : undefined);
  }
  return { rootReal, prefix, seg, full };
}

export async function checkResultsOverlap(specs: LoadedSpec[], resultsRoot: string, cache = new RealCache()): Promise<OverlapOutcome> {
  const { rootReal, prefix, seg, full } = resultsFolders(specs, resultsRoot, cache);
  const segOf = (real: string): string | undefined =>
    real.length > prefix.length && real.startsWith(prefix) && !real.includes('/', prefix.length) ? real.slice(prefix.length) : undefined;
  const realOf = (i: number): string => full[i] ?? `${prefix}${seg[i] as string}`;
  // The specs by folder: the first one's index, and the rest only where a folder is shared.
  const under = new Map<string, number>();
  const elsewhere = new Map<string, number>();
  const shared = new Map<string, number[]>();
  const keyOf = (i: number): string => (seg[i] !== undefined ? `u${seg[i] as string}` : `e${full[i] as string}`);
  for (let i = 0; i < specs.length; i++) {
    const m = seg[i] !== undefined ? under : elsewhere;
    const k = (seg[i] ?? full[i]) as string;
    const first = m.get(k);
    if (first === undefined) m.set(k, i);
    else {
      const key = keyOf(i);
      const list = shared.get(key);
      if (list) list.push(i);
      else shared.set(key, [first, i]);
    }
  }
  const at = (dir: string): number[] => {
    const name = segOf(dir);
    const first = name !== undefined ? under.get(name) : elsewhere.get(dir);
    if (first === undefined) return [];
    return shared.get(name !== undefined ? `u${name}` : `e${dir}`) ?? [first];
  };
  // The specs whose folder is `dir` or above it, by folder: a set's thousands of children share their parent.
  const above = new Map<string, number[]>();
  const atOrAbove = (dir: string): number[] => {
    let out = above.get(dir);
    if (out === undefined) {
      const parent = path.dirname(dir);
      out = [...at(dir), ...(parent === dir ? [] : atOrAbove(parent))];
      above.set(dir, out);
    }
    return out;
  };
  const clashes = new Map<number, { other: number; how: string }[]>();
  const add = (a: number, b: number, how: string): void => {
    clashes.set(a, [...(clashes.get(a) ?? []), { other: b, how }]);
  };
  for (let i = 0; i < specs.length; i++) {
    if (shared.size) for (const j of shared.get(keyOf(i)) ?? []) if (j !== i) add(i, j, 'is the same folder as');
    // Every folder above this one, up to the filesystem root: another attempt's folder there contains it.
    for (const j of atOrAbove(seg[i] !== undefined ? rootReal : path.dirname(full[i] as string))) {
      add(i, j, 'lies inside');
      add(j, i, 'contains');
    }
  }
  if (clashes.size === 0) return { specs, errors: [], refused: new Set() };
  const errors: SpecError[] = [];
  const refused = new Set<string>();
  for (const [i, list] of clashes) {
    const s = specs[i] as LoadedSpec;
    refused.add(s.spec.name);
    const others = list
      .slice(0, 3)
      .map(({ other, how }) => {
        const o = specs[other] as LoadedSpec;
        return `${how} the results folder of attempt "${o.spec.name}" (${JSON.stringify(o.spec.results)}, ${o.source.file}:${o.source.line}:${o.source.col})`;
      })
      .join('; ');
    const more = list.length > 3 ? ` (and ${list.length - 3} more)` : '';
    errors.push({
      ...s.source,
      path: 'spec.results',
      code: 'results-overlap',
      message: `results folder ${JSON.stringify(s.spec.results)} (${realOf(i)}) ${others}${more}; each attempt needs a results folder of its own`,
      attempt: s.spec.name,
      ...(s.set ? { set: s.set.set.name } : {}),
    });
  }
  return { specs: specs.filter((s) => !refused.has(s.spec.name)), errors, refused };
}

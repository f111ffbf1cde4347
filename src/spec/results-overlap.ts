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

export async function checkResultsOverlap(specs: LoadedSpec[], resultsRoot: string, cache = new RealCache()): Promise<OverlapOutcome> {
  const root = path.resolve(resultsRoot);
  // One cache for every attempt: a set's thousands of children share their parent folders.
  const rootReal = realpathLooseSync(root, cache);
  const real = (results: string): string => {
    if (!ONE_SEGMENT.test(results) || root === '/') return realpathLooseSync(path.resolve(root, results), cache);
    // A name with no link there (the root listed once): the root's real path joined with it.
    if (rootReal !== '/' && cache.noLinkIn(root, results)) return `${rootReal}/${results}`;
    return realpathLooseSync(`${root}/${results}`, cache);
  };
  const reals = specs.map((s) => real(s.spec.results));
  const byReal = new Map<string, number[]>();
  reals.forEach((r, i) => {
    const had = byReal.get(r);
    if (had) had.push(i);
    else byReal.set(r, [i]);
  });
  // The specs whose folder is `dir` or above it, by folder: a set's thousands of children share their parent.
  const above = new Map<string, number[]>();
  const atOrAbove = (dir: string): number[] => {
    let out = above.get(dir);
    if (out === undefined) {
      const parent = path.dirname(dir);
      out = [...(byReal.get(dir) ?? []), ...(parent === dir ? [] : atOrAbove(parent))];
      above.set(dir, out);
    }
    return out;
  };
  const clashes = new Map<number, { other: number; how: string }[]>();
  const add = (a: number, b: number, how: string): void => {
    clashes.set(a, [...(clashes.get(a) ?? []), { other: b, how }]);
  };
  for (const [i, real] of reals.entries()) {
    for (const j of byReal.get(real) ?? []) if (j !== i) add(i, j, 'is the same folder as');
    // Every folder above this one, up to the filesystem root: another attempt's folder there contains it.
    for (const j of atOrAbove(path.dirname(real))) {
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
      message: `results folder ${JSON.stringify(s.spec.results)} (${reals[i]}) ${others}${more}; each attempt needs a results folder of its own`,
      attempt: s.spec.name,
      ...(s.set ? { set: s.set.set.name } : {}),
    });
  }
  return { specs: specs.filter((s) => !refused.has(s.spec.name)), errors, refused };
}

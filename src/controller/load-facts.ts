/**
 * What a pass asks of every spec of a load, answered once per load (issue 55): a controller's load
 * stays the same object from batch to batch until the folder changes, and each batch asked it
 * again (at 100,000 specs a walk over all of them per batch, a dropped file's included).
 */
import type { LoadResult, NormalizedBuild } from '../spec/types';

export interface LoadFacts {
  /** Some spec has a disk limit of its own. */
  diskLimited: boolean;
  /** Some spec has a volume with a size. */
  sizedVolumes: boolean;
  /** The builds the specs name (an image's and a grader's), in spec order; empty: none. */
  builds: NormalizedBuild[];
}

const memo = new WeakMap<LoadResult, LoadFacts>();

export function loadFacts(load: LoadResult): LoadFacts {
  let f = memo.get(load);
  if (f) return f;
  f = { diskLimited: false, sizedVolumes: false, builds: [] };
  for (const s of load.specs) {
    if (s.spec.resources.diskBytes !== null) f.diskLimited = true;
    if (!f.sizedVolumes && s.spec.volumes.some((v) => v.sizeBytes !== null)) f.sizedVolumes = true;
    if (s.spec.build) f.builds.push(s.spec.build);
    if (s.spec.grade?.build) f.builds.push(s.spec.grade.build);
  }
  memo.set(load, f);
  return f;
}

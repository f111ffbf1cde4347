/** A run's folders below the results root, made one component at a time with no link followed. */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { isInside } from '../spec/path-util';
import { isCode } from '../status/atomic-file';
import { mkdirBelow } from '../util/no-follow';

/**
 * The folder below which berth makes and checks a run's folders without following a link: the
 * results root when `dir` lies inside it, else the attempt's results folder (a record made under
 * another --results-root).
 */
export function resultsBase(root: string | undefined, dir: string): string {
  if (root !== undefined && isInside(path.resolve(root), path.resolve(dir))) return path.resolve(root);
  return path.dirname(path.dirname(path.resolve(dir)));
}

/**
 * Makes a run's folder and its results folder, one component at a time below the results root,
 * refusing a link anywhere (UnsafePathError): nothing an attempt planted can redirect them. The
 * run folder is made exclusively: a run never writes into a folder an earlier run (or another
 * state folder) left, unless it is resuming its own provisioning. The planner gives the next run
 * a number above it (see runFloor).
 */
export async function makeRunFolder(
  root: string | undefined,
  resultsDir: string,
  resuming: boolean,
  owner: { uid: number; gid: number } | null,
): Promise<void> {
  const base = resultsBase(root, resultsDir);
  const runFolder = path.dirname(resultsDir);
  // The results root itself is the user's (it may be a link of their own): made as it is given.
  await fs.mkdir(base, { recursive: true });
  try {
    await mkdirBelow(base, runFolder, { exclusiveLast: true });
  } catch (err) {
    if (!isCode(err, 'EEXIST')) throw err;
    if (!resuming) throw new Error(`results folder ${runFolder} already exists: a run never reuses one; the next pass picks a new run number`);
  }
  // spec.user: the attempt's own folder (the bind at /results) is its user's, so it can write there.
  await mkdirBelow(base, resultsDir, owner ? { owner } : {});
}

/** Makes (or finds) a run's folder for its harvest: the results root as given, the run folder below it with no link followed. */
export async function ensureRunFolder(root: string | undefined, resultsDir: string): Promise<void> {
  const base = resultsBase(root, resultsDir);
  await fs.mkdir(base, { recursive: true });
  await mkdirBelow(base, path.dirname(resultsDir));
}

/**
 * Where a run's results live on the host, never reused by another run:
 *   <results root>/<spec.results>/run-<n>/results/   mounted at /results (the attempt writes here)
 *   <results root>/<spec.results>/run-<n>/           berth's harvest: logs.txt, status.json, manifest.json
 */
import { readdirSync } from 'node:fs';
import path from 'node:path';

export function runDir(resultsRoot: string, results: string, run: number): string {
  return path.join(path.resolve(resultsRoot), results, `run-${run}`);
}

/** The folder mounted at /results for a run. */
export function runResultsDir(resultsRoot: string, results: string, run: number): string {
  return path.join(runDir(resultsRoot, results, run), 'results');
}

/** The results root: `--results-root`, else `<state>/results`. */
export function resolveResultsRoot(stateDir: string, resultsRoot?: string): string {
  return path.resolve(resultsRoot ?? path.join(stateDir, 'results'));
}

/**
 * The highest `n` of the `run-<n>` folders beside a run's results folder (0 when none), not
 * counting the run's own folder when `ownFolder` (the planner's RunStart: a resumed provisioning
 * made it). Reads one folder's names; follows no link.
 */
export function runFloor(resultsDir: string, ownFolder: boolean): number {
  const parent = path.dirname(path.dirname(resultsDir));
  const ownRunDir = ownFolder ? path.dirname(path.resolve(resultsDir)) : undefined;
  let names: string[];
  try {
    names = readdirSync(parent);
  } catch {
    return 0;
  }
  let max = 0;
  for (const n of names) {
    const m = /^run-([1-9][0-9]{0,8})$/.exec(n);
    if (m && path.join(parent, n) !== ownRunDir) max = Math.max(max, Number(m[1]));
  }
  return max;
}

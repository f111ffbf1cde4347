/**
 * Where a run's results live on the host, never reused by another run:
 *   <results root>/<spec.results>/run-<n>/results/   mounted at /results (the attempt writes here)
 *   <results root>/<spec.results>/run-<n>/           berth's harvest: logs.txt, status.json, manifest.json
 */
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

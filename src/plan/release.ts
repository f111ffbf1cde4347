/**
 * What a sandbox's release means (`berth release`, the API's POST .../release): its run ends as
 * its main process ending with the release's exit code would (exit-outcome.ts): 0 Succeeded,
 * anything else Failed/Error with that code; then the run ends as any run (harvest, workspace
 * export, grade). A release asked for after the run's deadline had passed does not change the
 * deadline's TimedOut. Pure.
 */
import { REASONS } from '../constants';
import type { AttemptStatus } from '../status/types';
import type { RunEnd } from './types';

export function releasedEnd(rec: AttemptStatus | undefined, run: number): RunEnd | undefined {
  const r = rec?.releaseRequested;
  if (!rec || !r || r.run !== run) return undefined;
  if (rec.deadlineAt !== undefined && Date.parse(r.at) > Date.parse(rec.deadlineAt)) return undefined;
  return r.exitCode === 0
    ? { phase: 'Succeeded', reason: REASONS.completed, message: 'released (exit code 0)', exitCode: 0 }
    : { phase: 'Failed', reason: REASONS.error, message: `released with exit code ${r.exitCode}`, exitCode: r.exitCode };
}

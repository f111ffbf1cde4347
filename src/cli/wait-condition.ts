/**
 * What `berth wait --for` waits for, and the verdict on a set of attempts (pure). `finished`
 * holds when an attempt is in a final phase and no retry of it is pending (a run that failed
 * with retries left is not finished yet); `phase=X` holds when its phase is X. An attempt that
 * is finished in another phase than the one waited for can no longer reach it: the wait ends
 * there, with the exit code `reconcile --wait` gives that phase. A run whose harvest failed
 * (HarvestFailed: the record keeps its phase until the harvest is done) ends the wait as it
 * ends `reconcile --wait`: exit 1.
 */
import { DEFAULTS, EXIT, FINISHED_PHASES, PHASES, REASONS, type Phase } from '../constants';
import { isInfraFailure } from '../plan/exit-outcome';
import { RETRYABLE_REASONS } from '../plan/planner';
import type { AttemptStatus } from '../status/types';

export type WaitFor = { kind: 'finished' } | { kind: 'phase'; phase: Phase };

/** `finished` or `phase=<Phase>`; undefined when `text` is neither. */
export function parseWaitFor(text: string): WaitFor | undefined {
  if (text === 'finished') return { kind: 'finished' };
  const m = /^phase=(.+)$/.exec(text);
  const phase = PHASES.find((p) => p.toLowerCase() === m?.[1]?.toLowerCase());
  return phase ? { kind: 'phase', phase } : undefined;
}

export interface Watched {
  name: string;
  /** Undefined while no record exists (not reconciled yet). */
  status?: Pick<AttemptStatus, 'phase' | 'reason' | 'retriesUsed' | 'infraRetriesUsed'>;
  /** The spec's `retries` (0 without a valid spec). */
  retries: number;
  /** spec.grade: the finished run's grade is still to come (plan/grade.ts gradePending). */
  gradePending?: boolean;
}

/** Phases in which an attempt stays until its spec changes or it is re-run. */
const SETTLED: ReadonlySet<Phase> = new Set([...FINISHED_PHASES, 'Invalid', 'Blocked']);

/** Whether the attempt is settled: final phase, no retry pending. */
export function settled(w: Watched): boolean {
  const s = w.status;
  if (s?.reason === REASONS.harvestFailed) return true;
  if (!s || !SETTLED.has(s.phase) || w.gradePending) return false;
  if (s.phase !== 'Failed') return true;
  if (isInfraFailure(s.reason)) return (s.infraRetriesUsed ?? 0) >= DEFAULTS.infraRetries;
  return !RETRYABLE_REASONS.has(s.reason ?? '') || s.retriesUsed >= w.retries;
}

export interface Verdict {
  /** The exit code when the wait is over; undefined while it goes on. */
  code?: number;
  /** The attempts that meet the condition. */
  met: string[];
  /** Those that do not (yet). */
  unmet: string[];
}

function codeFor(phase: Phase, reason?: string): number {
  if (reason === REASONS.harvestFailed) return EXIT.failed;
  if (phase === 'Failed' || phase === 'TimedOut') return EXIT.attemptsFailed;
  if (phase === 'Invalid') return EXIT.usage;
  if (phase === 'Blocked') return EXIT.failed;
  return EXIT.ok;
}

export function verdict(items: readonly Watched[], want: WaitFor): Verdict {
  const met: string[] = [];
  const unmet: string[] = [];
  let worst: number = EXIT.ok;
  let impossible = false;
  for (const w of items) {
    const phase = w.status?.phase;
    if (want.kind === 'finished') {
      if (settled(w)) {
        met.push(w.name);
        worst = Math.max(worst, codeFor(phase as Phase, w.status?.reason));
      } else unmet.push(w.name);
    } else if (phase === want.phase) {
      met.push(w.name);
    } else {
      unmet.push(w.name);
      if (settled(w)) {
        impossible = true;
        worst = Math.max(worst, codeFor(phase as Phase, w.status?.reason) || EXIT.failed);
      }
    }
  }
  if (impossible) return { code: worst, met, unmet };
  return unmet.length ? { met, unmet } : { code: worst, met, unmet };
}

/**
 * What a child's status record means for its set, pure: passed, failed (the task failed), infra
 * (the run could not say: TimedOut, OOMKilled, Lost, AttestationFailed, Blocked, Invalid, a missing
 * or unreadable score, ...), skipped (not admitted: failFast or maxFailed), or unfinished
 * (not run yet, running, or failed with retries left). Infrastructure outcomes are never task
 * failures, and a missing score is never a silent 0. Used by admission (planner) and `summary`.
 */
import { REASONS } from '../constants';
import type { AttemptStatus } from '../status/types';
import type { SetPolicy } from '../spec/types';

/** The class an attempt's run falls in for its set (and the fleet report). */
export type OutcomeClass = 'passed' | 'failed' | 'infra' | 'skipped' | 'unfinished';

/** Reasons of children that were not admitted: they did not run. */
export const SKIP_REASONS: ReadonlySet<string> = new Set([REASONS.failFast, REASONS.maxFailedReached]);
/** Failures a run is retried after while `retries` allow (as the planner retries them). */
const RETRIED: ReadonlySet<string> = new Set([REASONS.error, REASONS.oomKilled, REASONS.lost]);

export interface Classified {
  outcome: OutcomeClass;
  /** For infra and skipped outcomes: the reason (TimedOut, OOMKilled, ScoreMissing, FailFast, ...). */
  reason?: string;
}

/** The outcome of the run `rec` records, for a child of `policy` allowed `retries` re-runs. */
export function classify(rec: AttemptStatus | undefined, policy: Pick<SetPolicy, 'score'>, retries: number): Classified {
  if (!rec) return { outcome: 'unfinished' };
  switch (rec.phase) {
    case 'Pending':
    case 'Running':
      return { outcome: 'unfinished' };
    case 'Invalid':
    case 'Blocked':
    case 'TimedOut':
      // the phase says it all: counted under it
      return { outcome: 'infra', reason: rec.phase };
    case 'Failed':
      if (SKIP_REASONS.has(rec.reason ?? '')) return { outcome: 'skipped', reason: rec.reason as string };
      if (RETRIED.has(rec.reason ?? '') && rec.retriesUsed < retries) return { outcome: 'unfinished' };
      if (rec.reason !== REASONS.error) return { outcome: 'infra', reason: rec.reason ?? 'Failed' };
      break;
    case 'Succeeded':
      break;
  }
  if (policy.score) {
    if (typeof rec.score === 'number' && Number.isFinite(rec.score)) return { outcome: rec.score >= policy.score.pass ? 'passed' : 'failed' };
    return { outcome: 'infra', reason: REASONS.scoreMissing };
  }
  return { outcome: rec.phase === 'Succeeded' ? 'passed' : 'failed' };
}

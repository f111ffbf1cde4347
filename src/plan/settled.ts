/**
 * When an attempt is settled (pure): the one predicate `berth wait`, `reconcile --once --wait`
 * and its progress line use. Settled is a phase it stays in until its spec changes or it is re-run
 * (a final one, Invalid or Blocked: they cannot go on without the user), with no retry pending (a
 * run that failed with a retry left in the budget that applies to its reason is not) and no grade
 * to come (spec.grade). A run whose harvest failed is settled too: berth's own error, which the
 * caller reports.
 */
import { DEFAULTS, FINISHED_PHASES, REASONS, type Phase } from '../constants';
import type { AttemptStatus } from '../status/types';
import { isInfraFailure } from './exit-outcome';

/** Failure reasons a spec's `retries` re-run (planner.ts planFinished). */
export const RETRYABLE_REASONS: ReadonlySet<string> = new Set<string>([REASONS.error, REASONS.oomKilled, REASONS.lost]);

/** Phases in which an attempt stays until its spec changes or it is re-run. */
const STAYING: ReadonlySet<Phase> = new Set([...FINISHED_PHASES, 'Invalid', 'Blocked']);

export interface SettleFacts {
  /** Undefined while no record exists (not reconciled yet). */
  status?: Pick<AttemptStatus, 'phase' | 'reason' | 'retriesUsed' | 'infraRetriesUsed'>;
  /** The spec's `retries` (0 without a valid spec). */
  retries: number;
  /** `--infra-retries` (default DEFAULTS.infraRetries). */
  infraRetries?: number;
  /** spec.grade: the finished run's grade is still to come (plan/grade.ts gradePending). */
  gradePending?: boolean;
}

export function settled(f: SettleFacts): boolean {
  const s = f.status;
  if (s?.reason === REASONS.harvestFailed) return true;
  if (!s || !STAYING.has(s.phase) || f.gradePending) return false;
  if (s.phase !== 'Failed') return true;
  if (isInfraFailure(s.reason)) return (s.infraRetriesUsed ?? 0) >= (f.infraRetries ?? DEFAULTS.infraRetries);
  return !RETRYABLE_REASONS.has(s.reason ?? '') || s.retriesUsed >= f.retries;
}

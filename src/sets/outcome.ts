/**
 * What an attempt's status record means for pass rates, pure (CONTRACT.md, "Pass rates that do
 * not flatter"): a record in, a class out.
 *
 * - **passed** / **failed**: task outcomes, what the attempt's own process did. Failed includes
 *   the attempt's own limits: TimedOut, OOMKilled, DiskLimitExceeded, and a non-zero exit (Error).
 * - **infra**: what the attempt could not cause (EngineRestarted, Lost, CreateFailed,
 *   StartFailed, AttestationFailed, ProxyFailed, SidecarFailed, Blocked, Invalid, a missing score,
 *   and any reason not known as a task outcome: a new reason never silently counts as a pass or a
 *   failure), plus the task outcomes a set moves there (`score.infra`). Kept apart, never counted
 *   as pass or fail.
 * - **skipped**: not run to an outcome by berth's or the user's decision (FailFast,
 *   MaxFailedReached, Deleted).
 * - **unfinished**: not run yet, running, a failure with retries left, or a run replaced by a new one.
 *
 * With a score file (`score.file`), the score decides pass or fail whatever the exit code; a run
 * that exited 0 without a readable score is infra (ScoreMissing, never 0), one that exited
 * non-zero without one is the task's failure. Used by admission (planner), `summary`, the report,
 * and the end line and exit code of `reconcile --wait` and `wait`.
 */
import { REASONS, TASK_FAILURES, type Phase } from '../constants';
import type { AttemptStatus } from '../status/types';
import type { SetPolicy } from '../spec/types';

/** The class an attempt's run falls in for its set (and the fleet report). */
export type OutcomeClass = 'passed' | 'failed' | 'infra' | 'skipped' | 'unfinished';

/** Children a set did not admit (failFast, maxFailed): they never ran, and admission decides anew at each pass. */
export const NOT_ADMITTED: ReadonlySet<string> = new Set([REASONS.failFast, REASONS.maxFailedReached]);
/** Runs that count as skipped: not admitted, or deleted by the user (`berth delete`). */
export const SKIP_REASONS: ReadonlySet<string> = new Set([...NOT_ADMITTED, REASONS.deleted]);
/** Failures a run is retried after while `retries` allow (as the planner retries them). */
const RETRIED: ReadonlySet<string> = new Set([REASONS.error, REASONS.oomKilled, REASONS.lost]);
/** Task outcomes, named as `TASK_FAILURES` names them (the phase TimedOut, the Failed reasons). */
const TASK: ReadonlySet<string> = new Set(TASK_FAILURES);
const TIMED_OUT: Phase = 'TimedOut';

export interface Classified {
  outcome: OutcomeClass;
  /** For infra and skipped outcomes: the reason (ScoreMissing, Lost, ImageMissing, TimedOut moved by the set, FailFast, ...). */
  reason?: string;
}

/** How a record is judged: a set's score and its task outcomes moved to infrastructure; none for a plain Attempt. */
export type Judging = Partial<Pick<SetPolicy, 'score' | 'infra'>>;

/** The record's fields the judgement reads. */
export type Judged = Pick<AttemptStatus, 'phase' | 'reason' | 'retriesUsed' | 'score' | 'scorePass'>;

/** The outcome of the run `rec` records, judged by `policy` (a set's; none for a plain Attempt), allowed `retries` re-runs. */
export function classify(rec: Judged | undefined, policy: Judging | undefined, retries: number): Classified {
  if (!rec) return { outcome: 'unfinished' };
  const reason = rec.reason ?? '';
  switch (rec.phase) {
    case 'Pending':
    case 'Running':
      return { outcome: 'unfinished' };
    case 'Invalid':
      return { outcome: 'infra', reason: rec.phase };
    case 'Blocked':
      // named by why (SecretMissing, ImageMissing, NodeRefused, ...)
      return { outcome: 'infra', reason: rec.reason || rec.phase };
    case 'TimedOut':
      return task(rec, policy, TIMED_OUT);
    case 'Failed':
      if (SKIP_REASONS.has(reason)) return { outcome: 'skipped', reason };
      if (reason === REASONS.replaced) return { outcome: 'unfinished' };
      if (RETRIED.has(reason) && rec.retriesUsed < retries) return { outcome: 'unfinished' };
      if (TASK.has(reason)) return task(rec, policy, reason);
      return { outcome: 'infra', reason: reason || rec.phase };
    case 'Succeeded':
      return policy?.score ? (scored(rec, policy.score.pass) ?? { outcome: 'infra', reason: REASONS.scoreMissing }) : { outcome: 'passed' };
  }
}

/** A task outcome that is no pass: a failure, unless the set moves it to infrastructure or (a non-zero exit) its score says otherwise. */
function task(rec: Judged, policy: Judging | undefined, name: string): Classified {
  if (policy?.infra?.includes(name)) return { outcome: 'infra', reason: name };
  if (name === REASONS.error && policy?.score) return scored(rec, policy.score.pass) ?? { outcome: 'failed' };
  return { outcome: 'failed' };
}

/** What the score file says: its own verdict (true/false, {"pass": ...}), else the score against `pass`; undefined without a readable one. */
function scored(rec: Judged, pass: number): Classified | undefined {
  if (typeof rec.scorePass === 'boolean') return { outcome: rec.scorePass ? 'passed' : 'failed' };
  if (typeof rec.score === 'number' && Number.isFinite(rec.score)) return { outcome: rec.score >= pass ? 'passed' : 'failed' };
  return undefined;
}

/** Outcomes counted: the end line of `reconcile --wait` and `wait`, and their exit code. */
export interface Tally {
  passed: number;
  failed: number;
  infra: number;
  skipped: number;
  unfinished: number;
  /** Infra outcomes by reason, each with the attempts' names in the order counted. */
  infraBy: Map<string, string[]>;
}

export function tally(items: Iterable<{ name: string; outcome: Classified }>): Tally {
  const t: Tally = { passed: 0, failed: 0, infra: 0, skipped: 0, unfinished: 0, infraBy: new Map() };
  for (const { name, outcome } of items) {
    t[outcome.outcome]++;
    if (outcome.outcome !== 'infra') continue;
    const why = outcome.reason ?? 'Failed';
    t.infraBy.set(why, [...(t.infraBy.get(why) ?? []), name]);
  }
  return t;
}

/** Attempts named per infra reason in the end line; the rest are counted. */
const NAMED_PER_REASON = 5;

/**
 * One line: `12 passed, 3 failed, 2 infrastructure (1 ImageMissing: a; 1 SecretMissing: b)`, then
 * skipped, unfinished and touched (an exec or a copy made into the run) when there are any. Infra reasons in order of count, then name.
 */
export function endLine(t: Tally, touched: readonly string[] = []): string {
  const parts = [`${t.passed} passed`, `${t.failed} failed`, `${t.infra} infrastructure`];
  if (t.infra > 0) {
    const by = [...t.infraBy.entries()].sort(([a, x], [b, y]) => y.length - x.length || (a < b ? -1 : a > b ? 1 : 0));
    const named = by.map(([why, names]) => {
      const shown = names.slice(0, NAMED_PER_REASON).join(', ');
      return `${names.length} ${why}: ${shown}${names.length > NAMED_PER_REASON ? ` and ${names.length - NAMED_PER_REASON} more` : ''}`;
    });
    parts[2] += ` (${named.join('; ')})`;
  }
  if (t.skipped > 0) parts.push(`${t.skipped} skipped`);
  if (t.unfinished > 0) parts.push(`${t.unfinished} unfinished`);
  // runs someone reached into (berth exec, berth cp, the API): never read as clean ones
  if (touched.length > 0) {
    const shown = touched.slice(0, NAMED_PER_REASON).join(', ');
    parts.push(`${touched.length} touched by hand (${shown}${touched.length > NAMED_PER_REASON ? ` and ${touched.length - NAMED_PER_REASON} more` : ''})`);
  }
  return parts.join(', ');
}

/**
 * Where a run stands with its grade (spec.grade), pure: whether a grader judges it, its grades,
 * whether its grade is still to come, and the class the grade gives it in its set. The planner
 * (plan/grade.ts) plans from these; `wait`, `reconcile --wait` and the sets' summary read them.
 */
import { REASONS } from '../constants';
import { gradeHash } from '../spec/grade-hash';
import { classify, type Classified } from './outcome';
import type { LoadedSpec } from '../spec/types';
import type { AttemptStatus, GradeRecord } from '../status/types';

/**
 * The ends of a run a grader judges: those of the attempt's own process (it ran, and its
 * workspace came home). A run that never ran, or that berth or the engine ended (Lost,
 * StartFailed, Replaced, ...), keeps its own outcome: grading the bare fixture would judge
 * nothing the attempt did.
 */
const GRADED_REASONS: ReadonlySet<string> = new Set([
  REASONS.completed,
  REASONS.resultsTruncated,
  REASONS.error,
  REASONS.oomKilled,
  REASONS.deadlineExceeded,
  REASONS.diskLimitExceeded,
]);

/** Whether spec.grade judges the finished run `rec` records (`when`, and a run the attempt's own process ended). */
export function gradeApplies(loaded: LoadedSpec, rec: AttemptStatus): boolean {
  const g = loaded.spec.grade;
  if (!g || !rec.startedAt) return false;
  if (rec.phase !== 'Succeeded' && rec.phase !== 'Failed' && rec.phase !== 'TimedOut') return false;
  if (g.when === 'succeeded' && rec.phase !== 'Succeeded') return false;
  return GRADED_REASONS.has(rec.reason ?? (rec.phase === 'Succeeded' ? REASONS.completed : ''));
}

/** The grades of the record's current run, oldest first. */
export function runGrades(rec: Pick<AttemptStatus, 'grades' | 'run'>): GradeRecord[] {
  return (rec.grades ?? []).filter((g) => g.run === rec.run);
}

/** The grade that stands for the record's current run: its latest. */
export function latestGrade(rec: Pick<AttemptStatus, 'grades' | 'run'> | undefined): GradeRecord | undefined {
  return rec ? runGrades(rec).at(-1) : undefined;
}

/**
 * Whether the run's grade is still to come (a finished run spec.grade judges, with no final
 * grade of the current grade hash, or a regrade asked for): such an attempt is not settled.
 */
export function gradePending(loaded: LoadedSpec, rec: AttemptStatus | undefined): boolean {
  if (!rec || rec.ended || !gradeApplies(loaded, rec) || rec.specHash !== loaded.hash) return false;
  const last = latestGrade(rec);
  if (!last || last.state === 'grading') return true;
  if (last.gradeHash !== gradeHash(loaded.spec.grade as NonNullable<LoadedSpec['spec']['grade']>)) return true;
  return regradeAsked(rec, last.k);
}

export function regradeAsked(rec: AttemptStatus, lastK: number): boolean {
  const r = rec.regradeRequested;
  return !!r && r.run === rec.run && r.after >= lastK;
}

/**
 * The ends that are the attempt's own limits: the run ran past its deadline (TimedOut), out of
 * memory (OOMKilled) or out of disk (DiskLimitExceeded). A task failure whatever a grader says of
 * what it left (as a passing score file does not make them a pass): the contract counts them as
 * failures.
 */
export function endedByLimit(rec: Pick<AttemptStatus, 'phase' | 'reason'>): boolean {
  return rec.phase === 'TimedOut' || (rec.phase === 'Failed' && (rec.reason === REASONS.oomKilled || rec.reason === REASONS.diskLimitExceeded));
}

/**
 * The class a grade gives the run `rec` records, when spec.grade judges it (undefined: it does
 * not; the run's own outcome stands): unfinished while its grade is to come; a run the attempt's
 * own limit ended (endedByLimit) keeps its own class (failed, or the infrastructure its set's
 * `score.infra` moves it to) whatever the grade, which is shown beside it; else infra when the
 * grader could not judge (GradeFailed, GradeTimedOut), and the grader's verdict otherwise.
 */
export function gradeClass(loaded: LoadedSpec, rec: AttemptStatus | undefined): Classified | undefined {
  if (!rec || !gradeApplies(loaded, rec)) return undefined;
  if (gradePending(loaded, rec)) return { outcome: 'unfinished' };
  if (endedByLimit(rec)) return classify(rec, loaded.set?.set, loaded.spec.retries);
  const g = latestGrade(rec) as GradeRecord;
  if (g.state === 'failed') return { outcome: 'infra', reason: g.reason ?? REASONS.gradeFailed };
  if (g.state === 'timedOut') return { outcome: 'infra', reason: g.reason ?? REASONS.gradeTimedOut };
  return { outcome: g.passed ? 'passed' : 'failed' };
}

/**
 * How the run `rec` records counts for the attempt `loaded` (its set's policy, its retries, its
 * grade): the one judgement `summary`, `get`, the report, JUnit, a set's admission and the exit
 * code of `wait` and `reconcile --wait` read. A record of another spec hash is the caller's to
 * leave out.
 */
export function judge(loaded: LoadedSpec, rec: AttemptStatus | undefined): Classified {
  return gradeClass(loaded, rec) ?? classify(rec, loaded.set?.set, loaded.spec.retries);
}

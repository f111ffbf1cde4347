/**
 * A grade (spec.grade) in words, pure: what `describe`, `get` and `summary` print of a run's
 * grades. A verdict is the grader's (pass, fail, with its score when a set scores); a grade the
 * grader could not give is its reason (GradeFailed, GradeTimedOut), never a fail.
 */
import { REASONS } from '../constants';
import type { GradeRecord } from '../status/types';

/** The grade's verdict in a word or two: `pass`, `fail`, `pass (score 0.8)`, `grading`, `GradeFailed`, ... */
export function gradeVerdict(g: Pick<GradeRecord, 'state' | 'passed' | 'score' | 'reason'>): string {
  if (g.state === 'grading') return 'grading';
  if (g.state === 'failed') return g.reason ?? REASONS.gradeFailed;
  if (g.state === 'timedOut') return g.reason ?? REASONS.gradeTimedOut;
  const v = g.passed ? 'pass' : 'fail';
  return g.score !== undefined ? `${v} (score ${g.score})` : v;
}

/**
 * The grade's verdict and what decided it, for logs and events: `pass (score 1)`, `fail (exit 1)`,
 * `fail (no score: ...)`; a grade the grader could not give: `failed (GradeTimedOut: why)`.
 */
export function gradeOutcome(g: Pick<GradeRecord, 'state' | 'passed' | 'score' | 'scoreError' | 'exitCode' | 'reason' | 'message'>): string {
  if (g.state === 'grading') return 'grading';
  if (g.state !== 'graded')
    return `failed (${g.reason ?? (g.state === 'timedOut' ? REASONS.gradeTimedOut : REASONS.gradeFailed)}${g.message ? `: ${g.message}` : ''})`;
  const why =
    g.score !== undefined
      ? `score ${g.score}`
      : g.scoreError !== undefined
        ? `no score: ${g.scoreError}`
        : g.exitCode !== undefined
          ? `exit ${g.exitCode}`
          : '';
  return `${g.passed ? 'pass' : 'fail'}${why ? ` (${why})` : ''}`;
}

/** The grade named with its k, as the run folder names it: `grade-2: pass`. */
export function gradeLabel(g: Pick<GradeRecord, 'k' | 'state' | 'passed' | 'score' | 'reason'>): string {
  return `grade-${g.k}: ${gradeVerdict(g)}`;
}

/** The grader's image as recorded: its reference, and its short id when known. */
export function graderImage(g: Pick<GradeRecord, 'image' | 'imageId'>): string {
  const short = (x: string) => x.replace(/^sha256:/, '').slice(0, 12);
  // the attempt's run's image, by id: the id alone, short
  if (g.image.startsWith('sha256:')) return `sha256:${short(g.image)}`;
  return g.imageId ? `${g.image} (${short(g.imageId)})` : g.image;
}

/** When the grade stands as it is: finished, else started, else begun. */
export function gradeWhen(g: Pick<GradeRecord, 'createdAt' | 'startedAt' | 'finishedAt'>): string {
  return g.finishedAt ?? g.startedAt ?? g.createdAt;
}

/** Children counted by the grade their outcome comes from (`{"1": 3, "2": 1}`); null when none has a grade. */
export function countByGrade(grades: readonly ({ k: number } | null)[]): Record<string, number> | null {
  const out: Record<string, number> = {};
  for (const g of grades) if (g) out[String(g.k)] = (out[String(g.k)] ?? 0) + 1;
  return Object.keys(out).length ? out : null;
}

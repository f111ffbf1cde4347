/**
 * What a grader's end means (pure), beside exit-outcome.ts for a run's: the executor gathers the
 * facts (the planner's forced end, the grader's exit, the score it wrote), this decides. With a
 * set's `score`: the score the grader wrote into its own results folder passes at the set's
 * `pass` or above; no readable score is GradeFailed (the score missing, never 0). Without: the
 * grader's exit code (0 passes, anything else fails); a grader that never exited is GradeFailed.
 */
import { REASONS } from '../constants';
import type { ScoreRead } from '../harvest/score';
import type { GradeRecord } from '../status/types';
import type { GradeEnd } from './types';

export interface GradeFacts {
  /** Ended by the planner (deadline, superseded) or a grader that could not run: not judged. */
  forced?: GradeEnd;
  /** A set's score: the file and the pass mark, and what the grader's results folder held. */
  score?: { file: string; pass: number; read: ScoreRead };
  /** The grader's end, when it ran and exited. */
  exit?: { exitCode: number; oomKilled: boolean };
}

export type GradeVerdict = Pick<GradeRecord, 'state' | 'reason' | 'message' | 'score' | 'passed' | 'scoreError'>;

export function gradeVerdict(f: GradeFacts): GradeVerdict {
  if (f.forced) return { state: f.forced.state, reason: f.forced.reason, message: f.forced.message };
  if (f.score) {
    const r = f.score.read;
    if ('score' in r) return { state: 'graded', score: r.score, passed: r.score >= f.score.pass };
    const how = f.exit ? `exited ${f.exit.exitCode}${f.exit.oomKilled ? ' (OOM-killed)' : ''}` : 'did not run';
    return { state: 'failed', reason: REASONS.gradeFailed, message: `the grader ${how} without a score: ${r.error}`, scoreError: r.error };
  }
  if (f.exit) return { state: 'graded', passed: f.exit.exitCode === 0 };
  return { state: 'failed', reason: REASONS.gradeFailed, message: 'the grader ended without an exit code (it never ran, or its container is gone)' };
}

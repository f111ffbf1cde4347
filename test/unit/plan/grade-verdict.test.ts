/** plan/grade-verdict.ts: what a grader's end means, from the facts the executor gathers. */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { gradeVerdict } from '../../../src/plan/grade-verdict';

describe('gradeVerdict', () => {
  const exit = (exitCode: number, oomKilled = false) => ({ exitCode, oomKilled });

  it('a forced end is the planner’s, whatever the grader did', () => {
    const forced = { state: 'timedOut' as const, reason: REASONS.gradeTimedOut, message: 'past its deadline' };
    expect(gradeVerdict({ forced, exit: exit(0), score: { file: 'score', pass: 1, read: { score: 1 } } })).to.deep.equal(forced);
  });

  it('without a score: exit 0 passes, anything else fails, no exit is GradeFailed', () => {
    expect(gradeVerdict({ exit: exit(0) })).to.deep.equal({ state: 'graded', passed: true });
    expect(gradeVerdict({ exit: exit(1) })).to.deep.equal({ state: 'graded', passed: false });
    expect(gradeVerdict({})).to.include({ state: 'failed', reason: REASONS.gradeFailed });
  });

  it('with a score: the score against the pass mark, whatever the exit code', () => {
    expect(gradeVerdict({ exit: exit(3), score: { file: 'score', pass: 0.5, read: { score: 0.5 } } })).to.deep.equal({
      state: 'graded',
      score: 0.5,
      passed: true,
    });
    expect(gradeVerdict({ exit: exit(0), score: { file: 'score', pass: 0.5, read: { score: 0.4 } } })).to.deep.equal({
      state: 'graded',
      score: 0.4,
      passed: false,
    });
  });

  it('a score that cannot be read is GradeFailed with why, never a score of 0', () => {
    const v = gradeVerdict({ exit: exit(137, true), score: { file: 'score', pass: 1, read: { error: 'score: missing' } } });
    expect(v).to.deep.equal({
      state: 'failed',
      reason: REASONS.gradeFailed,
      message: 'the grader exited 137 (OOM-killed) without a score: score: missing',
      scoreError: 'score: missing',
    });
    expect(gradeVerdict({ score: { file: 'score', pass: 1, read: { error: 'x' } } }).message).to.equal('the grader did not run without a score: x');
  });
});

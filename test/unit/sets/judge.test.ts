/** The one judgement of a graded run (sets/grade-state.ts judge): the grader decides, but never makes a run its own limit ended a pass. */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { gradeHash } from '../../../src/spec/grade-hash';
import { judge } from '../../../src/sets/grade-state';
import type { LoadedSpec, NormalizedGrade, SetPolicy } from '../../../src/spec/types';
import type { AttemptStatus, GradeRecord } from '../../../src/status/types';
import { spec, status } from '../../support/builders';

const G: NormalizedGrade = {
  image: null,
  command: ['sh', '-c', 'exit 0'],
  env: {},
  fixture: null,
  fixtureDigest: null,
  protect: [],
  deadlineSeconds: 60,
  resources: { cpus: null, memoryBytes: null, pids: 512 },
  network: { mode: 'none' },
  when: 'always',
};
const grade = (over: Partial<GradeRecord> = {}): GradeRecord => ({
  k: 1,
  run: 1,
  gradeHash: gradeHash(G),
  state: 'graded',
  passed: true,
  resultsDir: '/r/a/run-1/grade-1/results',
  image: 'berth/busybox:local',
  createdAt: '2026-01-01T00:00:20.000Z',
  ...over,
});
const policy = (over: Partial<SetPolicy> = {}): SetPolicy => ({
  name: 'set',
  axes: ['x'],
  maxParallel: null,
  failFast: false,
  maxFailed: null,
  infra: [],
  score: null,
  source: { file: 'specs/set.yaml', line: 1, col: 1 },
  ...over,
});
const graded = (set?: SetPolicy): LoadedSpec => ({ ...spec('a', { grade: G }), ...(set ? { set: { set, coords: { x: '0' }, index: 0 } } : {}) });
const ended = (phase: AttemptStatus['phase'], reason: string, exitCode: number, g: GradeRecord[] = [grade()]) =>
  status('a', { phase, reason, exitCode, finishedAt: '2026-01-01T00:00:10.000Z', grades: g });

describe('sets: judging a graded run', () => {
  it('a run that timed out fails whatever its grader says (a plain Attempt and a set child alike)', () => {
    for (const set of [undefined, policy()]) {
      expect(judge(graded(set), ended('TimedOut', REASONS.deadlineExceeded, 143))).to.deep.equal({ outcome: 'failed' });
      expect(judge(graded(set), ended('TimedOut', REASONS.deadlineExceeded, 143, [grade({ passed: false })]))).to.deep.equal({ outcome: 'failed' });
      // a grader that could not judge the leftovers does not make it infrastructure either
      const timedOutGrade = grade({ state: 'timedOut', reason: REASONS.gradeTimedOut, passed: undefined });
      expect(judge(graded(set), ended('TimedOut', REASONS.deadlineExceeded, 143, [timedOutGrade]))).to.deep.equal({ outcome: 'failed' });
    }
  });

  it("so do OOMKilled and DiskLimitExceeded; a non-zero exit is the grader's to judge", () => {
    expect(judge(graded(), ended('Failed', REASONS.oomKilled, 137)).outcome).to.equal('failed');
    expect(judge(graded(), ended('Failed', REASONS.diskLimitExceeded, 137)).outcome).to.equal('failed');
    expect(judge(graded(), ended('Failed', REASONS.error, 1)).outcome).to.equal('passed');
    expect(judge(graded(), ended('Succeeded', REASONS.completed, 0)).outcome).to.equal('passed');
    expect(judge(graded(), ended('Succeeded', REASONS.completed, 0, [grade({ passed: false })])).outcome).to.equal('failed');
  });

  it('a set that counts TimedOut as infrastructure (score.infra) still does, graded or not', () => {
    expect(judge(graded(policy({ infra: ['TimedOut'] })), ended('TimedOut', REASONS.deadlineExceeded, 143))).to.deep.equal({
      outcome: 'infra',
      reason: 'TimedOut',
    });
  });

  it('while its grade is to come, a timed-out run is unfinished (the grade is still shown beside the verdict)', () => {
    expect(judge(graded(), ended('TimedOut', REASONS.deadlineExceeded, 143, []))).to.deep.equal({ outcome: 'unfinished' });
    expect(judge(graded(), ended('TimedOut', REASONS.deadlineExceeded, 143, [grade({ state: 'grading', passed: undefined })]))).to.deep.equal({
      outcome: 'unfinished',
    });
  });
});

/** classify: what a status record means for pass rates (CONTRACT.md, "Pass rates that do not flatter"), every phase and reason. */
import { expect } from 'chai';
import { PHASES, REASONS, TASK_FAILURES, type Phase } from '../../../src/constants';
import { classify, type Judging } from '../../../src/sets/outcome';
import { status } from '../../support/builders';

const rec = (phase: Phase, reason?: string, over: Parameters<typeof status>[1] = {}) => status('a', { phase, ...(reason ? { reason } : {}), ...over });
const of = (phase: Phase, reason?: string, policy?: Judging, over: Parameters<typeof status>[1] = {}, retries = 0) =>
  classify(rec(phase, reason, over), policy, retries);

const scored: Judging = { score: { file: 'score.json', pass: 0.5 }, infra: [] };

describe('sets/outcome classify', () => {
  it('a pass: Succeeded (without a score file)', () => {
    expect(of('Succeeded', REASONS.completed)).to.deep.equal({ outcome: 'passed' });
    expect(of('Succeeded', REASONS.completed, { score: null, infra: [] })).to.deep.equal({ outcome: 'passed' });
  });

  it("the attempt's own process is a task outcome: a non-zero exit, TimedOut, OOMKilled, DiskLimitExceeded fail", () => {
    expect(of('Failed', REASONS.error, undefined, { exitCode: 1 })).to.deep.equal({ outcome: 'failed' });
    expect(of('TimedOut', REASONS.deadlineExceeded)).to.deep.equal({ outcome: 'failed' });
    expect(of('Failed', REASONS.oomKilled)).to.deep.equal({ outcome: 'failed' });
    expect(of('Failed', REASONS.diskLimitExceeded)).to.deep.equal({ outcome: 'failed' });
  });

  it('what the attempt could not cause is infrastructure, named by its reason', () => {
    const infra = [
      REASONS.engineRestarted,
      REASONS.startFailed,
      REASONS.lost,
      REASONS.attestationFailed,
      REASONS.proxyFailed,
      REASONS.sidecarFailed,
      REASONS.createFailed,
    ];
    for (const r of infra) expect(of('Failed', r), r).to.deep.equal({ outcome: 'infra', reason: r });
    // reasons other helpers add (ImageMissing, GradeFailed, GradeTimedOut) and any other unknown one: infrastructure, never a pass or a failure
    for (const r of ['ImageMissing', 'GradeFailed', 'GradeTimedOut', 'SomethingNew']) expect(of('Failed', r), r).to.deep.equal({ outcome: 'infra', reason: r });
    expect(of('Failed')).to.deep.equal({ outcome: 'infra', reason: 'Failed' });
  });

  it('Blocked (named by why) and Invalid are infrastructure', () => {
    for (const r of [REASONS.secretMissing, REASONS.unsafePath, REASONS.nameConflict, REASONS.nodeRefused, 'ImageMissing', 'DiskPressure'])
      expect(of('Blocked', r), r).to.deep.equal({ outcome: 'infra', reason: r });
    expect(of('Blocked')).to.deep.equal({ outcome: 'infra', reason: 'Blocked' });
    expect(of('Invalid', REASONS.invalidSpec)).to.deep.equal({ outcome: 'infra', reason: 'Invalid' });
    expect(of('Invalid', REASONS.duplicateName)).to.deep.equal({ outcome: 'infra', reason: 'Invalid' });
  });

  it('not run to an outcome: FailFast, MaxFailedReached and Deleted are skipped; Replaced, Pending, Running and no record unfinished', () => {
    for (const r of [REASONS.failFast, REASONS.maxFailedReached, REASONS.deleted]) expect(of('Failed', r), r).to.deep.equal({ outcome: 'skipped', reason: r });
    expect(of('Failed', REASONS.replaced)).to.deep.equal({ outcome: 'unfinished' });
    expect(of('Pending', REASONS.waitingForSlot)).to.deep.equal({ outcome: 'unfinished' });
    expect(of('Pending', REASONS.createFailed)).to.deep.equal({ outcome: 'unfinished' });
    expect(of('Running', REASONS.harvestFailed)).to.deep.equal({ outcome: 'unfinished' });
    expect(classify(undefined, undefined, 0)).to.deep.equal({ outcome: 'unfinished' });
  });

  it('a failure with retries left is unfinished (as the planner retries it); spent, it counts', () => {
    for (const r of [REASONS.error, REASONS.oomKilled, REASONS.lost]) {
      expect(of('Failed', r, undefined, { retriesUsed: 0 }, 1), r).to.deep.equal({ outcome: 'unfinished' });
      expect(of('Failed', r, undefined, { retriesUsed: 1 }, 1).outcome, r).to.not.equal('unfinished');
    }
    // TimedOut and DiskLimitExceeded are not retried by the planner: final at once
    expect(of('TimedOut', REASONS.deadlineExceeded, undefined, {}, 3)).to.deep.equal({ outcome: 'failed' });
  });

  it('every phase has a class', () => {
    for (const p of PHASES) expect(['passed', 'failed', 'infra', 'skipped', 'unfinished'], p).to.include(of(p).outcome);
  });

  describe('with a score file', () => {
    it('the score decides, whatever the exit code; a verdict (true/false, {"pass": ...}) whatever score.pass says', () => {
      expect(of('Succeeded', REASONS.completed, scored, { score: 0.5 })).to.deep.equal({ outcome: 'passed' });
      expect(of('Succeeded', REASONS.completed, scored, { score: 0.4 })).to.deep.equal({ outcome: 'failed' });
      expect(of('Failed', REASONS.error, scored, { score: 0.9, exitCode: 1 })).to.deep.equal({ outcome: 'passed' });
      expect(of('Failed', REASONS.error, scored, { score: 0.1, exitCode: 1 })).to.deep.equal({ outcome: 'failed' });
      const high: Judging = { score: { file: 's', pass: 5 }, infra: [] };
      expect(of('Succeeded', REASONS.completed, high, { score: 1, scorePass: true })).to.deep.equal({ outcome: 'passed' });
      const low: Judging = { score: { file: 's', pass: 0 }, infra: [] };
      expect(of('Succeeded', REASONS.completed, low, { score: 0, scorePass: false })).to.deep.equal({ outcome: 'failed' });
    });

    it('an exit 0 without a readable score is ScoreMissing (infrastructure, never 0); a non-zero exit without one is the task failing', () => {
      expect(of('Succeeded', REASONS.completed, scored, { scoreError: 'score.json: not found' })).to.deep.equal({
        outcome: 'infra',
        reason: REASONS.scoreMissing,
      });
      expect(of('Succeeded', REASONS.completed, scored, { score: Number.NaN })).to.deep.equal({ outcome: 'infra', reason: REASONS.scoreMissing });
      expect(of('Failed', REASONS.error, scored, { scoreError: 'score.json: not found', exitCode: 2 })).to.deep.equal({ outcome: 'failed' });
    });

    it("the attempt's own limits fail even with a passing score", () => {
      expect(of('TimedOut', REASONS.deadlineExceeded, scored, { score: 1 })).to.deep.equal({ outcome: 'failed' });
      expect(of('Failed', REASONS.oomKilled, scored, { score: 1 })).to.deep.equal({ outcome: 'failed' });
    });
  });

  describe('a set that moves task outcomes to infrastructure (score.infra)', () => {
    it('moves exactly the outcomes it names, each named as TASK_FAILURES names it', () => {
      expect(TASK_FAILURES).to.deep.equal(['TimedOut', REASONS.oomKilled, REASONS.diskLimitExceeded, REASONS.error]);
      const moved: Judging = { score: null, infra: ['TimedOut', REASONS.oomKilled] };
      expect(of('TimedOut', REASONS.deadlineExceeded, moved)).to.deep.equal({ outcome: 'infra', reason: 'TimedOut' });
      expect(of('Failed', REASONS.oomKilled, moved)).to.deep.equal({ outcome: 'infra', reason: REASONS.oomKilled });
      expect(of('Failed', REASONS.diskLimitExceeded, moved)).to.deep.equal({ outcome: 'failed' });
      expect(of('Failed', REASONS.error, moved)).to.deep.equal({ outcome: 'failed' });
      expect(of('Succeeded', REASONS.completed, moved)).to.deep.equal({ outcome: 'passed' });
      const exits: Judging = { score: { file: 's', pass: 1 }, infra: [REASONS.error] };
      expect(of('Failed', REASONS.error, exits, { score: 1 })).to.deep.equal({ outcome: 'infra', reason: REASONS.error });
    });

    it('never the other way: an infrastructure reason named there stays infrastructure, and a retry still comes first', () => {
      expect(of('Failed', REASONS.lost, { score: null, infra: [REASONS.lost] })).to.deep.equal({ outcome: 'infra', reason: REASONS.lost });
      expect(of('Failed', REASONS.oomKilled, { score: null, infra: [REASONS.oomKilled] }, { retriesUsed: 0 }, 1)).to.deep.equal({ outcome: 'unfinished' });
    });
  });
});

/** Events derived from status records: runs, retries, deaths, drift, removal; oldest first. */
import { expect } from 'chai';
import { allEvents, eventsOf } from '../../../src/cli/events';
import { status } from '../../support/builders';
import type { GradeRecord } from '../../../src/status/types';

describe('events from status records', function () {
  it('a failed run, its retry, a drift and a collection', function () {
    const rec = status('a', {
      run: 2,
      phase: 'Succeeded',
      reason: 'Completed',
      exitCode: 0,
      createdAt: '2026-01-01T00:00:00.000Z',
      startedAt: '2026-01-01T00:00:20.000Z',
      finishedAt: '2026-01-01T00:00:30.000Z',
      collectedAt: '2026-01-01T00:01:00.000Z',
      lastAttestation: {
        at: '2026-01-01T00:00:25.000Z',
        depth: 'inspect',
        ok: false,
        checks: [{ name: 'networks', ok: false, detail: 'connected to bridge' }],
      },
      history: [
        {
          run: 1,
          specHash: 'h-a',
          phase: 'Failed',
          reason: 'Error',
          exitCode: 3,
          startedAt: '2026-01-01T00:00:01.000Z',
          finishedAt: '2026-01-01T00:00:02.000Z',
        },
      ],
    });
    expect(allEvents([rec]).map((e) => `${e.type} ${e.reason}: ${e.message}`)).to.deep.equal([
      'Normal Created: attempt recorded',
      'Normal Started: run 1 started',
      'Warning Died: run 1 Failed (Error, exit 3)',
      'Normal Retried: run 2 started (run 1 Error)',
      'Warning Drifted: run 2 failed attestation: connected to bridge',
      'Normal Finished: run 2 Succeeded (Completed, exit 0)',
      "Normal Removed: run 2's resources removed; results stay",
    ]);
  });

  it('orders several attempts by time, then name', function () {
    const a = status('a', { createdAt: '2026-01-01T00:00:05.000Z', startedAt: undefined, lastAttestation: undefined });
    const b = status('b', { createdAt: '2026-01-01T00:00:01.000Z', startedAt: '2026-01-01T00:00:05.000Z', lastAttestation: undefined });
    expect(allEvents([a, b]).map((e) => `${e.attempt} ${e.reason}`)).to.deep.equal(['b Created', 'a Created', 'b Started']);
    expect(
      eventsOf(status('c', { phase: 'Blocked', message: 'name held', startedAt: undefined, lastAttestation: undefined })).map((e) => e.reason),
    ).to.deep.equal(['Created', 'Blocked']);
  });

  it('a run being harvested has the one Finished event it keeps after: its recorded outcome, never "Running"', function () {
    const base = {
      run: 1,
      exitCode: 0,
      createdAt: '2026-01-01T00:00:00.000Z',
      startedAt: '2026-01-01T00:00:01.000Z',
      finishedAt: '2026-01-01T00:00:02.000Z',
    };
    const harvesting = status('a', { ...base, phase: 'Running', reason: 'Harvesting', ended: { run: 1, phase: 'Succeeded', reason: 'Completed' } });
    const done = status('a', { ...base, phase: 'Succeeded', reason: 'Completed' });
    const finished = (r: typeof done) => eventsOf(r).filter((e) => e.reason === 'Finished' || e.reason === 'Died');
    expect(finished(harvesting)).to.deep.equal(finished(done));
    expect(finished(done).map((e) => e.message)).to.deep.equal(['run 1 Succeeded (Completed, exit 0)']);
    // as `events -w` sees them: the two records give one Finished event between them
    expect(new Set([...eventsOf(harvesting), ...eventsOf(done)].filter((e) => e.reason === 'Finished').map((e) => JSON.stringify(e))).size).to.equal(1);
  });

  it('grades: Graded, Regraded (a grade after the first of its run), GradeFailed, each with its verdict', function () {
    const g = (k: number, over: Partial<GradeRecord>): GradeRecord => ({
      k,
      run: 1,
      gradeHash: 'h',
      state: 'graded',
      resultsDir: '/r',
      image: 'i',
      createdAt: '2026-01-01T00:01:00.000Z',
      finishedAt: `2026-01-01T00:0${k}:30.000Z`,
      ...over,
    });
    const rec = status('a', {
      phase: 'Succeeded',
      reason: 'Completed',
      lastAttestation: undefined,
      grades: [g(1, { passed: false, score: 0 }), g(2, { passed: true, score: 1 }), g(3, { state: 'failed', reason: 'GradeFailed', message: 'no score.json' })],
    });
    expect(
      eventsOf(rec)
        .filter((e) => /grade/i.test(e.reason))
        .map((e) => `${e.type} ${e.reason}: ${e.message}`),
    ).to.deep.equal([
      'Warning Graded: run 1 graded by grade-1: fail (score 0)',
      'Normal Regraded: run 1 regraded by grade-2: pass (score 1)',
      'Warning GradeFailed: run 1 grade-3 failed (GradeFailed: no score.json)',
    ]);
  });
});

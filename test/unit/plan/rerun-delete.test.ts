/** The planner honours `berth rerun` (rerunRequested) and `berth delete` (deleted) marks in status records. */
import { expect } from 'chai';
import { MARKS } from '../../../src/controller/marks';
import { plan } from '../../../src/plan/planner';
import { changeCount } from '../../../src/plan/render';
import { container, input, network, snapshot, spec, status, statuses } from '../../support/builders';

const finished = { phase: 'Succeeded' as const, reason: 'Completed', exitCode: 0, finishedAt: '2026-01-01T00:00:40.000Z' };

describe('planner: rerun and delete marks', function () {
  it('a rerun request for the current run starts run n+1 of the same spec; one for an earlier run is spent', function () {
    const rec = status('a', { ...finished, run: 3, rerunRequested: { at: '2026-01-01T00:00:50.000Z', run: 3 } });
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited', run: 3 })] }),
        statuses: statuses(rec),
      }),
    );
    const a = p.actions[0];
    expect([a?.kind, a?.desired?.run]).to.deep.equal(['retry', 4]);
    expect(a?.summary).to.contain('rerun requested');
    expect(a?.ops.map((o) => o.type)).to.deep.equal(['remove-container', 'begin-run', 'create-container', 'record-copied', 'start', 'attest-start']);
    const spent = plan(input({ specs: [spec('a')], statuses: statuses({ ...rec, rerunRequested: { at: rec.updatedAt, run: 2 } }) }));
    expect(changeCount(spent)).to.equal(0);
  });

  it('a rerun of a deleted run starts run n+1 (a deleted run is skipped in the summary, never a child to admit again)', function () {
    const rec = status('a', {
      phase: 'Failed',
      reason: 'Deleted',
      exitCode: 143,
      finishedAt: '2026-01-01T00:00:40.000Z',
      run: 1,
      rerunRequested: { at: '2026-01-01T00:00:50.000Z', run: 1 },
    });
    const a = plan(input({ specs: [spec('a')], statuses: statuses(rec) })).actions[0];
    expect([a?.kind, a?.desired?.run]).to.deep.equal(['retry', 2]);
  });

  it('berth rerun of a Blocked attempt is refused saying why: its run never started (no run number is spent), reconcile retries it (issue 54)', function () {
    const s = spec('a');
    const rec = status('a', { phase: 'Blocked', reason: 'ImageMissing', run: 1, specHash: s.hash });
    const at = '2026-01-01T00:01:00.000Z';
    expect(MARKS.rerun({ name: 'a', rec, spec: s, invalid: false, instance: 'test', at })).to.deep.equal({
      refused: 'it is Blocked (ImageMissing): run 1 never started, and reconcile tries it again by itself',
    });
    // a finished one is marked for run n+1
    const done = status('a', { ...finished, run: 1, specHash: s.hash });
    expect(MARKS.rerun({ name: 'a', rec: done, spec: s, invalid: false, instance: 'test', at })).to.deep.include({ rerunRequested: { at, run: 1 } });
  });

  it('a rerun waits for a slot like any new run', function () {
    const rec = status('a', { ...finished, rerunRequested: { at: '2026-01-01T00:00:50.000Z', run: 1 } });
    const busy = container('default', 'b', 'h-b');
    const p = plan(input({ maxRunning: 1, specs: [spec('a'), spec('b')], snapshot: snapshot({ containers: [busy] }), statuses: statuses(rec, status('b')) }));
    const a = p.actions.find((x) => x.attempt === 'a');
    expect([a?.kind, a?.desired?.run]).to.deep.equal(['wait', 2]);
  });

  it('a deleted running attempt is stopped, finished Deleted and its resources removed; the record stays', function () {
    const rec = status('a', { deleted: { at: '2026-01-01T00:00:50.000Z', specHash: 'h-a' } });
    const p = plan(
      input({
        specs: [spec('a')],
        snapshot: snapshot({ containers: [container('default', 'a', 'h-a')], networks: [network('default', 'a', 'h-a')] }),
        statuses: statuses(rec),
      }),
    );
    const a = p.actions[0];
    expect(a?.ops.map((o) => o.type)).to.deep.equal(['stop', 'finish', 'remove-container', 'remove-network']);
    const fin = a?.ops.find((o) => o.type === 'finish');
    expect(fin && 'outcome' in fin ? fin.outcome : undefined).to.deep.include({ phase: 'Failed', reason: 'Deleted' });
    expect(a?.ops.some((o) => o.type === 'forget')).to.equal(false);
  });

  it('a deleted attempt is not run again while its spec keeps that hash; a changed spec runs', function () {
    const pending = status('a', { phase: 'Pending', run: 0, startedAt: undefined, deleted: { at: '2026-01-01T00:00:50.000Z', specHash: 'h-a' } });
    const p = plan(input({ specs: [spec('a')], statuses: statuses(pending) }));
    expect(p.actions[0]?.ops).to.deep.equal([
      {
        type: 'record',
        resource: 'attempt:a',
        cause: 'deleted (berth delete)',
        patch: { phase: 'Failed', reason: 'Deleted', message: 'berth delete removed it before it ran' },
      },
    ]);
    const done = status('a', { ...finished, deleted: { at: '2026-01-01T00:00:50.000Z', specHash: 'h-a' } });
    expect(changeCount(plan(input({ specs: [spec('a')], statuses: statuses(done) })))).to.equal(0);
    const changed = plan(input({ specs: [spec('a', {}, 'h-a2')], statuses: statuses(done) }));
    expect(changed.actions[0]?.kind).to.equal('replace');
  });
});

/** The planner and a run whose outcome is recorded but whose harvest is not done (`ended`). No engine. */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { HARVEST_RETRY_MS, plan } from '../../../src/plan/planner';
import { renderPlan } from '../../../src/plan/render';
import { container, input, snapshot, spec, status, statuses, T0 } from '../../support/builders';

const golden = (p: ReturnType<typeof plan>) => renderPlan(p).trimEnd().split('\n');
const ended = { run: 1, phase: 'Succeeded' as const, reason: REASONS.completed };
const exited = () => snapshot({ containers: [container('default', 'a', 'h-a', { state: 'exited' })] });

describe('planner: harvests not done', function () {
  it('plans the harvest of a run killed mid-harvest, before anything else of the attempt', function () {
    const rec = status('a', { reason: REASONS.harvesting, ended, containerId: 'id-a', resultsDir: '/r/a/run-1/results' });
    const p = plan(input({ specs: [spec('a')], snapshot: exited(), statuses: statuses(rec) }));
    expect(golden(p)).to.deep.equal([
      'attempt a: finish (the run ended and its harvest was not done: run 1 ended Succeeded)',
      '  * harvest  attempt:a  (the run ended and its harvest was not done)',
      'Plan: 1 attempt to change (1 operations), 0 unchanged.',
    ]);
    const op = p.actions[0]?.ops[0];
    expect(op).to.include({ type: 'harvest', id: 'id-a', resultsDir: '/r/a/run-1/results' });
    expect(p.actions[0]?.requeueAfterMs).to.equal(0);
  });

  it('waits out the back-off after a failed harvest, then tries again', function () {
    const rec = status('a', { reason: REASONS.harvestFailed, message: 'disk full', ended, containerId: 'id-a', updatedAt: new Date(T0 - 1000).toISOString() });
    const early = plan(input({ specs: [spec('a')], snapshot: exited(), statuses: statuses(rec) }));
    expect(early.actions[0]).to.include({ kind: 'block', requeueAfterMs: HARVEST_RETRY_MS - 1000 });
    expect(early.actions[0]?.ops).to.deep.equal([]);
    const later = plan(input({ now: T0 + HARVEST_RETRY_MS, specs: [spec('a')], snapshot: exited(), statuses: statuses(rec) }));
    expect(later.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['harvest']);
  });

  it('harvests before a spec change replaces the run, and before a deleted spec is collected', function () {
    const rec = status('a', { reason: REASONS.harvesting, ended, containerId: 'id-a' });
    const changed = plan(input({ specs: [spec('a', {}, 'h-new')], snapshot: exited(), statuses: statuses(rec) }));
    expect(changed.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['harvest']);
    const gone = plan(input({ specs: [spec('b')], snapshot: exited(), statuses: statuses(rec) }));
    expect(gone.actions.find((a) => a.attempt === 'a')?.ops.map((o) => o.type)).to.deep.equal(['harvest']);
  });

  it("carries spec.harvest's caps to the finish and the harvest when they are not the defaults (the executor's then)", function () {
    const caps = { maxBytes: 100, maxFiles: 7 };
    const rec = status('a', { reason: REASONS.harvesting, ended, containerId: 'id-a' });
    const again = plan(input({ specs: [spec('a', { harvest: caps })], snapshot: exited(), statuses: statuses(rec) }));
    expect(again.actions[0]?.ops[0]).to.include({ type: 'harvest', caps });
    const running = statuses(status('a'));
    const finished = plan(input({ specs: [spec('a', { harvest: caps })], snapshot: exited(), statuses: running }));
    expect(finished.actions[0]?.ops.find((o) => o.type === 'finish')).to.include({ caps });
    const plain = plan(input({ specs: [spec('a')], snapshot: exited(), statuses: running }));
    expect(plain.actions[0]?.ops.find((o) => o.type === 'finish')).to.not.have.property('caps');
  });
});

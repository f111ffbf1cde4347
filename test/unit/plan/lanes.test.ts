/**
 * The controller's lanes and slots are the planner's to say (plan/lanes.ts, new-run.ts): a run's
 * end in the ending lane, a start holding a slot, a wait for a slot flagged so the controller
 * looks again when one frees. No engine.
 */
import { expect } from 'chai';
import { plan } from '../../../src/plan/planner';
import { container, input, snapshot, spec, status, statuses, T0 } from '../../support/builders';

describe('planner: lanes and slots', function () {
  it('a new run takes a slot; the one that finds none waits for a slot, flagged', function () {
    const p = plan(input({ specs: [spec('a'), spec('b')], maxRunning: 1 }));
    const [a, b] = p.actions;
    expect(a).to.include({ attempt: 'a', kind: 'provision', takesSlot: true });
    expect(a).to.not.have.property('ending');
    expect(b).to.include({ attempt: 'b', kind: 'wait', waitsForSlot: true });
    expect(b).to.not.have.property('takesSlot');
  });

  it('a run past its deadline is stopped in the ending lane, taking no slot', function () {
    const rec = status('a', { deadlineAt: new Date(T0 - 1000).toISOString() });
    const p = plan(
      input({ specs: [spec('a')], statuses: statuses(rec), snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { id: 'id-a' })] }) }),
    );
    expect(p.actions[0]).to.include({ kind: 'stop', ending: true });
    expect(p.actions[0]).to.not.have.property('takesSlot');
  });

  it('a running attempt that needs nothing has no lane flags', function () {
    const p = plan(
      input({ specs: [spec('a')], statuses: statuses(status('a')), snapshot: snapshot({ containers: [container('default', 'a', 'h-a', { id: 'id-a' })] }) }),
    );
    for (const a of p.actions) expect(a).to.not.have.any.keys('ending', 'takesSlot', 'waitsForSlot');
  });
});

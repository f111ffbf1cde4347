/** berth wait's condition and verdict (pure): finished waits through pending retries; a phase that can no longer come ends the wait. */
import { expect } from 'chai';
import { parseWaitFor, settled, verdict, type Watched } from '../../../src/cli/wait-condition';
import type { Phase } from '../../../src/constants';

const w = (name: string, phase?: Phase, extra: Partial<NonNullable<Watched['status']>> & { retries?: number } = {}): Watched => {
  const { retries = 0, ...st } = extra;
  return { name, retries, ...(phase ? { status: { phase, retriesUsed: 0, ...st } } : {}) };
};

describe('wait condition', function () {
  it('parses finished and phase=X (any case), refuses the rest', function () {
    expect(parseWaitFor('finished')).to.deep.equal({ kind: 'finished' });
    expect(parseWaitFor('phase=succeeded')).to.deep.equal({ kind: 'phase', phase: 'Succeeded' });
    expect(parseWaitFor('phase=Nope')).to.equal(undefined);
    expect(parseWaitFor('condition=ready')).to.equal(undefined);
  });

  it('a failed run with retries left is not settled; without, it is', function () {
    expect(settled(w('a', 'Failed', { reason: 'Error', retries: 1 }))).to.equal(false);
    expect(settled(w('a', 'Failed', { reason: 'Error', retries: 1, retriesUsed: 1 }))).to.equal(true);
    expect(settled(w('a', 'Failed', { reason: 'AttestationFailed', retries: 3 }))).to.equal(true);
    expect(settled(w('a', 'Running'))).to.equal(false);
    expect(settled(w('a'))).to.equal(false);
    expect(settled(w('a', 'Blocked'))).to.equal(true);
  });

  it('finished: goes on while any is busy; then 0, 3 for Failed/TimedOut, 2 for Invalid', function () {
    const fin = { kind: 'finished' } as const;
    expect(verdict([w('a', 'Succeeded'), w('b', 'Running')], fin)).to.deep.equal({ met: ['a'], unmet: ['b'] });
    expect(verdict([w('a', 'Succeeded'), w('b', 'Succeeded')], fin).code).to.equal(0);
    expect(verdict([w('a', 'Succeeded'), w('b', 'TimedOut')], fin).code).to.equal(3);
    expect(verdict([w('a', 'Invalid'), w('b', 'Succeeded')], fin).code).to.equal(2);
    expect(verdict([w('a', 'Blocked')], fin).code).to.equal(1);
  });

  it('a run whose harvest failed (HarvestFailed, still Running) ends the wait with 1, as reconcile --wait', function () {
    const failed = w('a', 'Running', { reason: 'HarvestFailed' });
    expect(settled(failed)).to.equal(true);
    expect(verdict([failed, w('b', 'Succeeded')], { kind: 'finished' }).code).to.equal(1);
    expect(verdict([failed], { kind: 'phase', phase: 'Succeeded' }).code).to.equal(1);
    expect(settled(w('a', 'Running', { reason: 'Harvesting' }))).to.equal(false);
  });

  it('phase=X: met when every one is in X; a settled attempt in another phase ends the wait', function () {
    const ok = { kind: 'phase', phase: 'Succeeded' } as const;
    expect(verdict([w('a', 'Succeeded'), w('b', 'Pending')], ok).code).to.equal(undefined);
    expect(verdict([w('a', 'Succeeded'), w('b', 'Failed', { reason: 'Error' })], ok).code).to.equal(3);
    expect(verdict([w('a', 'Failed', { reason: 'Error', retries: 2 })], ok).code).to.equal(undefined);
    expect(verdict([w('a', 'Succeeded')], { kind: 'phase', phase: 'Running' }).code).to.equal(1);
    expect(verdict([w('a', 'Running')], { kind: 'phase', phase: 'Running' }).code).to.equal(0);
  });
});

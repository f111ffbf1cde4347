/** plan/settled.ts: the one "settled" predicate of `wait`, `reconcile --once --wait` and its progress line. */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { settled } from '../../../src/plan/settled';

describe('settled', () => {
  const st = (phase: 'Pending' | 'Running' | 'Succeeded' | 'Failed' | 'TimedOut' | 'Invalid' | 'Blocked', reason?: string, used = 0, infraUsed = 0) => ({
    phase,
    ...(reason ? { reason } : {}),
    retriesUsed: used,
    infraRetriesUsed: infraUsed,
  });

  it('a phase the attempt stays in is settled; one it moves on from is not', () => {
    for (const p of ['Succeeded', 'TimedOut', 'Invalid', 'Blocked'] as const) expect(settled({ status: st(p), retries: 0 }), p).to.equal(true);
    for (const p of ['Pending', 'Running'] as const) expect(settled({ status: st(p), retries: 0 }), p).to.equal(false);
    expect(settled({ retries: 0 })).to.equal(false);
  });

  it('a failure with a retry left in its budget is not settled; past the budget it is', () => {
    expect(settled({ status: st('Failed', REASONS.error, 0), retries: 1 })).to.equal(false);
    expect(settled({ status: st('Failed', REASONS.error, 1), retries: 1 })).to.equal(true);
    // a reason the spec's retries do not re-run
    expect(settled({ status: st('Failed', REASONS.attestationFailed, 0), retries: 3 })).to.equal(true);
  });

  it('an infrastructure death counts against --infra-retries, as configured', () => {
    expect(settled({ status: st('Failed', REASONS.engineRestarted, 0, 1), retries: 0, infraRetries: 1 })).to.equal(true);
    expect(settled({ status: st('Failed', REASONS.engineRestarted, 0, 1), retries: 0, infraRetries: 2 })).to.equal(false);
  });

  it('a grade to come holds it; a failed harvest settles it (berth reports it)', () => {
    expect(settled({ status: st('Succeeded'), retries: 0, gradePending: true })).to.equal(false);
    expect(settled({ status: st('Running', REASONS.harvestFailed), retries: 0 })).to.equal(true);
  });
});

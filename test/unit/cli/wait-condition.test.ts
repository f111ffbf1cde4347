/** berth wait's condition and verdict (pure): finished waits through pending retries; a phase that can no longer come ends the wait. */
import { expect } from 'chai';
import { failOnOf, outcomeExit, outcomeOf, parseWaitFor, settled, verdict, type Watched } from '../../../src/cli/wait-condition';
import { endLine, tally } from '../../../src/sets/outcome';
import type { Phase } from '../../../src/constants';

const w = (name: string, phase?: Phase, extra: Partial<NonNullable<Watched['status']>> & { retries?: number } = {}): Watched => {
  const { retries = 0, ...st } = extra;
  return { name, retries, ...(phase ? { status: { phase, retriesUsed: 0, ...st } } : {}) };
};

const [failed, infra, none] = ['failed', 'infra', 'none'] as const;

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

  it('finished: goes on while any is busy; then 0, 3 for a task failure, 5 for an infrastructure outcome (Invalid, Blocked too; 5 wins)', function () {
    const fin = { kind: 'finished' } as const;
    expect(verdict([w('a', 'Succeeded'), w('b', 'Running')], fin)).to.deep.equal({ met: ['a'], unmet: ['b'] });
    expect(verdict([w('a', 'Succeeded'), w('b', 'Succeeded')], fin).code).to.equal(0);
    expect(verdict([w('a', 'Succeeded'), w('b', 'TimedOut')], fin).code).to.equal(3);
    expect(verdict([w('a', 'Failed', { reason: 'OOMKilled' }), w('b', 'Failed', { reason: 'DiskLimitExceeded' })], fin).code).to.equal(3);
    expect(verdict([w('a', 'Invalid'), w('b', 'Succeeded')], fin).code).to.equal(5);
    expect(verdict([w('a', 'Blocked', { reason: 'SecretMissing' })], fin).code).to.equal(5);
    expect(verdict([w('a', 'Failed', { reason: 'Lost' }), w('b', 'Failed', { reason: 'Error' })], fin).code).to.equal(5);
    // a set's child: judged by its set (a missing score is infrastructure; the set may move a timeout there)
    const scored = { score: { file: 's.json', pass: 1 }, infra: [] };
    expect(verdict([{ ...w('a', 'Succeeded'), policy: scored }], fin).code).to.equal(5);
    expect(verdict([{ ...w('a', 'Succeeded', { score: 1 }), policy: scored }], fin).code).to.equal(0);
    expect(verdict([{ ...w('a', 'TimedOut'), policy: { score: null, infra: ['TimedOut'] } }], fin).code).to.equal(5);
  });

  it('--fail-on: infra lets task failures exit 0; none lets every outcome exit 0 (a failed harvest stays 1)', function () {
    const fin = { kind: 'finished' } as const;
    const failing = [w('a', 'Succeeded'), w('b', 'Failed', { reason: 'Error' })];
    const broken = [w('a', 'Failed', { reason: 'Error' }), w('b', 'Blocked', { reason: 'SecretMissing' })];
    expect([failed, infra, none].map((f) => verdict(failing, fin, f).code)).to.deep.equal([3, 0, 0]);
    expect([failed, infra, none].map((f) => verdict(broken, fin, f).code)).to.deep.equal([5, 5, 0]);
    const harvest = [w('a', 'Running', { reason: 'HarvestFailed' })];
    expect([failed, infra, none].map((f) => verdict(harvest, fin, f).code)).to.deep.equal([1, 1, 1]);
    // a phase that can no longer come fails the wait whatever --fail-on says
    expect(verdict([w('a', 'Failed', { reason: 'Error' })], { kind: 'phase', phase: 'Succeeded' }, 'none').code).to.equal(1);
    expect(failOnOf(undefined)).to.equal('failed');
    expect(() => failOnOf('some')).to.throw(/--fail-on "some": use failed, infra, none/);
  });

  it('outcomeExit: 5 wins over 3; the end line counts every class and names infrastructure outcomes by reason', function () {
    expect(outcomeExit({ failed: 2, infra: 1 }, 'failed')).to.equal(5);
    expect(outcomeExit({ failed: 2, infra: 0 }, 'failed')).to.equal(3);
    expect(outcomeExit({ failed: 2, infra: 0 }, 'infra')).to.equal(0);
    expect(outcomeExit({ failed: 0, infra: 0 }, 'failed')).to.equal(0);
    const items = [
      w('p1', 'Succeeded'),
      w('f1', 'Failed', { reason: 'Error' }),
      w('f2', 'TimedOut', { reason: 'DeadlineExceeded' }),
      w('b1', 'Blocked', { reason: 'SecretMissing' }),
      w('b2', 'Blocked', { reason: 'ImageMissing' }),
      w('b3', 'Blocked', { reason: 'ImageMissing' }),
      w('i1', 'Invalid', { reason: 'InvalidSpec' }),
      w('r1', 'Running'),
      w('s1', 'Failed', { reason: 'FailFast' }),
    ];
    const t = tally(items.map((i) => ({ name: i.name, outcome: outcomeOf(i) })));
    expect(endLine(t)).to.equal('1 passed, 2 failed, 4 infrastructure (2 ImageMissing: b2, b3; 1 Invalid: i1; 1 SecretMissing: b1), 1 skipped, 1 unfinished');
    expect(endLine(tally([]))).to.equal('0 passed, 0 failed, 0 infrastructure');
    const many = tally(Array.from({ length: 7 }, (_, i) => ({ name: `x${i}`, outcome: { outcome: 'infra' as const, reason: 'Lost' } })));
    expect(endLine(many)).to.equal('0 passed, 0 failed, 7 infrastructure (7 Lost: x0, x1, x2, x3, x4 and 2 more)');
    // runs touched by hand (berth exec, berth cp, the API) are named, never counted as clean ones silently
    expect(endLine(tally([{ name: 'a', outcome: { outcome: 'passed' as const } }]), ['a'])).to.equal(
      '1 passed, 0 failed, 0 infrastructure, 1 touched by hand (a)',
    );
    const six = Array.from({ length: 6 }, (_, i) => `t${i}`);
    expect(endLine(tally([]), six)).to.equal('0 passed, 0 failed, 0 infrastructure, 6 touched by hand (t0, t1, t2, t3, t4 and 1 more)');
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

/** /metrics at 100,000 attempts (issue 55): the series are the same whatever the number of attempts: no per-attempt label. */
import { expect } from 'chai';
import { PHASES } from '../../../src/constants';
import { ControllerMetrics } from '../../../src/controller/metrics';

async function series(m: ControllerMetrics): Promise<string[]> {
  return (await m.registry.metrics()).split('\n').filter((l) => l !== '' && !l.startsWith('#'));
}

describe('controller metrics at 100,000 attempts', function () {
  it('a load of 100,000 records gives the series a load of 10 does, counts by phase only', async function () {
    const small = new ControllerMetrics({ processMetrics: false });
    small.observeLoad(
      0,
      PHASES.slice(0, 3)
        .flatMap((phase) => Array.from({ length: 3 }, () => ({ phase })))
        .concat([{ phase: 'Running' }]),
    );
    const big = new ControllerMetrics({ processMetrics: false });
    big.observeLoad(
      2,
      Array.from({ length: 100_000 }, (_, i) => ({ phase: PHASES[i % PHASES.length] as (typeof PHASES)[number] })),
    );
    for (const m of [small, big]) {
      m.reconciled('success', 0.1);
      for (let i = 0; i < 1000; i++) m.engineListener({ kind: 'containers', op: 'inspect', ms: 3, error: i % 7 === 0 } as never);
    }
    const a = await series(small);
    const b = await series(big);
    const names = (xs: string[]) => xs.map((l) => l.replace(/ [^ ]+$/, ''));
    expect(names(b)).to.deep.equal(names(a));
    expect(b.length).to.be.below(200);
    expect(b.filter((l) => l.startsWith('berth_attempts{'))).to.have.length(PHASES.length);
    const sum = b.filter((l) => l.startsWith('berth_attempts{')).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
    expect(sum).to.equal(100_000);
  });
});

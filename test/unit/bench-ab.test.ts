/** bench/ab.ts's pure parts: which workloads both builds have, and when a row is called worse. */
import { expect } from 'chai';
import { absoluteFigure, benchRunOf, compareAbsolute, compareRatios, groupsOf, workloadsOf } from '../../bench/ab';
import { REPO } from '../../bench/lib/proc';

describe('bench A/B', () => {
  it("reads the workloads from bench/run.ts's header, and runs resources with noop", async () => {
    const all = await workloadsOf(REPO);
    expect(all).to.include.members(['noop', 'resources', 'fleet', 'startup']);
    expect(groupsOf(['noop', 'resources', 'fleet'])).to.deep.equal([['noop', 'resources'], ['fleet']]);
    expect(groupsOf(['noop', 'resources', 'fleet', 'swarm'], new Set(['fleet', 'swarm']), new Set(['swarm']))).to.deep.equal([['fleet']]);
  });

  it("calls a row worse only above the other's whole range and past the slack", () => {
    const other = { median: 1.0, min: 0.9, max: 1.2 };
    expect(compareRatios({ median: 1.3, min: 1.25, max: 1.4 }, other, 0.1).call).to.equal('worse');
    expect(compareRatios({ median: 1.15, min: 1.1, max: 1.3 }, other, 0.1).call, 'inside its range').to.equal('same');
    expect(compareRatios({ median: 1.21, min: 1.1, max: 1.3 }, { median: 1.15, min: 0.9, max: 1.2 }, 0.1).call, 'within the slack').to.equal('same');
    expect(compareRatios({ median: 0.8, min: 0.7, max: 0.85 }, other, 0.1)).to.deep.equal({ change: 0.8, call: 'better' });
  });

  it('reads the figure a row without a ratio is judged by: the one its target names, in one unit', () => {
    expect(absoluteFigure('108 MB (peak before the drops 98 MB; idle RSS 98 MB)', '≤ 150 MB')).to.equal(108e6);
    expect(absoluteFigure('1,087 MB', '≤ 1 GB')).to.equal(1087e6);
    expect(absoluteFigure('10 ms over 10.0 s = 0.10% of a core', '~0 (≤ 1% of a core)')).to.equal(0.1);
    expect(absoluteFigure('p50 38.2 ms, p95 119 ms (max 158 ms)', 'p95 ≤ 500 ms')).to.equal(119);
    expect(absoluteFigure('median 818 ms, max 1.30 s', 'max ≤ 2.00 s')).to.equal(1300);
    expect(absoluteFigure('1407 KiB (made in 46.8 ms (37.1 ms–67.4 ms))', '≤ 2 MB')).to.equal(1407 * 1024);
    expect(absoluteFigure('2.50 s', '≤ 5.00 s')).to.equal(2500);
    expect(absoluteFigure('4 at 10, 4 at 200, 4 at 1,000', 'the same at every size')).to.equal(undefined);
    expect(absoluteFigure('5 MiB/s', '')).to.equal(undefined);
  });

  it('calls a row without a ratio worse when its verdict fell or its figure rose past the slack', () => {
    const row = (berth: string, verdict = 'PASS', target = '≤ 250 MB') => ({ id: 'r', workload: 'r', berth, verdict, target });
    expect(compareAbsolute(row('186 MB'), row('180 MB'), 0.2).call).to.equal('same');
    expect(compareAbsolute(row('240 MB'), row('180 MB'), 0.2).call).to.equal('worse');
    expect(compareAbsolute(row('120 MB'), row('180 MB'), 0.2).call).to.equal('better');
    expect(compareAbsolute(row('251 MB', 'MISS'), row('249 MB'), 0.2).call, 'PASS to MISS').to.equal('worse');
    expect(compareAbsolute(row('249 MB'), row('251 MB', 'MISS'), 0.2).call, 'MISS to PASS').to.equal('better');
    const calls = (berth: string, verdict = 'PASS') => ({ id: 'c', workload: 'c', berth, verdict, target: 'the same' });
    expect(compareAbsolute(calls('containers.list 1, images.list 1'), calls('containers.list 1'), 0.2).call, 'a count: its verdict').to.equal('same');
    expect(compareAbsolute(calls('containers.list 2', 'MISS'), calls('containers.list 1'), 0.2).call).to.equal('worse');
  });

  it("reads a bench run's id from its log (to sweep what an older build's run left), and nothing from another line", function () {
    const log = '[bench] node: using .node/bin/node\n[bench] run my6yer: 1 rounds; engine 20.10.24\n[bench] tenk: 50 running\n';
    expect(benchRunOf(log)).to.equal('my6yer');
    expect(benchRunOf('[bench] tenk: run ab12cd: x\n')).to.equal(undefined);
    expect(benchRunOf('[bench] run 0a1b2c')).to.equal(undefined);
  });
});

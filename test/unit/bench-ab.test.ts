/** bench/ab.ts's pure parts: which workloads both builds have, and when a row is called worse. */
import { expect } from 'chai';
import { compareRatios, groupsOf, workloadsOf } from '../../bench/ab';
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
});

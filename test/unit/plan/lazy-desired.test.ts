/** The planner's desired states are built on first use: once built, each is exactly what desiredAttempt() gives. */
import { expect } from 'chai';
import { desiredAttempt } from '../../../src/desired/attempt';
import { plan } from '../../../src/plan/planner';
import { runResultsDir } from '../../../src/plan/results';
import { input, spec } from '../../support/builders';

describe('planner: desired states built on first use', function () {
  it('a provisioned attempt carries the same desired state desiredAttempt() builds, field for field', function () {
    const loaded = spec('b-iso', {
      network: { mode: 'isolated', egress: ['example.com'] },
      volumes: [{ name: 'cache', mountPath: '/cache', readOnly: false }],
    });
    const inp = input({ specs: [loaded] });
    const d = plan(inp).actions[0]?.desired;
    expect(d, 'the action has a desired state').to.not.equal(undefined);
    const want = desiredAttempt({ instance: inp.instance }, loaded, 1, runResultsDir(inp.resultsRoot, loaded.spec.results, 1));
    // JSON.parse(JSON.stringify()) compares the built value as plain data (getters included).
    expect(JSON.parse(JSON.stringify(d))).to.deep.equal(JSON.parse(JSON.stringify(want)));
    for (const k of Object.keys(want) as (keyof typeof want)[]) {
      if (k === 'loaded') continue;
      expect(d?.[k], k).to.deep.equal(want[k]);
    }
  });
});

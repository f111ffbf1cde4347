/**
 * A no-op pass (nothing to change) costs a fixed number of engine calls, whatever the number of
 * finished attempts: the four label-filtered lists and the boot look. On the fake engine, through
 * the whole command line (`reconcile --once --wait` runs them, each task exiting 0 at its start).
 */
import { expect } from 'chai';
import { LABELS } from '../../../src/constants';
import { changeCount } from '../../../src/plan/render';
import { FakeSandbox } from '../../support/fake-sandbox';

const NOOP_CALLS = { 'containers.list': 1, 'engine.boot': 1, 'images.list': 1, 'networks.list': 1, 'volumes.list': 1 };

describe('a no-op pass (fake engine)', function () {
  let sb: FakeSandbox;
  beforeEach(async function () {
    sb = await FakeSandbox.create('noop');
    sb.fake.runTasks((c) => (c.labels[LABELS.component] === 'main' ? { code: 0 } : undefined));
  });
  afterEach(async function () {
    await sb.dispose();
  });

  it('costs the same engine calls at 3 and at 30 finished attempts', async function () {
    const perPass: Record<number, Record<string, number>> = {};
    for (const n of [3, 30]) {
      for (let i = 0; i < n; i++) await sb.write(`n${i}.yaml`, sb.attempt(`n${i}`, 'true', '  volumes: [{name: v, mountPath: /v}]\n'));
      const r = await sb.cli('reconcile', '--once', '--wait', '--max-running', '30');
      expect(r.code, r.stderr).to.equal(0);
      const noop = await sb.pass();
      expect(changeCount(noop.plan)).to.equal(0);
      expect(sb.calls.mutating).to.equal(0);
      perPass[n] = sb.calls.snapshot();
    }
    const phases = [...(await sb.store().loadAll()).values()].map((s) => s.phase);
    expect([phases.length, new Set(phases)]).to.deep.equal([30, new Set(['Succeeded'])]);
    expect(perPass[3]).to.deep.equal(NOOP_CALLS);
    expect(perPass[30]).to.deep.equal(perPass[3]);
  });
});

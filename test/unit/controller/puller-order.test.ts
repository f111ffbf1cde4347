/**
 * The puller's order (controller/puller.ts, issue 49's bench): the pulls free slots wait for begin
 * first; a prefetch (`PullRequest.ahead`) begins only while none of those is under way or queued,
 * and becomes one of them when a plan asks for it for a free slot. Against the fake engine, whose
 * pull can be held open (a hung call) to see what else begins meanwhile.
 */
import { expect } from 'chai';
import { DEFAULTS } from '../../../src/constants';
import { nextPull, Puller } from '../../../src/controller/puller';
import { RegistryCredentials } from '../../../src/registry/credentials';
import { FakeClock, settle } from '../../../src/util/clock';
import { silentLogger } from '../../../src/util/log';
import { FakeEngine } from '../../support/fake-engine';

const REG = '172.17.0.1:5000';
const img = (n: number) => `${REG}/evals/img${n}:1`;
const w = (seq: number, ahead: boolean) => ({ seq, ahead });
/** A puller over the fake engine, --max-pulls 2, no credential file. */
const pullerOn = (fake: FakeEngine, clock: FakeClock, o: Partial<ConstructorParameters<typeof Puller>[0]> = {}) =>
  new Puller({
    engine: fake,
    credentials: new RegistryCredentials({ file: '/nonexistent/berth-config.json', env: {} }),
    maxPulls: 2,
    clock,
    log: silentLogger(),
    onSettled: () => undefined,
    ...o,
  });

describe('puller: the pulls free slots wait for first, prefetches after', function () {
  it('nextPull: a pull of now before any prefetch, each kind in the order asked; no prefetch while a pull of now runs', function () {
    expect(nextPull([w(0, true), w(1, false), w(2, false)], [])).to.deep.equal(w(1, false));
    expect(nextPull([w(3, true), w(2, true)], [])).to.deep.equal(w(2, true));
    expect(nextPull([w(3, true)], [w(1, false)])).to.equal(undefined);
    expect(nextPull([w(3, true)], [w(1, true)])).to.deep.equal(w(3, true));
    expect(nextPull([w(3, false)], [w(1, false)])).to.deep.equal(w(3, false));
    expect(nextPull([], [])).to.equal(undefined);
  });

  it('with --max-pulls 2, a prefetch waits while the pull a free slot waits for is under way, and begins once a plan asks it for a slot', async function () {
    const clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    const fake = new FakeEngine(clock);
    for (const n of [1, 2, 3]) fake.registry.set(img(n), { layers: [10, 20] });
    // the first pull (image 1) is held open
    fake.fail('images.pull', { hang: true }, { when: (args) => args[0] === img(1) });
    const settled: string[][] = [];
    const p = pullerOn(fake, clock, { onSettled: (names) => settled.push(names) });
    try {
      p.want([
        { ref: img(1), attempts: ['a'], runs: ['a#1'] },
        { ref: img(2), attempts: ['b'], runs: ['b#1'], ahead: true },
        { ref: img(3), attempts: ['c'], runs: ['c#1'], ahead: true },
      ]);
      await settle();
      const pulled = () => fake.calls.filter((c) => c.op === 'images.pull').map((c) => c.args[0]);
      expect(pulled()).to.deep.equal([img(1)]);
      expect(p.view().get(img(2))).to.deep.include({ queued: true });
      // a slot frees for b: its pull is one of now, and begins beside image 1's
      p.want([{ ref: img(2), attempts: ['b'], runs: ['b#1'] }]);
      await settle();
      expect(pulled()).to.deep.equal([img(1), img(2)]);
      expect(p.view().get(img(2))?.pulled).to.not.equal(undefined);
      // image 3 (a prefetch) still waits: image 1 (of now) is under way
      expect(pulled()).to.not.include(img(3));
      // image 1's pull ends (it fails: the held call released): the prefetch begins
      fake.releaseHangs();
      await p.drained();
      expect(pulled()).to.deep.equal([img(1), img(2), img(3)]);
      expect(p.view().get(img(3))?.pulled).to.not.equal(undefined);
      expect(p.view().get(img(1))?.failed).to.not.equal(undefined);
    } finally {
      await p.close();
    }
  });

  it('a prefetch waits while the controller starts runs, begins when the last start ends, and at the latest after DEFAULTS.prefetchYieldMs', async function () {
    const clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    const fake = new FakeEngine(clock);
    for (const n of [1, 2, 3]) fake.registry.set(img(n), { layers: [10] });
    let starting = 1;
    const p = pullerOn(fake, clock, { starting: () => starting });
    const pulled = () => fake.calls.filter((c) => c.op === 'images.pull').map((c) => c.args[0]);
    try {
      // a pull a free slot waits for begins whatever is being started; the prefetch waits
      p.want([
        { ref: img(1), attempts: ['a'], runs: ['a#1'] },
        { ref: img(2), attempts: ['b'], runs: ['b#1'], ahead: true },
      ]);
      await settle();
      expect(pulled()).to.deep.equal([img(1)]);
      // the start ends: the controller pumps, the prefetch begins
      starting = 0;
      p.pump();
      await settle();
      expect(pulled()).to.deep.equal([img(1), img(2)]);
      // another start in flight that does not end: the next prefetch begins once its wait is over, no sooner
      starting = 1;
      p.want([{ ref: img(3), attempts: ['c'], runs: ['c#1'], ahead: true }]);
      await settle();
      clock.advance(DEFAULTS.prefetchYieldMs - 10);
      await settle();
      expect(pulled()).to.not.include(img(3));
      clock.advance(20);
      await settle();
      expect(pulled()).to.deep.equal([img(1), img(2), img(3)]);
    } finally {
      await p.close();
    }
  });

  it('drained() with only a waiting prefetch queued resolves when a pump begins it, with no timer of its own', async function () {
    const clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    const fake = new FakeEngine(clock);
    fake.registry.set(img(1), { layers: [10] });
    let starting = 1;
    const p = pullerOn(fake, clock, { starting: () => starting });
    try {
      p.want([{ ref: img(1), attempts: ['a'], runs: ['a#1'], ahead: true }]);
      let done = false;
      const drained = p.drained().then(() => (done = true));
      await settle();
      expect(done, 'a prefetch still waits for the start').to.equal(false);
      // the fake clock does not move: only the pump the start's end brings can end the wait
      starting = 0;
      p.pump();
      await drained;
      expect(p.view().get(img(1))?.pulled).to.not.equal(undefined);
    } finally {
      await p.close();
    }
  });
});

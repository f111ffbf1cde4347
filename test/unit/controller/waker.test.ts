/**
 * The Waker of `reconcile --once --wait` against the fake engine: a `die` wakes the side passes
 * once the inspect of its container has answered, and what it saw is laid over the passes' lists.
 */
import { expect } from 'chai';
import { LABELS, NAMING } from '../../../src/constants';
import { Waker } from '../../../src/controller/waker';
import { observe } from '../../../src/observe/snapshot';
import { silentLogger } from '../../../src/util/log';
import { FakeEngine } from '../../support/fake-engine';

const I = 'unit-waker';
const IMAGE = 'berth/busybox:local';

describe('Waker (fake engine)', () => {
  let fake: FakeEngine;
  let waker: Waker;

  beforeEach(() => {
    fake = new FakeEngine();
    fake.addImage({ ref: IMAGE });
    waker = new Waker();
  });
  afterEach(() => {
    waker.close();
    fake.releaseHangs();
  });

  async function running(a: string): Promise<string> {
    const labels = { [LABELS.managed]: 'true', [LABELS.instance]: I, [LABELS.attempt]: a, [LABELS.component]: 'main', [LABELS.nonce]: `n-${a}` };
    const host = { networkMode: 'none', binds: [], mounts: [], capDrop: [], capAdd: [], securityOpt: [], privileged: false as const, init: true, pidsLimit: 64, readonlyRootfs: false };
    const id = await fake.containers.create({ name: NAMING.container(I, a), image: IMAGE, cmd: ['true'], env: [], workingDir: '/', labels, host });
    await fake.containers.start(id);
    return id;
  }
  const inspects = () => fake.calls.filter((c) => c.op === 'containers.inspect').length;
  /** Whether waitExit returned before `ms` (less a margin): woken, or timed out. */
  const wokenWithin = async (ms: number, signal = new AbortController().signal) => {
    const t = Date.now();
    await waker.waitExit(ms, signal);
    return Date.now() - t < ms - 100 ? 'woken' : 'timeout';
  };
  /** Until the engine's event stream is followed (the fake answers `stream` at once; a turn or two). */
  const followed = async () => {
    for (let i = 0; i < 20; i++) await new Promise((r) => setImmediate(r));
  };

  it('a die wakes the side passes once its inspect answered, and the passes see the exit the lists do not show yet', async () => {
    const id = await running('a');
    waker.followEngine(fake, I, silentLogger());
    await followed();
    fake.lagLists();
    const before = inspects();
    const t0 = Date.now();
    fake.exit(id, 2);
    await waker.waitExit(10_000, new AbortController().signal);
    expect(Date.now() - t0, 'woken by the inspect, not by the 10 s timeout').to.be.below(5_000);
    expect(inspects() - before).to.equal(1);
    const listed = await observe(fake, I, new Map());
    expect(listed.attempts.get('a')?.containers[0]?.state, 'the lists lag').to.equal('running');
    const seen = waker.apply(listed);
    expect(seen.attempts.get('a')?.containers.map((c) => [c.state, c.status])).to.deep.equal([['exited', 'Exited (2)']]);
    // the main wait is woken too
    await waker.wait(10_000);
    expect(Date.now() - t0).to.be.below(5_000);
  });

  it('an inspect that fails still wakes the side passes (the lists decide), with nothing laid over', async () => {
    const id = await running('b');
    waker.followEngine(fake, I, silentLogger());
    await followed();
    fake.lagLists();
    fake.fail('containers.inspect', { status: 500, message: 'busy' });
    const t0 = Date.now();
    fake.exit(id, 0);
    await waker.waitExit(10_000, new AbortController().signal);
    expect(Date.now() - t0).to.be.below(5_000);
    const listed = await observe(fake, I, new Map());
    expect(waker.apply(listed)).to.equal(listed);
  });
  it("a die that came while the attempt's action was under way wakes the side passes again when that action ends, once", async () => {
    const id = await running('b');
    waker.followEngine(fake, I, silentLogger());
    await followed();
    fake.exit(id, 0);
    const signal = new AbortController().signal;
    // the side pass the die woke: the attempt was busy then (its action not ended), so it did nothing for it
    await waker.waitExit(10_000, signal);
    const woken = (ms: number) => wokenWithin(ms, signal);
    waker.actionEnded('other');
    expect(await woken(400), 'an action with no die since: no wake').to.equal('timeout');
    waker.actionEnded('b');
    expect(await woken(10_000)).to.equal('woken');
    waker.actionEnded('b');
    expect(await woken(400), 'told once').to.equal('timeout');
  });


  it('an exit the inspect saw gets no second look: a pass whose lists were taken before it wakes no side pass', async () => {
    const id = await running('c');
    waker.followEngine(fake, I, silentLogger());
    await followed();
    const before = await observe(fake, I, new Map()); // lists taken while it still ran
    fake.lagLists();
    fake.exit(id, 0);
    expect(await wokenWithin(10_000), 'the inspect wakes them').to.equal('woken');
    waker.lookAgain(before);
    expect(await wokenWithin(600), 'no look after 50 ms: the exit is laid over every pass').to.equal('timeout');
  });

  it('an exit whose inspect could not tell is looked at again after a pass that still lists it running', async () => {
    const id = await running('d');
    waker.followEngine(fake, I, silentLogger());
    await followed();
    fake.lagLists();
    fake.fail('containers.inspect', { status: 500, message: 'busy' });
    fake.exit(id, 0);
    expect(await wokenWithin(10_000)).to.equal('woken');
    waker.lookAgain(await observe(fake, I, new Map()));
    expect(await wokenWithin(2_000), 'looked at again after 50 ms').to.equal('woken');
  });
});

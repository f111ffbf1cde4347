/**
 * ExitWatch against the fake engine: a `die` is answered by one inspect of its container, what it
 * saw stopped is laid over lists that lag, and forgotten once they catch up (or it is too old).
 */
import { expect } from 'chai';
import { ExitWatch, EXIT_OVERLAY_MS } from '../../../src/controller/exit-watch';
import { observe } from '../../../src/observe/snapshot';
import type { Snapshot } from '../../../src/observe/types';
import { FakeEngine } from '../../support/fake-engine';
import { LABELS, NAMING } from '../../../src/constants';

const I = 'unit-exits';
const IMAGE = 'berth/busybox:local';

describe('ExitWatch (fake engine)', () => {
  let fake: FakeEngine;
  let now: number;
  let settled: { attempt: string; seen: boolean }[];
  let watch: ExitWatch;
  let next: () => Promise<{ attempt: string; seen: boolean }>;

  beforeEach(() => {
    now = Date.parse('2030-01-01T00:00:00Z');
    fake = new FakeEngine({ now: () => now });
    fake.addImage({ ref: IMAGE });
    settled = [];
    let wake: (() => void) | undefined;
    watch = new ExitWatch(
      fake,
      () => now,
      (attempt, seen) => {
        settled.push({ attempt, seen });
        wake?.();
      },
    );
    next = async () => {
      while (settled.length === 0) await new Promise<void>((r) => (wake = r));
      return settled.shift() as { attempt: string; seen: boolean };
    };
  });

  /** A running main container of attempt `a`, as berth labels it. */
  async function running(a: string): Promise<string> {
    const labels = { [LABELS.managed]: 'true', [LABELS.instance]: I, [LABELS.attempt]: a, [LABELS.component]: 'main', [LABELS.nonce]: `n-${a}` };
    const id = await fake.containers.create({
      name: NAMING.container(I, a),
      image: IMAGE,
      cmd: ['true'],
      env: [],
      workingDir: '/',
      labels,
      host: {
        networkMode: 'none',
        binds: [],
        mounts: [],
        capDrop: [],
        capAdd: [],
        securityOpt: [],
        privileged: false,
        init: true,
        pidsLimit: 64,
        readonlyRootfs: false,
      },
    });
    await fake.containers.start(id);
    return id;
  }
  const listed = (): Promise<Snapshot> => observe(fake, I, new Map(), now);
  const stateOf = (s: Snapshot, a: string) => s.attempts.get(a)?.containers[0]?.state;

  it('lays the exit an inspect saw over lists that still show the container running, until they catch up', async () => {
    const id = await running('a');
    fake.lagLists();
    fake.exit(id, 3);
    const before = fake.calls.filter((c) => c.op === 'containers.inspect').length;
    watch.died('a', id);
    expect(await next()).to.deep.equal({ attempt: 'a', seen: true });
    expect(fake.calls.filter((c) => c.op === 'containers.inspect').length - before, 'one inspect per die').to.equal(1);
    const lagging = await listed();
    expect(stateOf(lagging, 'a'), 'the lists lag').to.equal('running');
    // it tells a's news where the lists hold that very container, not elsewhere
    expect([watch.names(lagging, 'a'), watch.names(lagging, 'b'), watch.names(await observe(fake, 'other', new Map(), now), 'a')]).to.deep.equal([
      true,
      false,
      false,
    ]);
    const seen = watch.apply(lagging);
    expect(stateOf(seen, 'a')).to.equal('exited');
    expect(seen.attempts.get('a')?.containers[0]?.status).to.equal('Exited (3)');
    expect(stateOf(lagging, 'a'), 'the lists as listed are left alone').to.equal('running');
    // still lagging: still laid over; caught up: forgotten
    expect(stateOf(watch.apply(await listed()), 'a')).to.equal('exited');
    expect(watch.size).to.equal(1);
    fake.catchUpLists();
    expect(stateOf(watch.apply(await listed()), 'a')).to.equal('exited');
    expect(watch.size).to.equal(0);
  });

  it('an exit is laid over lists taken at most EXIT_OVERLAY_MS after it; then the lists decide', async () => {
    const id = await running('a');
    fake.lagLists();
    fake.exit(id, 0);
    watch.died('a', id);
    expect((await next()).seen).to.equal(true);
    now += EXIT_OVERLAY_MS;
    expect(stateOf(watch.apply(await listed()), 'a')).to.equal('exited');
    now += 1;
    expect(stateOf(watch.apply(await listed()), 'a')).to.equal('running');
    expect(watch.size).to.equal(0);
  });

  it('a container still running, gone, or an inspect that fails: settled unseen, nothing laid over', async () => {
    const id = await running('a');
    watch.died('a', id); // a die whose container runs again, or a backend still saying running
    expect(await next()).to.deep.equal({ attempt: 'a', seen: false });
    watch.died('b', 'no-such-container');
    expect(await next()).to.deep.equal({ attempt: 'b', seen: false });
    fake.exit(id, 1);
    fake.fail('containers.inspect', { status: 500, message: 'busy' });
    watch.died('a', id);
    expect(await next()).to.deep.equal({ attempt: 'a', seen: false });
    expect(watch.size).to.equal(0);
  });

  it('after close, an inspect that ends late reports nothing', async () => {
    const id = await running('a');
    fake.exit(id, 0);
    fake.fail('containers.inspect', { hang: true });
    watch.died('a', id);
    watch.close();
    fake.releaseHangs();
    await new Promise((r) => setTimeout(r, 10));
    expect([settled, watch.size]).to.deep.equal([[], 0]);
  });
});

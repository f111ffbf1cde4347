/** The engine contract (test/contract/engine.contract.ts) on the fake engine, and the fake's own controls. */
import { expect } from 'chai';
import { classify } from '../../../src/engine/errors';
import { engineContract, WRITE_FILE_RE } from '../../contract/engine.contract';
import { FakeEngine } from '../../support/fake-engine';

const IMAGE = 'berth/busybox:local';

function fakeWithImage(now: () => number = Date.now): FakeEngine {
  const fake = new FakeEngine({ now });
  fake.addImage({ ref: IMAGE, labels: { 'dev.berth.test-image': 'busybox-fake' } });
  return fake;
}

let n = 0;
engineContract('the fake engine', () => {
  const fake = fakeWithImage();
  // the contract's one task that writes a file (WRITE_FILE), run as the shell would run it
  fake.runTasks((c) => {
    const m = c.cmd?.[0] === 'sh' ? WRITE_FILE_RE.exec(c.cmd[2] ?? '') : null;
    return m ? { code: 0, files: { [m[2] as string]: m[1] as string } } : undefined;
  });
  return {
    engine: fake,
    image: IMAGE,
    labels: { 'dev.berth.test-run': 'fake' },
    name: (tag) => `fake-${tag}-${++n}`,
    async exited(id, code) {
      // the fake runs no process: its task ends when the test says
      if ((await fake.containers.inspect(id)).runState.running) fake.exit(id, code);
    },
    async oomKilled(id) {
      if ((await fake.containers.inspect(id)).runState.running) fake.exit(id, 137, { oomKilled: true });
    },
    tag: async (source, ref) => void fake.tagImage(ref, source),
    untag: async (ref) => fake.untagImage(ref),
    async registry() {
      const auth = { username: 'u', password: 'p', serveraddress: 'registry.test:5000' };
      fake.registry.set('registry.test:5000/evals/x:1', { layers: [100, 2000], auth });
      return { ref: 'registry.test:5000/evals/x:1', auth, missing: 'registry.test:5000/evals/x:nope' };
    },
    // a build: a new image under the tag (the fake keeps the one it moved off, unnamed)
    rebuild: async (ref) => fake.addImage({ ref, labels: { 'dev.berth.test-run': 'fake', rebuilt: String(++n) } }),
    removeBuilt: async (ref) => fake.untagImage(ref),
    before: async () => undefined,
    after: async () => undefined,
  };
});

describe('fake engine controls', function () {
  it('fails the next matching call as told, then answers normally', async function () {
    const fake = fakeWithImage();
    fake.fail('containers.inspect', { status: 500 }, { when: (args) => args[0] === 'x' });
    expect(classify(await fake.containers.inspect('x').catch((e: unknown) => e))).to.equal('other');
    expect(classify(await fake.containers.inspect('x').catch((e: unknown) => e))).to.equal('not-found');
  });

  it('a timed-out call rejects as the adapter deadline does; a hung one until released', async function () {
    const fake = fakeWithImage();
    fake.fail('ping', { timeoutMs: 5 });
    expect(classify(await fake.ping().catch((e: unknown) => e))).to.equal('timeout');
    fake.fail('ping', { hang: true });
    const hung = fake.ping().catch((e: unknown) => e);
    let settled = false;
    void hung.then(() => (settled = true));
    await new Promise((r) => setImmediate(r));
    expect(settled).to.equal(false);
    fake.releaseHangs();
    expect(classify(await hung)).to.equal('unavailable');
  });

  it('reads time from the injected clock', async function () {
    let t = Date.parse('2030-01-01T00:00:00Z');
    const fake = fakeWithImage(() => t);
    const id = await fake.containers.create({
      name: 'clock',
      image: IMAGE,
      cmd: null,
      env: [],
      workingDir: '/',
      labels: {},
      host: {
        networkMode: 'none',
        binds: [],
        mounts: [],
        capDrop: [],
        capAdd: [],
        securityOpt: [],
        privileged: false,
        init: false,
        pidsLimit: 1,
        readonlyRootfs: false,
      },
    });
    await fake.containers.start(id);
    t += 5000;
    fake.exit(id, 1);
    const s = (await fake.containers.inspect(id)).runState;
    expect([s.startedAt, s.finishedAt, s.exitCode]).to.deep.equal(['2030-01-01T00:00:00.000Z', '2030-01-01T00:00:05.000Z', 1]);
  });
});

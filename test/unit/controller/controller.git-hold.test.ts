/**
 * The controller with a git source (real git over file://) against the fake engine: an action
 * waiting for a worker keeps the revision it was planned from on disk while later revisions
 * are switched to (its fixtures are copied when it runs), and the revision goes once the action
 * ends. The real engine cannot hold an action back on purpose; the fake engine's hang can.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Controller } from '../../../src/controller/controller';
import { GitSource } from '../../../src/git/source';
import { readSourceStatus } from '../../../src/git/status';
import { parseGitUrl } from '../../../src/git/url';
import { StatusStore } from '../../../src/status/store';
import { FakeClock, settle } from '../../../src/util/clock';
import { silentLogger } from '../../../src/util/log';
import { FakeEngine } from '../../support/fake-engine';
import { fakeCfg } from './helpers';
import { TestRepo } from '../../support/git-repo';

const I = 'unit-ctl-git';
const IMAGE = 'berth/busybox:local';
const SPEC = (name: string) => `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: ${IMAGE}\n  command: [sh, -c, 'true']\n`;

describe('controller with a git source: revisions held by actions under way', function () {
  this.timeout(30_000);
  let dir: string;
  let repo: TestRepo;
  let fake: FakeEngine;
  let ctl: Controller | undefined;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-ctl-git-'));
    repo = await TestRepo.create('hold');
  });
  afterEach(async function () {
    fake?.releaseHangs();
    await ctl?.stop();
    await fs.rm(dir, { recursive: true, force: true });
    await repo.remove();
  });

  async function until(what: string, cond: () => Promise<boolean> | boolean): Promise<void> {
    const deadline = Date.now() + 15_000;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await settle();
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  it("keeps an action's revision until the action ends, across two later switches", async function () {
    const clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    fake = new FakeEngine(clock);
    fake.addImage({ ref: IMAGE, labels: {} });
    const c1 = await repo.commit('one', { 'specs/a.yaml': SPEC('a'), 'specs/b.yaml': SPEC('b') });
    const url = parseGitUrl(repo.fileUrl);
    if (!url.ok) throw new Error(url.message);
    const stateDir = path.join(dir, 'state');
    const git = new GitSource({ url: url.value, path: 'specs', stateDir, instance: I, intervalMs: 3_600_000, log: silentLogger() });
    const revs = async () => (await fs.readdir(git.mirror.root)).filter((n) => n.startsWith('rev-')).map((n) => n.slice(4));
    // Every create hangs: with one worker, a's create holds it and b waits for it, both planned from c1.
    fake.fail('containers.create', { hang: true });
    ctl = new Controller({
      cfg: fakeCfg({ dir, instance: I, clock, specsDir: path.join(dir, 'unused'), stateDir }),
      engine: fake,
      store: new StatusStore(stateDir, I),
      log: silentLogger(),
      workers: 1,
      resyncMs: 3_600_000,
      clock,
      git,
    });
    await ctl.start();
    await until('a create is under way', () => fake.calls.some((c) => c.op === 'containers.create'));
    expect(git.current()?.revision).to.equal(c1);

    const c2 = await repo.commit('two', { 'specs/c.yaml': SPEC('c') });
    ctl.poller?.trigger();
    await until('c2 in force, cleanup done', async () => (await readSourceStatus(stateDir, I))?.revision === c2);
    const c3 = await repo.commit('three', { 'specs/d.yaml': SPEC('d') });
    ctl.poller?.trigger();
    // source.json is written after the switch's cleanup
    await until('c3 in force, cleanup done', async () => (await readSourceStatus(stateDir, I))?.revision === c3);
    expect((await revs()).sort(), 'c1 is held by the actions planned from it').to.deep.equal([c1, c2, c3].sort());
    expect(await fs.readdir(path.join(git.mirror.root, `rev-${c1}`))).to.deep.equal(['a.yaml', 'b.yaml']);

    // the hangs end (the creates fail): the actions end, and with them c1's hold
    fake.releaseHangs();
    await until('c1 removed once no action holds it', async () => !(await revs()).includes(c1));
    expect((await revs()).sort()).to.deep.equal([c2, c3].sort());
  });
});

/**
 * Which revision folders a git source keeps (real git over file://, no engine): the one in force
 * and the one before it; one an action under way holds, until its hold ends, also after later
 * switches; nothing else. A restart (after a berth killed between a switch and its cleanup)
 * keeps only the revision in force, whole. A fetch that fails is tried again after a back-off
 * (doubling, capped at the interval) that the poller keeps to.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GitPoller } from '../../src/git/poller';
import { GitSource } from '../../src/git/source';
import { readSourceStatus } from '../../src/git/status';
import { FakeClock } from '../../src/util/clock';
import { parseGitUrl, type GitUrl } from '../../src/git/url';
import { silentLogger } from '../../src/util/log';
import { TestRepo } from '../support/git-repo';
import { waitFor } from '../support/wait';

const spec = (name: string) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [sh, -c, "true"]\n`;

describe('git source: revision folders kept and removed', function () {
  this.timeout(60_000);
  let repo: TestRepo;
  let state: string;
  let url: GitUrl;

  before(async function () {
    repo = await TestRepo.create('revs');
    state = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-git-revs-'));
    const u = parseGitUrl(repo.fileUrl);
    if (!u.ok) throw new Error(u.message);
    url = u.value;
  });
  after(async function () {
    await repo.remove();
    await fs.rm(state, { recursive: true, force: true });
  });

  const source = () => new GitSource({ url, path: 'specs', stateDir: state, instance: 'i', intervalMs: 60_000, log: silentLogger() });
  const revs = async (src: GitSource) =>
    (await fs.readdir(src.mirror.root))
      .filter((n) => n.startsWith('rev-'))
      .map((n) => n.slice(4))
      .sort();
  const sync = async (src: GitSource) => {
    const out = await src.sync();
    if (!out.ok) throw new Error(out.message);
    return out;
  };

  it('keeps the revision in force and the one before; a held one until its hold ends; a restart keeps only the one in force', async function () {
    const src = source();
    await src.prepare();
    const c1 = await repo.commit('one', { 'specs/a.yaml': spec('a') });
    await sync(src);
    expect(await revs(src)).to.deep.equal([c1]);
    const c2 = await repo.commit('two', { 'specs/b.yaml': spec('b') });
    await sync(src);
    expect(await revs(src), 'the one before stays').to.deep.equal([c1, c2].sort());

    // an action planned from c2 holds it across two switches
    const release = src.hold(c2);
    const again = src.hold(c2);
    const c3 = await repo.commit('three', { 'specs/c.yaml': spec('c') });
    await sync(src);
    expect(await revs(src), 'c1 goes at the next switch').to.deep.equal([c2, c3].sort());
    const c4 = await repo.commit('four', { 'specs/d.yaml': spec('d') });
    await sync(src);
    expect(await revs(src), 'c2 is held').to.deep.equal([c2, c3, c4].sort());
    expect(await fs.readdir(path.join(src.mirror.root, `rev-${c2}`))).to.deep.equal(['a.yaml', 'b.yaml']);
    release();
    release(); // a second call of the same release changes nothing
    expect(await revs(src), 'still held once').to.deep.equal([c2, c3, c4].sort());
    again();
    await waitFor('c2 removed once no action holds it', async () => !(await revs(src)).includes(c2), { dirs: [src.mirror.root], timeoutMs: 10_000 });
    expect(await revs(src)).to.deep.equal([c3, c4].sort());

    // an unchanged fetch switches nothing and removes nothing
    await sync(src);
    expect(await revs(src)).to.deep.equal([c3, c4].sort());

    // a berth killed after a switch, before its cleanup: older revisions left beside the one in force
    await src.mirror.materialize(c1, 'specs');
    await src.mirror.materialize(c2, 'specs');
    expect(await revs(src)).to.have.length(4);
    const restarted = source();
    const inForce = await restarted.prepare();
    expect(inForce?.revision).to.equal(c4);
    expect(await revs(restarted), 'a restart keeps the revision in force only').to.deep.equal([c4]);
    expect((await fs.readdir(inForce!.dir)).sort()).to.deep.equal(['a.yaml', 'b.yaml', 'c.yaml', 'd.yaml']);
  });

  it('a revision written out but not switched to yet stays when a hold ends meanwhile', async function () {
    const src = source();
    await src.prepare();
    const c4 = src.current()?.revision as string;
    const held = src.hold(c4);
    await repo.commit('five', { 'specs/e.yaml': spec('e') });
    await sync(src);
    await repo.commit('six', { 'specs/f.yaml': spec('f') });
    await sync(src);
    expect(await revs(src)).to.include(c4);
    // c4's hold ends between the writing out of c7 and the switch to it; its cleanup runs then
    const m = src.mirror;
    const prune = m.prune.bind(m);
    let cleanup: Promise<void> | undefined;
    m.prune = (keep) => (cleanup = prune(keep));
    const switchTo = m.switchTo.bind(m);
    m.switchTo = async (sha) => {
      held();
      await cleanup;
      return switchTo(sha);
    };
    const c7 = await repo.commit('seven', { 'specs/g.yaml': spec('g') });
    await sync(src);
    expect(cleanup, 'the hold ended with a cleanup').to.not.equal(undefined);
    expect(await fs.readlink(path.join(m.root, 'current'))).to.equal(`rev-${c7}`);
    expect((await m.current())?.revision).to.equal(c7);
    expect((await fs.readdir(path.join(m.root, `rev-${c7}`))).sort()).to.deep.equal(['a.yaml', 'b.yaml', 'c.yaml', 'd.yaml', 'e.yaml', 'f.yaml', 'g.yaml']);
    expect(await revs(src)).to.not.include(c4);
  });

  it('a fetch that fails is tried again after a back-off that doubles up to the interval; a success ends it', async function () {
    const clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    const src = new GitSource({ url, path: 'specs', stateDir: state, instance: 'backoff', intervalMs: 7_000, log: silentLogger(), now: () => clock.now() });
    await src.prepare();
    let fetches = 0;
    const sync = src.sync.bind(src);
    src.sync = () => {
      fetches++;
      return sync();
    };
    const away = `${repo.bare}.away`;
    await fs.rename(repo.bare, away);
    const poller = new GitPoller(src, clock, () => undefined);
    const failures = async () => (await readSourceStatus(state, 'backoff'))?.lastError?.failures ?? 0;
    try {
      poller.start();
      // the poller's next try is scheduled once the failure is recorded
      const scheduled = (what: string, n: number) =>
        waitFor(what, async () => (await failures()) === n && clock.nextTimerAt() !== undefined, { dirs: [src.mirror.root] });
      await scheduled('the first failure', 1);
      // the waits after 1, 2, 3 failures: 2 s, 4 s, then the interval (7 s) caps 8 s
      for (const [n, wait] of [
        [1, 2_000],
        [2, 4_000],
        [3, 7_000],
      ] as const) {
        const st = await readSourceStatus(state, 'backoff');
        expect(st?.stale).to.equal(true);
        expect(Date.parse(st?.lastError?.nextRetryAt as string) - clock.now(), `after ${n}`).to.equal(wait);
        expect((clock.nextTimerAt() as number) - clock.now(), `the poller's timer after ${n}`).to.equal(wait);
        await clock.advanceAsync(wait - 1);
        expect(fetches, `no try before the back-off after ${n}`).to.equal(n);
        if (n === 3) await fs.rename(away, repo.bare);
        await clock.advanceAsync(1);
        expect(fetches, `a try once the back-off after ${n} ended`).to.equal(n + 1);
        if (n < 3) await scheduled(`failure ${n + 1}`, n + 1);
      }
      await waitFor('recovered', async () => (await readSourceStatus(state, 'backoff'))?.stale === false, { dirs: [src.mirror.root] });
      expect(src.nextDelayMs()).to.equal(7_000);
      expect((await readSourceStatus(state, 'backoff'))?.lastError).to.equal(undefined);
    } finally {
      await poller.stop();
      await fs.rename(away, repo.bare).catch(() => undefined);
    }
  });
});

/**
 * A lock file git left in berth's mirror when it was killed mid-fetch (with the berth that ran
 * it) never blocks the fetches after it: with no live process working in the mirror's folder the
 * lock is stale, removed, and the fetch tried again; while one does, the fetch fails naming the
 * lock, which stays. Real git, local repositories.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GitMirror } from '../../src/git/mirror';
import { TestRepo } from '../support/git-repo';

describe('git mirror: lock files left by a killed fetch', function () {
  this.timeout(60_000);
  let repo: TestRepo;
  let root: string;
  let mirror: GitMirror;
  let sha: string;

  before(async function () {
    repo = await TestRepo.create('locks');
    sha = await repo.commit('one', { 'specs/a.yaml': 'x: 1\n' });
  });
  after(async function () {
    await repo.remove();
  });
  beforeEach(async function () {
    root = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-git-locks-'));
    mirror = new GitMirror(root, { home: path.join(root, 'home') });
    await mirror.init();
  });
  afterEach(async function () {
    await fs.rm(root, { recursive: true, force: true });
  });

  const lock = async (rel: string): Promise<string> => {
    const p = path.join(mirror.mirror, rel);
    await fs.mkdir(path.dirname(p), { recursive: true });
    await fs.writeFile(p, '');
    return p;
  };
  const exists = (p: string) =>
    fs.access(p).then(
      () => true,
      () => false,
    );

  it('a stale ref lock: removed, and the fetch goes through', async function () {
    const l = await lock('refs/berth/target.lock');
    expect(await mirror.fetch(repo.fileUrl, undefined)).to.equal(sha);
    expect(await exists(l)).to.equal(false);
  });

  it('stale locks at the mirror’s top are removed when it is opened (init)', async function () {
    const l = await lock('packed-refs.lock');
    await new GitMirror(root, { home: path.join(root, 'home') }).init();
    expect(await exists(l)).to.equal(false);
  });

  it('a lock while a live process works in the mirror’s folder: the fetch fails naming it, and it stays', async function () {
    const l = await lock('refs/berth/target.lock');
    const busy = spawn('sleep', ['30'], { cwd: root, stdio: 'ignore' });
    try {
      await new Promise<void>((resolve) => busy.once('spawn', () => resolve()));
      const err = await mirror.fetch(repo.fileUrl, undefined).then(
        () => undefined,
        (e: Error) => e,
      );
      expect(err?.message).to.match(/Unable to create '.*refs\/berth\/target\.lock': File exists/);
      expect(await exists(l)).to.equal(true);
    } finally {
      busy.kill('SIGKILL');
    }
  });
});

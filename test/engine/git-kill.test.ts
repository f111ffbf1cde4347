/**
 * berth SIGKILLed while it switches revisions comes back on one whole revision: a child process
 * runs berth's GitSource.sync() over a ref moved to a new commit each time, whose tree is one of
 * two (each 400 files, every one marked with its tree's letter), and is killed at varied
 * moments; after each kill `current` names a revision whose folder is exactly one tree, whole,
 * and the next start removes what the killed one left half-written and every revision but the
 * one in force.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { GitMirror } from '../../src/git/mirror';
import { GitSource } from '../../src/git/source';
import { parseGitUrl } from '../../src/git/url';
import { silentLogger } from '../../src/util/log';
import { git, TestRepo } from '../support/git-repo';

const FILES = 400;

async function branch(repo: TestRepo, name: string, letter: string): Promise<string> {
  const files: Record<string, string> = {};
  for (let i = 0; i < FILES; i++) files[`specs/f${i}.txt`] = `${letter}\n`.repeat(50);
  await git(repo.work, 'checkout', '--quiet', '-B', name);
  const sha = await repo.commit(letter, files);
  await git(repo.work, 'push', '--quiet', repo.bare, `HEAD:refs/heads/${name}`);
  return sha;
}

describe('git source: a kill while switching revisions', function () {
  this.timeout(300_000);
  let repo: TestRepo;
  let state: string;
  let root: string;
  before(async function () {
    repo = await TestRepo.create('kill');
    state = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-git-kill-'));
    root = path.join(state, 'git', 'k');
  });
  after(async function () {
    await repo.remove();
    await fs.rm(state, { recursive: true, force: true });
  });

  it('leaves `current` on one whole revision at every moment, and a restart cleans up', async function () {
    await branch(repo, 'a', 'A');
    await branch(repo, 'b', 'B');
    const delays = [0, 20, 45, 70, 100, 140, 190, 250, 400, 600];
    let sawLeftover = false;
    // Every delay above; then, until some kill has landed mid-switch (a loaded machine shifts the
    // timing), at most 30 more spread over a switch's length.
    const EXTRA = 30;
    for (let k = 0; k < delays.length + EXTRA && (k < delays.length || !sawLeftover); k++) {
      const delay = delays[k] ?? (k * 37) % 300;
      // Its own process group: the kill takes berth and the git it runs, as a service manager's does.
      const child = spawn(process.execPath, ['--import', 'tsx', path.join(__dirname, '../support/git-switcher.ts'), state, 'k', repo.bare], {
        stdio: ['ignore', 'pipe', 'pipe'],
        detached: true,
      });
      let err = '';
      child.stderr.on('data', (d: Buffer) => (err += d.toString()));
      // Let it switch at least once, then kill it a varied time after a switch.
      await new Promise<void>((resolve, reject) => {
        child.stdout.once('data', () => resolve());
        child.once('exit', (code) => reject(new Error(`switcher exited with ${code}: ${err}`)));
      });
      await new Promise((r) => setTimeout(r, delay));
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      process.kill(-(child.pid as number), 'SIGKILL');
      await exited;

      const names = await fs.readdir(root);
      if (names.some((n) => n.startsWith('.tmp-'))) sawLeftover = true;
      const m = new GitMirror(root, { home: path.join(root, 'home') });
      const cur = await m.current();
      expect(cur, `after a kill ${delay} ms after a switch`).to.not.equal(undefined);
      // the tree of a or of b, whole: every file there, all with one letter
      const files = await fs.readdir(cur!.dir);
      expect(files.length).to.equal(FILES);
      const letter = (await fs.readFile(path.join(cur!.dir, files[0] as string), 'utf8')).slice(0, 1);
      expect(['A', 'B']).to.include(letter);
      for (const f of files) expect(await fs.readFile(path.join(cur!.dir, f), 'utf8')).to.equal(`${letter}\n`.repeat(50));
      // a restart removes what the killed berth left half-written, and every revision but the one in force
      const url = parseGitUrl(repo.fileUrl);
      if (!url.ok) throw new Error(url.message);
      const restarted = new GitSource({ url: url.value, ref: 'live', path: 'specs', stateDir: state, instance: 'k', intervalMs: 60_000, log: silentLogger() });
      expect((await restarted.prepare())?.revision).to.equal(cur!.revision);
      expect((await fs.readdir(root)).filter((n) => n.startsWith('.tmp-') || n.startsWith('rev-'))).to.deep.equal([`rev-${cur!.revision}`]);
    }
    // The kills did land mid-switch at least once (else this test proves little).
    expect(sawLeftover, 'some kill left a half-written revision behind').to.equal(true);
  });
});

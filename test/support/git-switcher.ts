/**
 * A child process for the kill test: berth's own GitSource following ref `live` of a bare
 * repository (a file:// URL), while this process points `live` at a new commit before each
 * sync() (fetch, write the revision out, switch `current`, clean up, source.json), its tree
 * that of branch `a` or `b` in turn, over and over, until it is killed. Each commit is new, so
 * every switch writes a revision out. Prints one line per switch.
 * Usage: node --import tsx git-switcher.ts STATE_DIR INSTANCE BARE_REPO
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { GitSource } from '../../src/git/source';
import { parseGitUrl } from '../../src/git/url';
import { silentLogger } from '../../src/util/log';

const exec = promisify(execFile);

async function main(): Promise<void> {
  const [stateDir, instance, bare] = process.argv.slice(2) as [string, string, string];
  const env = {
    PATH: process.env['PATH'] ?? '/usr/bin:/bin',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_AUTHOR_NAME: 't',
    GIT_AUTHOR_EMAIL: 't@berth.invalid',
    GIT_COMMITTER_NAME: 't',
    GIT_COMMITTER_EMAIL: 't@berth.invalid',
  };
  const git = async (...args: string[]) => (await exec('git', ['--git-dir', bare, ...args], { env })).stdout.trim();
  // A lock a killed switcher left on the remote's ref.
  await fs.rm(path.join(bare, 'refs', 'heads', 'live.lock'), { force: true });
  const trees = [await git('rev-parse', 'refs/heads/a^{tree}'), await git('rev-parse', 'refs/heads/b^{tree}')];
  const url = parseGitUrl(`file://${bare}`);
  if (!url.ok) throw new Error(url.message);
  const src = new GitSource({ url: url.value, ref: 'live', path: 'specs', stateDir, instance, intervalMs: 60_000, log: silentLogger() });
  await src.prepare();
  for (let i = 0; ; i++) {
    const want = await git('commit-tree', trees[i % 2] as string, '-m', `switch ${process.pid} ${i}`);
    await git('update-ref', 'refs/heads/live', want);
    const out = await src.sync();
    if (!out.ok) throw new Error(out.message);
    process.stdout.write(`${out.revision.revision}\n`);
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});

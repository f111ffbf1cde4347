/**
 * The workspace comes home, on the real engine: after the attempt's container exits, berth reads
 * workingDir out of it (the engine's archive API) into run-<n>/workspace/ (changes.json,
 * changes.patch, files/); git apply of the patch on a clean copy of the fixture gives the
 * workspace's text files; exclusions, links and secrets stay out; an attempt holding a secret
 * (its container removed after the finish) still gets its export; `export: none` writes
 * nothing; berth killed during the export ends with exactly one complete export.
 */
import { expect } from 'chai';
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { REASONS, WORKSPACE } from '../../src/constants';
import type { WorkspaceChanges } from '../../src/workspace/types';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');
const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');
const exists = (file: string) =>
  fs.lstat(file).then(
    () => true,
    () => false,
  );

const EDIT = [
  'cd /workspace',
  "printf 'line one\\nline 2 changed\\nline three\\n' > edit.txt",
  'echo brand new > added.txt',
  'rm gone.txt',
  'chmod +x run.sh',
  'mkdir -p node_modules/x && echo "module.exports = 1" > node_modules/x/index.js',
  'echo OPENAI_API_KEY=sk-live-0123456789abcdef > .env',
  'ln -s /etc/passwd pw',
].join(' && ');

describe('the workspace comes home (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);
  before(function () {
    try {
      execFileSync('git', ['--version']);
    } catch {
      throw new Error('git is needed for these tests: `make git` installs it');
    }
  });

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('wsexport');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  const runDir = (name: string, run = 1) => path.join(sb.resultsRoot, name, `run-${run}`);
  const changesOf = async (name: string): Promise<WorkspaceChanges> =>
    JSON.parse(await fs.readFile(path.join(runDir(name), WORKSPACE.dir, WORKSPACE.changes), 'utf8')) as WorkspaceChanges;

  async function fixture(dir: string): Promise<string> {
    await sb.write(`${dir}/fixture/keep.txt`, 'kept as it is\n');
    await sb.write(`${dir}/fixture/edit.txt`, 'line one\nline two\nline three\n');
    await sb.write(`${dir}/fixture/gone.txt`, 'to be deleted\n');
    await sb.write(`${dir}/fixture/run.sh`, '#!/bin/sh\necho run\n');
    await sb.write(`${dir}/fixture/logo.bin`, Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 0, 0, 0x0d, 0xff, 0xfe]));
    return path.join(sb.specsDir, dir, 'fixture');
  }

  it('lists exactly what the attempt changed, files/ holds the new bytes, and git apply of the patch reproduces the text files', async function () {
    const fx = await fixture('a');
    await sb.write('a/a.yaml', sb.attempt('edits', EDIT, '  fixture: ./fixture\n'));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    const c = await changesOf('edits');
    expect(c.version).to.equal(1);
    expect(c.workingDir).to.equal('/workspace');
    expect(c.fixtureDigest).to.match(/^[0-9a-f]{64}$/);
    expect(c.truncated).to.equal(false);
    const newEdit = 'line one\nline 2 changed\nline three\n';
    expect(c.added).to.deep.equal([{ path: 'added.txt', type: 'file', size: 10, sha256: sha('brand new\n'), mode: 0o644 }]);
    expect(c.modified).to.deep.equal([
      { path: 'edit.txt', type: 'file', size: Buffer.byteLength(newEdit), sha256: sha(newEdit), mode: 0o644 },
      { path: 'run.sh', type: 'file', size: 19, sha256: sha('#!/bin/sh\necho run\n'), mode: 0o755 },
    ]);
    expect(c.deleted).to.deep.equal([{ path: 'gone.txt', type: 'file' }]);
    expect(c.typeChanged).to.deep.equal([]);
    expect([...c.omitted].sort((x, y) => (x.path < y.path ? -1 : 1))).to.deep.equal([
      { path: '.env', reason: 'excluded' },
      { path: 'node_modules', reason: 'excluded' },
      { path: 'pw', reason: 'link-outside' },
    ]);
    // files/: the added and modified files, nothing else (no link, no excluded folder, no secret)
    const files = path.join(runDir('edits'), WORKSPACE.dir, WORKSPACE.files);
    expect((await fs.readdir(files)).sort()).to.deep.equal(['added.txt', 'edit.txt', 'run.sh']);
    expect(await fs.readFile(path.join(files, 'edit.txt'), 'utf8')).to.equal(newEdit);
    expect((await fs.stat(path.join(files, 'run.sh'))).mode & 0o777).to.equal(0o755);
    // the secret-looking value is nowhere in the export
    for (const f of await fs.readdir(path.join(runDir('edits'), WORKSPACE.dir), { recursive: true })) {
      const at = path.join(runDir('edits'), WORKSPACE.dir, f);
      if ((await fs.lstat(at)).isFile()) expect(await fs.readFile(at, 'utf8'), f).to.not.include('sk-live');
    }
    // the patch, on a clean copy of the fixture
    const copy = path.join(path.dirname(sb.specsDir), 'copy');
    await fs.cp(fx, copy, { recursive: true });
    const patch = path.join(runDir('edits'), WORKSPACE.dir, WORKSPACE.patch);
    execFileSync('git', ['apply', '--check', patch], { cwd: copy });
    execFileSync('git', ['apply', patch], { cwd: copy });
    expect(await fs.readFile(path.join(copy, 'edit.txt'), 'utf8')).to.equal(newEdit);
    expect(await fs.readFile(path.join(copy, 'added.txt'), 'utf8')).to.equal('brand new\n');
    expect(await fs.readFile(path.join(copy, 'keep.txt'), 'utf8')).to.equal('kept as it is\n');
    expect((await fs.stat(path.join(copy, 'run.sh'))).mode & 0o100).to.equal(0o100);
    expect(await exists(path.join(copy, 'gone.txt'))).to.equal(false);
    expect(await exists(path.join(copy, '.env'))).to.equal(false);
    expect(await exists(path.join(copy, 'node_modules'))).to.equal(false);
    expect(await exists(path.join(copy, 'pw'))).to.equal(false);
  });

  it('an attempt holding a secret (its container removed after the finish) still gets its export; export: none writes nothing', async function () {
    process.env.BERTH_TEST_WS_SECRET = 'not-in-the-export';
    await fixture('s');
    await sb.write('s/s.yaml', sb.attempt('holds', EDIT, '  fixture: ./fixture\n  secrets:\n    - {name: token, fromEnv: BERTH_TEST_WS_SECRET}\n'));
    await fixture('n');
    await sb.write('n/n.yaml', sb.attempt('none', EDIT, '  fixture: ./fixture\n  workspace: {export: none}\n'));
    try {
      const r = await sb.cli('reconcile', '--once', '--wait');
      expect(r.code, r.stderr).to.equal(0);
    } finally {
      delete process.env.BERTH_TEST_WS_SECRET;
    }
    const rec = await sb.status('holds');
    expect(rec?.phase).to.equal('Succeeded');
    // the container that held the secret is gone, the export made before
    const gone = await docker
      .getContainer(rec?.containerId as string)
      .inspect()
      .then(
        () => false,
        () => true,
      );
    expect(gone, 'the secret holder was removed').to.equal(true);
    const c = await changesOf('holds');
    expect(c.added.map((e) => e.path)).to.deep.equal(['added.txt']);
    expect(c.deleted.map((e) => e.path)).to.deep.equal(['gone.txt']);
    // export: none
    expect(await exists(path.join(runDir('none'), WORKSPACE.dir))).to.equal(false);
    expect((await fs.readdir(runDir('none'))).filter((n) => n.startsWith('workspace') || n.startsWith('.workspace'))).to.deep.equal([]);
  });

  it("the repository's .gitignore is read as git reads it: .pytest_cache stays out of the export, unless gitignore: false", async function () {
    const work = 'mkdir -p .pytest_cache/v && echo [] > .pytest_cache/v/ids && echo noise > run.log && echo fixed > fix.py';
    for (const [dir, extra] of [
      ['gi', ''],
      ['go', '  workspace: {gitignore: false}\n'],
    ] as const) {
      await sb.write(`${dir}/fixture/.gitignore`, '.pytest_cache/\n*.log\n');
      await sb.write(`${dir}/fixture/fix.py`, 'broken\n');
      await sb.write(`${dir}/${dir}.yaml`, sb.attempt(dir, work, `  fixture: ./fixture\n${extra}`));
    }
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    const on = await changesOf('gi');
    expect(on.added.map((e) => e.path)).to.deep.equal([]);
    expect(on.modified.map((e) => e.path)).to.deep.equal(['fix.py']);
    expect(on.omitted.map((o) => [o.path, o.reason]).sort()).to.deep.equal([
      ['.pytest_cache', 'excluded'],
      ['run.log', 'excluded'],
    ]);
    expect(await exists(path.join(runDir('gi'), WORKSPACE.dir, 'files', '.pytest_cache'))).to.equal(false);
    const off = await changesOf('go');
    expect(off.added.map((e) => e.path)).to.deep.equal(['.pytest_cache', '.pytest_cache/v', '.pytest_cache/v/ids', 'run.log']);
  });

  it('berth killed during the export: the next pass ends with exactly one complete export', async function () {
    await fixture('k');
    // 256 MiB to bring home: the export takes long enough to be killed in
    await sb.write(
      'k/k.yaml',
      sb.attempt('big', `cd /workspace && head -c 268435456 /dev/zero > big.bin && echo small > s.txt`, '  fixture: ./fixture\n  workspace: {maxBytes: 1Gi}\n'),
    );
    const child = spawn(process.execPath, [BIN, 'reconcile', '--once', '--wait', ...sb.globalArgs()], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c) => (err += String(c)));
    const exited = new Promise<unknown>((resolve) => child.on('exit', resolve));
    try {
      // the run folder first (berth makes it, before the container starts; a folder made here would be
      // stepped over), then its own events: the export's temp folder is there for well under a second
      await waitFor('the run folder', async () => exists(runDir('big')), { dirs: [path.join(sb.resultsRoot, 'big')], timeoutMs: 60_000 });
      await waitFor(
        'the export under way',
        async () => (await fs.readdir(runDir('big')).catch(() => [] as string[])).some((n) => n.startsWith(WORKSPACE.tempPrefix)),
        { dirs: [runDir('big')], timeoutMs: 60_000 },
      );
    } catch (e) {
      throw new Error(`${(e as Error).message}; berth said: ${err}`);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    expect(await exists(path.join(runDir('big'), WORKSPACE.dir, WORKSPACE.changes))).to.equal(false);
    expect((await sb.status('big'))?.reason).to.equal(REASONS.harvesting);
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    const names = await fs.readdir(runDir('big'));
    expect(names.filter((n) => n.startsWith(WORKSPACE.tempPrefix))).to.deep.equal([]);
    expect(names.filter((n) => n === WORKSPACE.dir)).to.deep.equal([WORKSPACE.dir]);
    const c = await changesOf('big');
    expect(c.added.map((e) => [e.path, e.size])).to.deep.equal([
      ['big.bin', 268435456],
      ['s.txt', 6],
    ]);
    expect((await fs.stat(path.join(runDir('big'), WORKSPACE.dir, WORKSPACE.files, 'big.bin'))).size).to.equal(268435456);
  });
});

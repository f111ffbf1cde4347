/**
 * Hostile attempts and hostile files (issue 12, host escapes and leaks), on the real engine. A
 * canary folder outside every folder berth owns, with a file of known content and mtime, proves
 * the host untouched: nothing is added to it, nothing in it is read or changed.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REASONS } from '../../src/constants';
import { Executor } from '../../src/execute/executor';
import { plan } from '../../src/plan/planner';
import { loadSpecs } from '../../src/spec/loader';
import { silentLogger } from '../../src/util/log';
import { snapshot } from '../support/builders';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { DesiredStates } from '../../src/plan/desired-for';

const CANARY_MTIME = new Date('2001-02-03T04:05:06Z');

/** A folder outside the sandbox with one file of known content and mtime. */
class Canary {
  private constructor(
    readonly dir: string,
    readonly content: string,
  ) {}

  static async make(): Promise<Canary> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-canary-'));
    const c = new Canary(dir, `canary-${randomBytes(8).toString('hex')}`);
    await fs.writeFile(c.file, `${c.content}\n`);
    await fs.utimes(c.file, CANARY_MTIME, CANARY_MTIME);
    await fs.utimes(dir, CANARY_MTIME, CANARY_MTIME);
    return c;
  }

  get file(): string {
    return path.join(this.dir, 'canary.txt');
  }

  /** Nothing added, removed or changed in the canary folder. */
  async expectUntouched(): Promise<void> {
    expect(await fs.readdir(this.dir)).to.deep.equal(['canary.txt']);
    expect(await fs.readFile(this.file, 'utf8')).to.equal(`${this.content}\n`);
    expect((await fs.stat(this.file)).mtimeMs).to.equal(CANARY_MTIME.getTime());
    expect((await fs.stat(this.dir)).mtimeMs).to.equal(CANARY_MTIME.getTime());
  }

  async destroy(): Promise<void> {
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}

/** Files under the engine's storage folder that hold `needle` (grep -r: no link followed, no fifo or device read). */
async function engineStorageHits(needle: string): Promise<string[]> {
  const root = ((await docker.info()) as { DockerRootDir: string }).DockerRootDir;
  return new Promise((resolve, reject) => {
    execFile('grep', ['-rlF', '-D', 'skip', '--', needle, root], { maxBuffer: 1 << 20 }, (err, stdout) => {
      // 1: nothing found; 2 with output: some file could not be read (a socket), the hits still count
      const code = (err as { code?: number } | null)?.code;
      if (err && code !== 1 && !(code === 2 && stdout)) return code === 2 ? resolve([]) : reject(err);
      resolve(stdout.split('\n').filter(Boolean));
    });
  });
}

/** Loads and plans the sandbox's specs now; `run()` executes that plan later (after a swap). */
async function planNow(sb: Sandbox): Promise<{ run: () => Promise<unknown> }> {
  const load = await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot });
  expect(load.errors).to.deep.equal([]);
  const p = plan({
    instance: sb.instance,
    policy: {},
    now: Date.now(),
    resultsRoot: sb.resultsRoot,
    specs: load.specs,
    protectedNames: new Set(),
    invalid: new Map(),
    unreadableFiles: new Set(),
    unreadableFolders: new Set(),
    snapshot: snapshot({}),
    statuses: new Map(),
    maxRunning: 8,
    attestIntervalMs: 60_000,
    desired: new DesiredStates(),
  });
  return {
    run: () =>
      new Executor({
        engine: sb.engine,
        store: sb.store(),
        instance: sb.instance,
        concurrency: 2,
        log: silentLogger(),
        env: {},
        resultsRoot: sb.resultsRoot,
      }).run(p),
  };
}

describe('hostile attempts and files (real engine)', function () {
  this.timeout(90_000);
  before(requireEngine);

  let sb: Sandbox;
  let canary: Canary;
  beforeEach(async function () {
    sb = await Sandbox.create('hostile');
    canary = await Canary.make();
  });
  afterEach(async function () {
    await sb.destroy();
    await canary.destroy();
  });

  it("refuses a results folder inside another attempt's: a link planted there never reaches the host", async function () {
    // Attempt a makes a folder inside its results and plants a link to a host folder where a run
    // folder of an attempt whose results lay there would go.
    await sb.write('a.yaml', sb.attempt('a', `mkdir /results/i2 && ln -s ${canary.dir} /results/i2/run-1`));
    const first = await sb.cli('reconcile', '--once', '--wait');
    expect(first.code, first.stderr).to.equal(0);
    expect(await fs.readlink(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'i2', 'run-1'))).to.equal(canary.dir);
    // b's results folder is a's plus .../i2: a decides what b's run folders are made of.
    await sb.write('b.yaml', sb.attempt('b', 'echo pwned > /results/owned', '  results: a/run-1/results/i2\n'));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.stderr).to.include('results-overlap');
    expect(r.stderr).to.match(/attempt "a"/);
    expect(r.stderr).to.match(/attempt "b"/);
    const b = await sb.status('b');
    expect(b?.phase).to.equal('Invalid');
    expect(b?.specErrors?.map((e) => e.code)).to.deep.equal(['results-overlap']);
    // a is protected as any invalid spec is: its finished record stays as it was.
    expect((await sb.status('a'))?.phase).to.equal('Succeeded');
    await canary.expectUntouched();
  });

  it('makes run folders one component at a time and never through a link swapped in after the plan', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'echo pwned > /results/owned', '  results: x/y\n'));
    const later = await planNow(sb);
    // Between the plan and its execution, the results folder's parent becomes a link to the host.
    await fs.mkdir(sb.resultsRoot, { recursive: true });
    await fs.symlink(canary.dir, path.join(sb.resultsRoot, 'x'));
    await later.run();
    const st = await sb.status('a');
    expect(st?.phase).to.equal('Blocked');
    expect(st?.reason).to.equal(REASONS.unsafePath);
    expect(st?.message).to.include(path.join(sb.resultsRoot, 'x')).and.include('symbolic link');
    await canary.expectUntouched();
  });

  it('reads a fromFile secret where it was checked: a folder swapped for a link to the host is refused', async function () {
    await sb.write('sec/canary.txt', 'the real secret\n');
    await sb.write('a.yaml', sb.attempt('a', 'cat /run/secrets/s > /results/got', '  secrets: [{name: s, fromFile: ./sec/canary.txt}]\n'));
    const later = await planNow(sb);
    await fs.rm(path.join(sb.specsDir, 'sec'), { recursive: true });
    await fs.symlink(canary.dir, path.join(sb.specsDir, 'sec'));
    await later.run();
    const st = await sb.status('a');
    expect(st?.phase).to.equal('Blocked');
    expect(st?.reason).to.equal(REASONS.unsafePath);
    expect(st?.message).to.match(/^secret s: .*sec is a symbolic link/);
    expect(JSON.stringify(st)).to.not.include(canary.content);
    // nothing was created in the engine for it
    const made = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`dev.berth.instance=${sb.instance}`] }) });
    expect(made).to.deep.equal([]);
    await canary.expectUntouched();
  });

  it('reads a fixture where it was checked: a folder swapped for a link to the host is never copied in', async function () {
    await sb.write('fx/input.txt', 'task\n');
    await sb.write('a.yaml', sb.attempt('a', 'cat /workspace/* > /results/got', '  fixture: ./fx\n'));
    const later = await planNow(sb);
    await fs.rm(path.join(sb.specsDir, 'fx'), { recursive: true });
    await fs.symlink(canary.dir, path.join(sb.specsDir, 'fx'));
    await later.run();
    const st = await sb.status('a');
    expect(st?.phase).to.equal('Blocked');
    expect(st?.reason).to.equal(REASONS.unsafePath);
    expect(st?.message).to.include('fx is a symbolic link');
    const made = await docker.listContainers({ all: true, filters: JSON.stringify({ label: [`dev.berth.instance=${sb.instance}`] }) });
    expect(made).to.deep.equal([]);
    await canary.expectUntouched();
  });

  it('never reads or prints a spec file that links to a host file outside the specs folder', async function () {
    await fs.writeFile(canary.file, `${canary.content}: {}\n`);
    await fs.utimes(canary.file, CANARY_MTIME, CANARY_MTIME);
    await fs.symlink(canary.file, path.join(sb.specsDir, 'x.yaml'));
    const atime = (await fs.stat(canary.file)).atimeMs;
    for (const args of [['validate', sb.specsDir], ['validate', path.join(sb.specsDir, 'x.yaml')], ['reconcile', '--once'], ['plan']]) {
      const r = await sb.cli(...args);
      const out = r.stdout + r.stderr;
      expect(out, args.join(' ')).to.not.include(canary.content);
      expect(out, args.join(' '))
        .to.include('x.yaml')
        .and.match(/links outside (the specs folder|its folder)/);
    }
    expect((await fs.stat(canary.file)).atimeMs).to.equal(atime);
  });

  it('copies a link inside a fixture as a link', async function () {
    await sb.write('fx/a.txt', 'alpha\n');
    await fs.symlink('a.txt', path.join(sb.specsDir, 'fx', 'l'));
    await sb.write('a.yaml', sb.attempt('a', 'readlink /workspace/l > /results/link; cat /workspace/l >> /results/link', '  fixture: ./fx\n'));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'link'), 'utf8')).to.equal('a.txt\nalpha\n');
  });

  it("leaves no secret value in the engine's storage once the attempt has finished", async function () {
    const fileValue = `berth-test-file-secret-${randomBytes(12).toString('hex')}`;
    const envValue = `berth-test-env-secret-${randomBytes(12).toString('hex')}`;
    const envVar = 'BERTH_TEST_HOSTILE_SECRET';
    await sb.write('sec/token', fileValue);
    await sb.write(
      'a.yaml',
      sb.attempt(
        'a',
        'test "$TOK" = "$(cat /run/secrets/env)" && cat /run/secrets/token > /dev/null && echo ok > /results/ok; exec sleep 300',
        ['  secrets:', '    - {name: token, fromFile: ./sec/token}', `    - {name: env, fromEnv: ${envVar}}`, '  env: {TOK: {secretRef: env}}', ''].join('\n'),
      ),
    );
    process.env[envVar] = envValue;
    try {
      const r = await sb.cli('reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      const id = (await sb.status('a'))?.containerId ?? '';
      // While it runs, the values are in the engine's storage (the search can find them)...
      expect(await engineStorageHits(fileValue)).to.not.deep.equal([]);
      expect(await engineStorageHits(envValue)).to.not.deep.equal([]);
      await docker.getContainer(id).kill();
      const done = await sb.cli('reconcile', '--once', '--wait');
      expect(done.code, done.stderr).to.equal(3); // killed: Failed
      expect((await sb.status('a'))?.phase).to.equal('Failed');
      // ...and once it has finished and been harvested, nowhere on the host's disk.
      expect(await engineStorageHits(fileValue)).to.deep.equal([]);
      // A secret opted into `env` is in the container's OCI spec, which the engine also hands to
      // containerd: its metadata database may keep the bytes of the deleted record in free pages
      // until they are reused. Out of berth's reach (documented); nowhere else.
      const envHits = await engineStorageHits(envValue);
      expect(envHits.filter((f) => !f.endsWith('/io.containerd.metadata.v1.bolt/meta.db'))).to.deep.equal([]);
      expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'ok'), 'utf8')).to.equal('ok\n');
      expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'status.json'), 'utf8')).to.include('"Failed"');
    } finally {
      delete process.env[envVar];
    }
  });
});

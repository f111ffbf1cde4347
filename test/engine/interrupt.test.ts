/**
 * Ctrl-C or SIGTERM during `reconcile --once --wait` (the built CLI, a child process, as a user
 * runs it; `make test` builds dist/ first): berth says what it does, releases both locks (the
 * engine's and the state folder's), leaves the attempt running and exits 130 / 143; the next
 * `reconcile --once` takes the instance at once and adopts the running attempt. And `unlock`
 * removes both locks a killed berth left.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS, lockVolumeName } from '../../src/constants';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

async function lockVolumeExists(instance: string): Promise<boolean> {
  return docker
    .getVolume(lockVolumeName(instance))
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

async function present(file: string): Promise<boolean> {
  return fs.lstat(file).then(
    () => true,
    () => false,
  );
}

async function running(sb: Sandbox): Promise<string[]> {
  const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=main`], status: ['running'] });
  return (await docker.listContainers({ filters: f })).map((c) => c.Id);
}

/** `berth ...args` with the sandbox's flags, as a child process; stderr collected. */
function berth(sb: Sandbox, ...args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args, ...sb.globalArgs()], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr.on('data', (c) => (stderr += String(c)));
  child.stdout.resume();
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal }));
  });
  return { child, exit, stderr: () => stderr };
}

describe('interrupting reconcile --once --wait (real engine, built CLI)', function () {
  this.timeout(90_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('intr');
    await sb.write('long.yaml', sb.attempt('long', 'sleep 300'));
  });
  afterEach(async function () {
    await sb.destroy();
  });

  for (const [signal, code] of [
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const) {
    it(`${signal}: says so, releases both locks, leaves the attempt running, exits ${code}`, async function () {
      const run = berth(sb, 'reconcile', '--once', '--wait');
      // Running is an event: its status record says so (written by the child)
      await waitFor('long Running', async () => (await sb.store().get('long'))?.phase === 'Running', {
        instance: sb.instance,
        dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
      });
      const before = await running(sb);
      expect(before).to.have.length(1);
      expect(await lockVolumeExists(sb.instance), 'the engine lock is held while it waits').to.equal(true);
      run.child.kill(signal);
      const ended = await run.exit;
      expect(ended, run.stderr()).to.deep.equal({ code, signal: null });
      expect(run.stderr())
        .to.contain(`interrupted (${signal}): finishing the operations under way and releasing the locks of instance ${sb.instance}; attempts keep running`)
        .and.contain('the locks are released and attempts keep running; run `berth reconcile --once --wait` again to pick them up');
      expect(await lockVolumeExists(sb.instance), 'the engine lock is released').to.equal(false);
      expect(await present(path.join(sb.stateDir, `${sb.instance}.lock`)), 'the lock file is released').to.equal(false);
      expect(await running(sb), 'the attempt keeps running, the same container').to.deep.equal(before);
      // the next writer takes the instance at once (no stale lock to take over) and adopts the run
      const next = await sb.cli('reconcile', '--once');
      expect(next.code, next.stderr).to.equal(0);
      expect(next.stderr).to.not.contain('took over');
      expect(await running(sb)).to.deep.equal(before);
    });
  }

  it('unlock removes both locks a killed berth left', async function () {
    const run = berth(sb, 'reconcile', '--once', '--wait');
    await waitFor('long Running', async () => (await sb.store().get('long'))?.phase === 'Running', {
      instance: sb.instance,
      dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
    });
    run.child.kill('SIGKILL');
    await run.exit;
    const lockFile = path.join(sb.stateDir, `${sb.instance}.lock`);
    expect(await present(lockFile), 'a killed berth leaves its lock file').to.equal(true);
    expect(await lockVolumeExists(sb.instance)).to.equal(true);
    const unlock = await sb.cli('unlock');
    expect(unlock.code, unlock.stderr).to.equal(0);
    expect(unlock.stdout).to.contain(`removed the engine lock of berth reconcile --once --wait, pid ${run.child.pid}`);
    expect(unlock.stdout).to.contain(`removed the lock file ${lockFile} of pid ${run.child.pid}`);
    expect(await lockVolumeExists(sb.instance)).to.equal(false);
    expect(await present(lockFile)).to.equal(false);
  });
});

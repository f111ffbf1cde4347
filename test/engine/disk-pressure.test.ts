/**
 * Disk pressure (issue 40), on the real engine: the sandbox's results root is a small ext4 file
 * system on a loop device, made and mounted by the test (root; torn down after, even on failure:
 * the image file is named by BERTH_TEST_RUN and only its loop device is detached). Filled by the
 * test below --disk-pressure-free, it holds a new attempt back (Pending/DiskPressure in `get` and
 * `describe`) while a running one goes on to Succeeded; once space is freed the held one starts.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { promises as fs, statfsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REASONS } from '../../src/constants';
import { startController } from '../support/controller';
import { requireEngine, TEST_RUN } from '../support/engine';
import { freePort } from '../support/git-repo';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const sh = (cmd: string, args: string[]) => execFileSync(cmd, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] }).trim();

/** Fills the file system of `dir` with one file until `share` of it is free; returns the file. */
async function fillTo(dir: string, share: number): Promise<string> {
  const s = statfsSync(dir);
  const fill = path.join(dir, 'fill');
  await fs.writeFile(fill, Buffer.alloc(Math.floor((s.bavail - s.blocks * share) * s.bsize)));
  const after = statfsSync(dir);
  expect(after.bavail / after.blocks).to.be.below(0.1);
  return fill;
}

/** A loop-mounted ext4 file system of `mib` MiB at `at`; `down()` unmounts it, detaches its loop device and removes its image. */
function loopFs(at: string, mib: number): { down(): void } {
  const image = path.join(os.tmpdir(), `berth-${TEST_RUN}-disk-pressure-${process.pid}.img`);
  let dev: string | undefined;
  let mounted = false;
  const down = () => {
    if (mounted) {
      try {
        sh('umount', [at]);
      } catch {
        sh('umount', ['-l', at]);
      }
      mounted = false;
    }
    // only the loop devices backed by this very image
    for (const line of sh('losetup', ['-j', image]).split('\n').filter(Boolean)) sh('losetup', ['-d', line.split(':')[0] as string]);
    dev = undefined;
    execFileSync('rm', ['-f', image]);
  };
  try {
    execFileSync('truncate', ['-s', `${mib}M`, image]);
    // no blocks reserved for root: berth (root here) would see them as free otherwise
    execFileSync('mkfs.ext4', ['-q', '-F', '-m', '0', '-L', 'berthtest', image]);
    dev = sh('losetup', ['-f', '--show', image]);
    sh('mount', [dev, at]);
    mounted = true;
  } catch (err) {
    down();
    throw err;
  }
  return { down };
}

describe('disk pressure holds new attempts back (real engine, a loop-mounted results root)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  let disk: { down(): void } | undefined;
  beforeEach(async function () {
    sb = await Sandbox.create('diskp');
    await fs.mkdir(sb.resultsRoot, { recursive: true });
    disk = loopFs(sb.resultsRoot, 32);
  });
  afterEach(async function () {
    disk?.down();
    disk = undefined;
    await sb.destroy();
  });

  it('below 10% free, a new attempt waits Pending/DiskPressure while a running one goes on; freed, it starts', async function () {
    const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
    const rec = (name: string) => sb.status(name);
    await sb.write('runner.yaml', sb.attempt('runner', 'while [ ! -e /results/go ]; do sleep 0.1; done; echo ok > /results/out'));
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const ctl = startController(sb, { metricsAddr: `127.0.0.1:${port}` });
    try {
      await waitFor('the runner running', async () => (await rec('runner'))?.phase === 'Running', { dirs: [attempts], timeoutMs: 60_000 });
      // fill the results root to 5% free (the default floor is 10%)
      const fill = await fillTo(sb.resultsRoot, 0.05);

      await sb.write('held.yaml', sb.attempt('held', 'echo held > /results/out'));
      const held = await waitFor('the new attempt held', async () => ((await rec('held'))?.reason === REASONS.diskPressure ? rec('held') : undefined), {
        dirs: [attempts],
        timeoutMs: 60_000,
      });
      expect(held?.phase).to.equal('Pending');
      expect(held?.message).to.match(
        new RegExp(`^disk pressure: the results root \\(${sb.resultsRoot}\\) has [0-9]% of its space free, below --disk-pressure-free 10%`),
      );
      const get = await sb.cli('get');
      expect(get.stdout.split('\n').find((l) => l.startsWith('held'))).to.match(/Pending\s+DiskPressure/);
      const describe = await sb.cli('describe', 'held');
      expect(describe.stdout).to.include('DiskPressure').and.include('disk pressure: the results root');
      expect((await rec('runner'))?.phase).to.equal('Running');
      // the controller says so: not ready (new runs wait), and the metric
      const ready = await fetch(`${url}/readyz`);
      expect([ready.status, await ready.text()]).to.deep.equal([503, `not ready: ${held?.message ?? ''}\n`]);
      const metrics = await (await fetch(`${url}/metrics`)).text();
      expect(metrics).to.match(/^berth_disk_pressure\{filesystem="results-root"\} 1$/m);
      expect(metrics).to.match(/^berth_disk_pressure\{filesystem="engine-data-root"\} 0$/m);

      // the running one goes on, to its end
      await fs.writeFile(path.join(sb.resultsRoot, 'runner', 'run-1', 'results', 'go'), '');
      await waitFor('the runner done', async () => (await rec('runner'))?.phase === 'Succeeded', { dirs: [attempts], timeoutMs: 60_000 });
      expect((await rec('held'))?.reason).to.equal(REASONS.diskPressure);

      // space back: the held one starts (the controller looks again on a timer)
      await fs.rm(fill);
      await waitFor('the held one done', async () => (await rec('held'))?.phase === 'Succeeded', { dirs: [attempts], timeoutMs: 60_000 });
      expect(await fs.readFile(path.join(sb.resultsRoot, 'held', 'run-1', 'results', 'out'), 'utf8')).to.equal('held\n');
      expect((await fetch(`${url}/readyz`)).status).to.equal(200);
      expect(await (await fetch(`${url}/metrics`)).text()).to.match(/^berth_disk_pressure\{filesystem="results-root"\} 0$/m);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });

  it('reconcile --once --wait holds a new attempt too, looks again on its own, and ends once space is back', async function () {
    const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
    const fill = await fillTo(sb.resultsRoot, 0.05);
    await sb.write('w.yaml', sb.attempt('w', 'echo w > /results/out'));
    const run = sb.cli('reconcile', '--once', '--wait', '--timeout', '120');
    await waitFor('held', async () => (await sb.status('w'))?.reason === REASONS.diskPressure, { dirs: [attempts], timeoutMs: 60_000 });
    await fs.rm(fill);
    const r = await run;
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/1 passed, 0 failed, 0 infrastructure/);
    expect((await sb.status('w'))?.phase).to.equal('Succeeded');
  });
});

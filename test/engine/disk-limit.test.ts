/**
 * resources.disk where berth measures (ext4 here: the engine cannot cap a container's size), on
 * the real engine: four attempts that write without end, into their root file system, into
 * /results, as a million empty files, and into a volume, each end Failed/DiskLimitExceeded close
 * to their limit, while a neighbour with the same limit runs to Succeeded, and the host's free space
 * stays above berth's pressure floor throughout.
 *
 * How close: the controller measures every --disk-interval (1 s here) and stops a run measured
 * over its limit at once (TERM, grace, KILL). Each writer is held to about WRITE_MIB_PER_S, so by
 * the time its last measure ended it had written at most about limit + one interval of writing,
 * plus the measure's own time: the test allows limit + SLACK_MIB. The writers' pace also keeps
 * the host's disk safe: all four together write a few hundred MiB at most.
 */
import { expect } from 'chai';
import { promises as fs, statfsSync } from 'node:fs';
import path from 'node:path';
import { loadSpecs } from '../../src/spec/loader';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const LIMIT_MIB = 64;
/** 1 MiB every 50 ms: about 20 MiB/s. */
const WRITE_MIB_PER_S = 20;
/** One interval of writing (1 s), the measure and the stop's plan, with room for a busy 2-core machine. */
const SLACK_MIB = 3 * WRITE_MIB_PER_S;

/** Writes 1 MiB files into `dir` without end, about WRITE_MIB_PER_S. */
const writer = (dir: string) => `mkdir -p ${dir}; i=0; while :; do dd if=/dev/zero of=${dir}/f$i bs=1M count=1 2>/dev/null; i=$((i+1)); sleep 0.05; done`;

describe('resources.disk, measured (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('disk');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('an attempt writing without end into its root fs, /results, a million files or a volume ends DiskLimitExceeded near its limit; its neighbour Succeeds', async function () {
    const disk = `  resources: {disk: ${LIMIT_MIB}Mi}\n`;
    await sb.write(
      'disk.yaml',
      [
        sb.attempt('rootfs', writer('/fill'), disk),
        sb.attempt('results', writer('/results/fill'), disk),
        // empty files, 1,000 at a time then a pause: each counts one 4 KiB block, so the limit is reached at 16,384 of them
        sb.attempt(
          'files',
          'mkdir /many; i=0; while [ $i -lt 1000000 ]; do : > /many/$i; i=$((i+1)); [ $((i % 1000)) -eq 0 ] && sleep 0.2; done; sleep 600',
          disk,
        ),
        sb.attempt('volume', writer('/data'), `${disk}  volumes: [{name: data, mountPath: /data}]\n`),
        sb.attempt('neighbour', 'dd if=/dev/zero of=/results/some bs=1M count=8 2>/dev/null; sleep 4; echo ok > /results/ok', disk),
      ].join('---\n'),
    );
    // the host's free space, read every 100 ms while they write: never below berth's pressure floor (10% by default)
    const free = () => {
      const f = statfsSync(sb.dir);
      return f.bavail / f.blocks;
    };
    let least = free();
    const watch = setInterval(() => (least = Math.min(least, free())), 100);
    const r = await sb
      .cli('reconcile', '--once', '--wait', '--disk-interval', '1s', '--max-running', '5', '--timeout', '150s')
      .finally(() => clearInterval(watch));
    expect(r.code, r.stderr).to.equal(3);
    expect(r.stdout).to.contain('1 passed, 4 failed, 0 infrastructure');
    expect(least, 'free share of the host file system during the run').to.be.at.least(0.1);

    const neighbour = await sb.status('neighbour');
    expect([neighbour?.phase, neighbour?.reason]).to.deep.equal(['Succeeded', 'Completed']);
    expect(await fs.readFile(path.join(neighbour?.resultsDir ?? '', 'ok'), 'utf8')).to.equal('ok\n');

    const where: Record<string, RegExp> = {
      rootfs: /writable layer (\d+(?:\.\d)?) (KiB|MiB)/,
      results: /results (\d+(?:\.\d)?) (KiB|MiB)/,
      files: /writable layer (\d+(?:\.\d)?) (KiB|MiB)/,
      volume: /volumes (\d+(?:\.\d)?) (KiB|MiB)/,
    };
    for (const name of ['rootfs', 'results', 'files', 'volume']) {
      const s = await sb.status(name);
      expect([s?.phase, s?.reason], `${name}: ${s?.message}`).to.deep.equal(['Failed', 'DiskLimitExceeded']);
      expect(s?.disk, name).to.deep.equal({ bytes: LIMIT_MIB * 1024 * 1024, source: 'spec', enforcedBy: 'measured' });
      const total = /disk use (?:at least )?(\d+(?:\.\d)?) MiB exceeds resources\.disk 64 MiB/.exec(s?.message ?? '');
      expect(total, `${name}: ${s?.message}`).to.not.equal(null);
      const mib = Number(total?.[1]);
      expect(mib, `${name}: ${s?.message}`)
        .to.be.at.least(LIMIT_MIB)
        .and.at.most(LIMIT_MIB + SLACK_MIB);
      // the part the attempt wrote into holds (nearly) all of it
      const part = where[name]?.exec(s?.message ?? '');
      const partMib = Number(part?.[1]) / (part?.[2] === 'KiB' ? 1024 : 1);
      expect(partMib, `${name}: ${s?.message}`).to.be.above(LIMIT_MIB - 8);
      // its results were harvested as any run's
      const runDir = path.dirname(s?.resultsDir ?? '');
      expect(await fs.readdir(runDir), name).to.include.members(['logs.txt', 'status.json']);
    }
    // what was written into /results stays there for the user (it is their run's results)
    const res = await sb.status('results');
    expect((await fs.readdir(path.join(res?.resultsDir ?? '', 'fill'))).length).to.be.above(LIMIT_MIB - 8);

    const d = await sb.cli('describe', 'rootfs');
    expect(d.stdout).to.match(/Disk limit:\s+64 MiB \(from resources\.disk; measured by berth at an interval: writable layer, results and volumes together\)/);
  });

  it("a volume's own size: a writer into it ends DiskLimitExceeded near its size without resources.disk; a neighbour within its size succeeds", async function () {
    const vol = (size: string) => `  volumes: [{name: data, mountPath: /data, size: ${size}}]\n`;
    await sb.write(
      'v.yaml',
      [
        sb.attempt('flood', writer('/data'), vol('16Mi')),
        sb.attempt('within', 'dd if=/dev/zero of=/data/some bs=1M count=4 2>/dev/null; sleep 3', vol('16Mi')),
      ].join('---\n'),
    );
    const r = await sb.cli('reconcile', '--once', '--wait', '--disk-interval', '1s', '--timeout', '120s');
    expect(r.code, r.stderr).to.equal(3);
    const flood = await sb.status('flood');
    expect([flood?.phase, flood?.reason], flood?.message).to.deep.equal(['Failed', 'DiskLimitExceeded']);
    const m = /^volume data \(\/data\) holds (\d+(?:\.\d)?) MiB, over its size 16 MiB$/.exec(flood?.message ?? '');
    expect(m, flood?.message).to.not.equal(null);
    // shown to a tenth of a MiB: just over 16 MiB shows as 16
    expect(Number(m?.[1]))
      .to.be.at.least(16)
      .and.at.most(16 + SLACK_MIB);
    expect(flood?.volumeSizes).to.deep.equal([{ name: 'data', mountPath: '/data', bytes: 16 * 1024 * 1024, enforcedBy: 'measured' }]);
    expect(flood?.disk).to.equal(undefined);
    const within = await sb.status('within');
    expect([within?.phase, within?.reason], within?.message).to.deep.equal(['Succeeded', 'Completed']);
    const d = await sb.cli('describe', 'flood');
    expect(d.stdout).to.match(/Volume data:\s+16 MiB at most \(spec\.volumes\[\]\.size; measured by berth at an interval\)/);
  });

  it('--default-disk limits an attempt without resources.disk, outside the spec hash; describe says where it comes from', async function () {
    await sb.write('d.yaml', sb.attempt('unlimited', writer('/fill')));
    const r = await sb.cli('reconcile', '--once', '--wait', '--disk-interval', '1s', '--default-disk', '32Mi', '--timeout', '120s');
    expect(r.code, r.stderr).to.equal(3);
    const s = await sb.status('unlimited');
    expect([s?.phase, s?.reason], s?.message).to.deep.equal(['Failed', 'DiskLimitExceeded']);
    expect(s?.message).to.match(/exceeds --default-disk 32 MiB/);
    expect(s?.disk).to.deep.equal({ bytes: 32 * 1024 * 1024, source: 'default', enforcedBy: 'measured' });
    const d = await sb.cli('describe', 'unlimited');
    expect(d.stdout).to.match(/Disk limit:\s+32 MiB \(from --default-disk;/);
    // the spec hash is the spec's own: the flag is no part of it
    const load = await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot });
    expect(s?.specHash)
      .to.equal(load.specs[0]?.hash)
      .and.to.match(/^[0-9a-f]{64}$/);
  });
});

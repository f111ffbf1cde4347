/**
 * Results are bounded (issue 40), on the real engine: a results folder of 101,500 files and one
 * of 20 GiB (sparse) plus 300 MiB of real bytes are harvested within spec.harvest's caps, the
 * rest listed in the manifest (the list itself bounded) and removed, the run Succeeded/
 * ResultsTruncated, and berth's peak memory (the CLI as a child, its VmHWM read at its exit)
 * stays under 200 MB.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, REASONS } from '../../src/constants';
import type { Manifest } from '../../src/harvest/manifest';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');
const PEAK = path.resolve(__dirname, '..', 'support', 'peak-rss.cjs');
const MiB = 1024 ** 2;
/** berth's peak resident memory, at most (the bound). */
const PEAK_MAX_KB = 200 * 1024;

describe('harvest caps: bounded results, flat memory (real engine)', function () {
  this.timeout(600_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('hcaps');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  const runDir = (name: string) => path.join(sb.resultsRoot, name, 'run-1');
  const readJson = async <T>(file: string): Promise<T> => JSON.parse(await fs.readFile(file, 'utf8')) as T;

  /** `berth reconcile --once --wait` as a child process: its exit code, stderr and peak RSS (kB). */
  async function reconcileChild(): Promise<{ code: number | null; stderr: string; peakKb: number }> {
    const peakFile = path.join(sb.stateDir, `peak-${Date.now()}`);
    const child = spawn(process.execPath, ['--require', PEAK, BIN, 'reconcile', '--once', '--wait', ...sb.globalArgs()], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, BERTH_TEST_PEAK_RSS_FILE: peakFile },
    });
    let stderr = '';
    child.stderr.on('data', (c) => (stderr += String(c)));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    const peakKb = Number(await fs.readFile(peakFile, 'utf8'));
    return { code, stderr, peakKb };
  }

  it('101,500 files: 100,000 kept (the default maxFiles), 1,500 left out and removed, the first 1,000 listed; memory flat', async function () {
    await sb.write('many.yaml', sb.attempt('many', 'cd /results && seq 1 101500 | xargs touch'));
    const r = await reconcileChild();
    expect(r.code, r.stderr).to.equal(0);
    const rec = await sb.status('many');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Succeeded', REASONS.resultsTruncated]);
    expect(rec?.message).to.match(/1500 entries .* left out/);
    const m = await readJson<Manifest>(path.join(runDir('many'), 'manifest.json'));
    expect(m.files).to.have.length(DEFAULTS.harvestMaxFiles);
    expect(m.truncation).to.include({ truncated: true, maxFiles: DEFAULTS.harvestMaxFiles, keptEntries: 100_000, leftOutEntries: 1500, leftOutNotListed: 500 });
    expect(m.truncation.leftOut).to.have.length(DEFAULTS.manifestLeftOutListed);
    expect(m.truncation.leftOut.every((l) => l.why === 'max-files')).to.equal(true);
    // the folder keeps exactly what the manifest lists
    const kept = new Set(await fs.readdir(path.join(runDir('many'), 'results')));
    expect(kept.size).to.equal(100_000);
    expect(m.files.every((f) => kept.has(f.path))).to.equal(true);
    expect(m.truncation.leftOut.some((l) => kept.has(l.path))).to.equal(false);
    expect(r.peakKb, `berth's peak RSS ${r.peakKb} kB`).to.be.above(0).and.below(PEAK_MAX_KB);
  });

  it('20 GiB sparse and 300 MiB of real bytes against maxBytes 100Mi: 90 MiB kept, hashed; the rest left out and removed; memory flat', async function () {
    const cmd =
      'truncate -s 20G /results/sparse; for i in 0 1 2 3 4 5 6 7 8 9; do dd if=/dev/urandom of=/results/real-$i bs=1048576 count=30 2>/dev/null; done';
    await sb.write('bytes.yaml', sb.attempt('bytes', cmd, '  harvest: {maxBytes: 100Mi}\n'));
    const r = await reconcileChild();
    expect(r.code, r.stderr).to.equal(0);
    const rec = await sb.status('bytes');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Succeeded', REASONS.resultsTruncated]);
    const m = await readJson<Manifest>(path.join(runDir('bytes'), 'manifest.json'));
    expect(m.files.map((f) => `${f.path}:${f.size}`)).to.deep.equal(['real-0', 'real-1', 'real-2'].map((p) => `${p}:${30 * MiB}`));
    expect(m.files.every((f) => /^[0-9a-f]{64}$/.test(f.sha256 ?? ''))).to.equal(true);
    expect(m.truncation).to.include({ maxBytes: 100 * MiB, keptBytes: 90 * MiB, leftOutEntries: 8, leftOutBytes: 7 * 30 * MiB + 20 * 1024 ** 3 });
    expect(m.truncation.leftOut.map((l) => `${l.path}:${l.why}`)).to.include('sparse:max-bytes');
    // the cap holds on the host: the results folder holds 90 MiB, in size and in blocks
    const results = path.join(runDir('bytes'), 'results');
    let size = 0;
    let blocks = 0;
    for (const n of await fs.readdir(results)) {
      const st = await fs.lstat(path.join(results, n));
      size += st.size;
      blocks += st.blocks * 512;
    }
    expect(size).to.equal(90 * MiB);
    expect(blocks).to.be.at.most(100 * MiB);
    expect(r.peakKb, `berth's peak RSS ${r.peakKb} kB`).to.be.above(0).and.below(PEAK_MAX_KB);
  });
});

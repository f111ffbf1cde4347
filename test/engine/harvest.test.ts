/**
 * berth stays up and finishes every harvest, whatever the attempt left (issue 12), on the real
 * engine: a log larger than the cap, a file name that is not UTF-8, a harvest that fails, berth
 * killed or stopped mid-harvest, a 2 TiB sparse file.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, REASONS } from '../../src/constants';
import type { Manifest } from '../../src/harvest/manifest';
import type { AttemptStatus } from '../../src/status/types';
import { startController } from '../support/controller';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');
const TWO_TIB = 2 * 1024 ** 4;
const SPARSE = `truncate -s ${TWO_TIB} /results/big; echo small > /results/small`;
/** A harvest.maxBytes that keeps the 2 TiB file (the default would leave it out: harvest-caps.test.ts). */
const KEEP_BIG = '  harvest: {maxBytes: 4Ti}\n';

const exists = (file: string) =>
  fs.lstat(file).then(
    () => true,
    () => false,
  );
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe('harvest of hostile results (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('harvest');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  const runDir = (name: string, run = 1) => path.join(sb.resultsRoot, name, `run-${run}`);
  const readJson = async <T>(file: string): Promise<T> => JSON.parse(await fs.readFile(file, 'utf8')) as T;
  const recordOf = async (name: string): Promise<AttemptStatus | undefined> => sb.status(name);

  it('keeps the head and tail of a log larger than --log-max-bytes, the cut marked; the engine caps its own log files', async function () {
    // 8 MiB of 100-byte lines between a first and a last line
    await sb.write('big.yaml', sb.attempt('big', 'echo START; yes $(printf %099d 0) | head -c 8388608; echo; echo END'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--log-max-bytes', '64Ki');
    expect(r.code, r.stderr).to.equal(0);
    const log = await fs.readFile(path.join(runDir('big'), 'logs.txt'), 'utf8');
    const markers = log.split('\n').filter((l) => l.startsWith('[berth: '));
    expect(markers).to.have.length(1);
    expect(markers[0]).to.match(
      /^\[berth: \d+ bytes of this log were cut here: it had \d+ bytes, more than --log-max-bytes 65536; the first 32768 and the last 32768 are kept\]$/,
    );
    expect(Buffer.byteLength(log)).to.be.at.most(65536 + (markers[0] as string).length + 2);
    expect(log.startsWith('START\n')).to.equal(true);
    expect(log.endsWith('\nEND\n')).to.equal(true);
    // berth logs shows the harvested file
    const shown = await sb.cli('logs', 'big');
    expect(shown.code).to.equal(0);
    expect(shown.stdout === log, 'berth logs prints logs.txt').to.equal(true);
    // and the engine keeps a bounded log of the container
    const rec = await recordOf('big');
    const info = await docker.getContainer(rec?.containerId as string).inspect();
    expect(info.HostConfig.LogConfig).to.deep.equal({
      Type: 'json-file',
      Config: { 'max-size': DEFAULTS.engineLogMaxSize, 'max-file': String(DEFAULTS.engineLogMaxFiles) },
    });
  });

  it('96 MiB on stdout (twice what the engine keeps, three times the harvest cap): --once --wait harvests a bounded log, and berth logs streams what the engine kept', async function () {
    // The engine keeps engineLogMaxFiles x engineLogMaxSize (48 MiB) and berth harvests at most
    // logMaxBytes (32 MiB): a flood past both shows both caps (600 MiB once showed no more).
    await sb.write('flood.yaml', sb.attempt('flood', 'echo START; yes $(printf %0999d 0) | head -c 100663296; echo; echo END'));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    const file = path.join(runDir('flood'), 'logs.txt');
    const log = await fs.readFile(file, 'utf8');
    expect(Buffer.byteLength(log)).to.be.at.most(DEFAULTS.logMaxBytes + 300);
    expect(log.endsWith('\nEND\n')).to.equal(true);
    // Without the harvested file, berth logs reads the engine's log: as a stream, bounded by the engine's cap.
    await fs.rm(file);
    const shown = await sb.cli('logs', 'flood');
    expect(shown.code, shown.stderr).to.equal(0);
    expect(shown.stdout.endsWith('\nEND\n')).to.equal(true);
    expect(shown.stdout.length).to.be.below(4 * 16 * 1024 * 1024);
    expect(shown.stdout.startsWith('START\n'), 'the engine kept only the end').to.equal(false);
  });

  it('lists a file name that is not valid UTF-8 losslessly, and finishes the harvest', async function () {
    await sb.write('names.yaml', sb.attempt('names', `printf x > "/results/$(printf 'bad\\377name')"; mkdir /results/d; printf y > /results/d/ok`));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    const status = await readJson<AttemptStatus>(path.join(runDir('names'), 'status.json'));
    expect([status.phase, status.reason]).to.deep.equal(['Succeeded', REASONS.completed]);
    const m = await readJson<Manifest>(path.join(runDir('names'), 'manifest.json'));
    const raw = Buffer.concat([Buffer.from('bad'), Buffer.from([0xff]), Buffer.from('name')]);
    expect(m.files).to.deep.equal([
      { path: 'bad\ufffdname', pathBase64: raw.toString('base64'), type: 'file', size: 1, sha256: sha('x') },
      { path: 'd', type: 'dir', size: 0 },
      { path: 'd/ok', type: 'file', size: 1, sha256: sha('y') },
    ]);
    expect(m.hashing.complete).to.equal(true);
    expect((await recordOf('names'))?.ended).to.equal(undefined);
  });

  it('a harvest that fails is visible (HarvestFailed, exit 1), the run not final, and it is tried again until done', async function () {
    await sb.write('stuck.yaml', sb.attempt('stuck', 'while [ ! -e /results/go ]; do sleep 0.1; done; echo done > /results/out'));
    expect((await sb.cli('reconcile', '--once')).code).to.equal(0);
    // A folder where the manifest goes: writing it fails.
    await fs.mkdir(path.join(runDir('stuck'), 'manifest.json', 'in-the-way'), { recursive: true });
    await fs.writeFile(path.join(runDir('stuck'), 'results', 'go'), '');
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(1);
    const rec = await recordOf('stuck');
    expect([rec?.phase, rec?.reason, rec?.ended?.phase, rec?.exitCode]).to.deep.equal(['Running', REASONS.harvestFailed, 'Succeeded', 0]);
    expect(rec?.message).to.contain(runDir('stuck'));
    expect(await exists(path.join(runDir('stuck'), 'status.json'))).to.equal(false);
    // The obstacle goes: a later pass harvests (after the retry's back-off).
    await fs.rm(path.join(runDir('stuck'), 'manifest.json'), { recursive: true });
    await waitFor(
      'the harvest tried again',
      async () => {
        const p = await sb.cli('reconcile', '--once');
        return p.code === 0 && (await recordOf('stuck'))?.phase === 'Succeeded';
      },
      { timeoutMs: 30_000 },
    );
    const done = await recordOf('stuck');
    expect([done?.reason, done?.message, done?.ended]).to.deep.equal([REASONS.completed, undefined, undefined]);
    expect((await readJson<AttemptStatus>(path.join(runDir('stuck'), 'status.json'))).phase).to.equal('Succeeded');
    const m = await readJson<Manifest>(path.join(runDir('stuck'), 'manifest.json'));
    expect(m.files.map((f) => f.path)).to.deep.equal(['go', 'out']);
  });

  it('berth killed mid-harvest: the next pass completes it; a 2 TiB sparse file is listed over budget, unhashed', async function () {
    await sb.write('sparse.yaml', sb.attempt('sparse', SPARSE, KEEP_BIG));
    // A budget that lets berth hash the 2 TiB (for a long while): it is killed meanwhile.
    const child = spawn(process.execPath, [BIN, 'reconcile', '--once', '--wait', ...sb.globalArgs(), '--hash-max-bytes', '4096Gi'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c) => (err += String(c)));
    const exited = new Promise<unknown>((resolve) => child.on('exit', resolve));
    try {
      await waitFor('the harvest under way', async () => (await recordOf('sparse'))?.reason === REASONS.harvesting, {
        dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
        timeoutMs: 60_000,
      });
    } catch (e) {
      throw new Error(`${(e as Error).message}; berth said: ${err}`);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
    expect(await exists(path.join(runDir('sparse'), 'status.json'))).to.equal(false);
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    const rec = await recordOf('sparse');
    expect([rec?.phase, rec?.reason, rec?.ended]).to.deep.equal(['Succeeded', REASONS.completed, undefined]);
    const m = await readJson<Manifest>(path.join(runDir('sparse'), 'manifest.json'));
    expect(m.files).to.deep.equal([
      { path: 'big', type: 'file', size: TWO_TIB, unhashed: 'bytes-budget' },
      { path: 'small', type: 'file', size: 6, sha256: sha('small\n') },
    ]);
    expect(m.hashing).to.deep.equal({
      complete: false,
      maxBytes: DEFAULTS.hashMaxBytes,
      maxSeconds: DEFAULTS.hashMaxSeconds,
      hashedFiles: 1,
      hashedBytes: 6,
      unhashedFiles: 1,
      unhashedBytes: TWO_TIB,
    });
  });

  it('stops hashing at --hash-max-seconds', async function () {
    await sb.write('slow.yaml', sb.attempt('slow', SPARSE, KEEP_BIG));
    const r = await sb.cli('reconcile', '--once', '--wait', '--hash-max-bytes', '4096Gi', '--hash-max-seconds', '1');
    expect(r.code, r.stderr).to.equal(0);
    const m = await readJson<Manifest>(path.join(runDir('slow'), 'manifest.json'));
    const big = m.files.find((f) => f.path === 'big');
    expect([big?.sha256, big?.unhashed]).to.deep.equal([undefined, 'time-budget']);
    expect(m.hashing.complete).to.equal(false);
  });

  it('a controller serves other attempts while it hashes, stops at once mid-hash, and the next one finishes the harvest', async function () {
    await sb.write('huge.yaml', sb.attempt('huge', SPARSE, KEEP_BIG));
    const ctl = startController(sb, { hashMaxBytes: 4096 * 1024 ** 3 });
    let stopped = false;
    try {
      const attempts = path.join(sb.stateDir, sb.instance, 'attempts');
      await waitFor('the harvest under way', async () => (await recordOf('huge'))?.reason === REASONS.harvesting, { dirs: [attempts], timeoutMs: 60_000 });
      await sb.write('other.yaml', sb.attempt('other', 'echo other'));
      await waitFor('the other attempt done', async () => (await recordOf('other'))?.phase === 'Succeeded', { dirs: [attempts], timeoutMs: 60_000 });
      expect((await recordOf('huge'))?.reason).to.equal(REASONS.harvesting);
      // the stop does not wait for the hashing (of 2 TiB: far past the test's timeout): the record says Harvesting still
      expect(await ctl.stop()).to.equal(0);
      stopped = true;
    } finally {
      if (!stopped) await ctl.stop();
    }
    const rec = await recordOf('huge');
    expect([rec?.phase, rec?.reason, rec?.ended?.phase]).to.deep.equal(['Running', REASONS.harvesting, 'Succeeded']);
    const next = startController(sb);
    try {
      await waitFor('the harvest done', async () => (await recordOf('huge'))?.phase === 'Succeeded', {
        dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
        timeoutMs: 60_000,
      });
    } finally {
      await next.stop();
    }
    const m = await readJson<Manifest>(path.join(runDir('huge'), 'manifest.json'));
    expect(m.files.find((f) => f.path === 'big')?.unhashed).to.equal('bytes-budget');
  });
});

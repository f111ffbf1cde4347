/**
 * berth as users install it (docs/INSTALL.md): the npm package, packed and laid out as `npm install -g`
 * lays it out, runs from any folder; the single-file build runs with only `node`, from a
 * folder with no node_modules and no schemas/ beside it, and the berth/berth:local image runs
 * berth with the engine's socket mounted. Both run a real attempt on the engine, with a fixture
 * and a file secret, and both leave the same results a checkout would.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { lockVolumeName } from '../../src/constants';
import { requireEngine, TEST_LABEL, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const run = promisify(execFile);
const REPO = path.join(__dirname, '..', '..');

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

async function exec(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): Promise<Out> {
  try {
    const r = await run(cmd, args, { ...opts, maxBuffer: 16 << 20 });
    return { code: 0, stdout: r.stdout, stderr: r.stderr };
  } catch (e) {
    const err = e as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof err.code === 'number' ? err.code : -1, stdout: err.stdout ?? '', stderr: err.stderr ?? String(e) };
  }
}

const SPEC = `apiVersion: berth.dev/v1
kind: Attempt
metadata:
  name: packaged
spec:
  image: berth/busybox:local
  fixture: ./task
  secrets:
    - {name: token, fromFile: ./token}
  command: [sh, -c, 'cat task.txt > /results/out.txt && wc -c < /run/secrets/token >> /results/out.txt']
`;

describe('packaging: the single-file build and the image (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  let bundleDir: string;
  before(async function () {
    sb = await Sandbox.create('pkg');
    await sb.write('task/task.txt', 'the task\n');
    await sb.write('token', 'not-a-real-token');
    await sb.write('packaged.yaml', SPEC);
    // The bundle of the current sources, alone in a folder of its own.
    bundleDir = path.join(sb.dir, 'bin');
    await fs.mkdir(bundleDir);
    const built = await exec(process.execPath, ['--import', 'tsx', 'scripts/build-cli.ts'], {
      cwd: REPO,
      env: { ...process.env, BERTH_CLI_BUNDLE: path.join(bundleDir, 'berth.cjs') },
    });
    expect(built.code, built.stderr).to.equal(0);
  });
  after(async function () {
    await sb?.destroy();
  });

  async function results(): Promise<string> {
    return fs.readFile(path.join(sb.resultsRoot, 'packaged', 'run-1', 'results', 'out.txt'), 'utf8');
  }

  it('dist/berth.cjs runs with only node: version, validate, reconcile --once --wait, get', async function () {
    const bundle = path.join(bundleDir, 'berth.cjs');
    expect(await fs.readdir(bundleDir)).to.deep.equal(['berth.cjs']);
    const pkg = JSON.parse(await fs.readFile(path.join(REPO, 'package.json'), 'utf8')) as { version: string };
    const version = await exec(process.execPath, [bundle, 'version', '-o', 'json'], { cwd: bundleDir });
    expect(JSON.parse(version.stdout)).to.include({ version: pkg.version, contract: 4 });

    const validate = await exec(process.execPath, [bundle, 'validate', sb.specsDir], { cwd: bundleDir });
    expect([validate.code, validate.stdout]).to.deep.equal([0, '1 file, 1 attempt: all valid\n']);
    // the bundled schema still refuses what it should, positioned
    await fs.writeFile(path.join(sb.dir, 'bad.yaml'), 'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: b}\nspec: {image: 7}\n');
    const bad = await exec(process.execPath, [bundle, 'validate', path.join(sb.dir, 'bad.yaml')], { cwd: bundleDir });
    expect(bad.code).to.equal(2);
    expect(bad.stderr).to.match(/bad\.yaml:4:\d+: spec\.image: must be a string/);

    const rec = await exec(process.execPath, [bundle, 'reconcile', '--once', '--wait', ...sb.globalArgs()], { cwd: bundleDir });
    expect(rec.code, rec.stderr).to.equal(0);
    expect(await results()).to.equal('the task\n16\n');
    const get = await exec(process.execPath, [bundle, 'get', 'packaged', '-o', 'name', ...sb.globalArgs()], { cwd: bundleDir });
    expect(get.stdout).to.equal('attempt/packaged\n');
  });

  it("the split build (dist/split, what bin/berth.js runs): a command reads its own file, and the engine's only when it asks the engine", async function () {
    // Which files a command read, from the code caches it left (bin/berth.js: one entry per file and command).
    const launcher = path.join(REPO, 'bin', 'berth.js');
    const readBy = async (args: string[], expectCode = 0): Promise<{ out: Out; files: string[] }> => {
      const cache = await fs.mkdtemp(path.join(sb.dir, 'cache-'));
      const out = await exec(process.execPath, [launcher, ...args], { cwd: sb.dir, env: { ...process.env, BERTH_CACHE_DIR: cache } });
      expect(out.code, out.stderr).to.equal(expectCode);
      const files = (await fs.readdir(path.join(cache, 'code-cache'))).map((f) => f.replace(/-v\d+\.\d+\.\d+-.*$/, '')).sort();
      return { out, files };
    };
    // the attempt reconciled above: a record, so get asks the engine nothing
    const validate = await readBy(['validate', sb.specsDir]);
    // (a first validate in a cache folder of its own parses the spec: the parse file is read too)
    expect([validate.out.stdout, validate.files]).to.deep.equal(['1 file, 1 attempt: all valid\n', ['bundle.validate-validate', 'chunk-parse-validate']]);
    // (the spec has a fixture: its outcome is kept by no disk cache, every process parses it and reads the parse file)
    const get = await readBy(['get', '-o', 'name', ...sb.globalArgs()]);
    expect([get.out.stdout, get.files]).to.deep.equal(['attempt/packaged\n', ['bundle.get-get', 'chunk-parse-get']]);
    // an instance with no record: get asks the engine, through get's own engine file
    const other = sb.globalArgs().map((a) => (a === sb.instance ? `${sb.instance}-none` : a));
    const asks = await readBy(['get', '-o', 'name', ...other]);
    expect([asks.out.stdout, asks.files]).to.deep.equal(['attempt/packaged\n', ['bundle.get-get', 'chunk-get.engine-get', 'chunk-parse-get']]);
    // a command without a file of its own: every command's file, and its engine file
    const plan = await readBy(['plan', ...sb.globalArgs()]);
    expect(plan.files).to.deep.equal(['bundle-plan', 'chunk-engine-plan', 'chunk-parse-plan']);
    // files of one build keep one spec cache (src/spec/disk-cache.ts; a spec with no fixture is kept in it): get's
    // and every command's file neither takes the other's for another build's and writes it again
    const plain = path.join(sb.dir, 'plain');
    await fs.mkdir(plain);
    await fs.writeFile(
      path.join(plain, 'plain.yaml'),
      'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: plain}\nspec: {image: berth/busybox:local, command: ["true"]}\n',
    );
    const plainArgs = other.map((a, i) => (other[i - 1] === '--specs' ? plain : a));
    const specCache = async () => {
      const dir = path.join(sb.stateDir, 'cache');
      return Promise.all((await fs.readdir(dir)).sort().map(async (f) => `${f} ${(await fs.stat(path.join(dir, f))).mtimeMs}`));
    };
    await readBy(['get', '-o', 'name', ...plainArgs]);
    const kept = await specCache();
    await readBy(['plan', ...plainArgs]);
    // a spec answered from the spec cache: the parse file is not read
    expect((await readBy(['get', '-o', 'name', ...plainArgs])).files).to.deep.equal(['bundle.get-get', 'chunk-get.engine-get']);
    expect(await specCache()).to.deep.equal(kept);
    // run by another runner than bin/berth.js (no chunk loader given): a file of the split build
    // still reads the files it needs (here the parse file: the spec has a fixture) as modules
    const runner = path.join(sb.dir, 'other-runner.cjs');
    await fs.writeFile(
      runner,
      `const fs = require('fs'), vm = require('vm'), Module = require('module'), path = require('path');
const file = ${JSON.stringify(path.join(REPO, 'dist', 'split', 'validate.cjs'))};
const m = new Module(file, module); m.filename = file; m.paths = Module._nodeModulePaths(path.dirname(file));
vm.runInThisContext(fs.readFileSync(file, 'latin1'), { filename: file }).call(m.exports, m.exports, Module.createRequire(file), m, file, path.dirname(file));
m.exports.main(['node', 'berth', 'validate', ${JSON.stringify(sb.specsDir)}]);\n`,
    );
    const other2 = await exec(process.execPath, [runner], { cwd: sb.dir, env: { ...process.env, BERTH_CACHE_DIR: '' } });
    expect([other2.code, other2.stdout], other2.stderr).to.deep.equal([0, '1 file, 1 attempt: all valid\n']);
    // a command line whose first command word is a flag's value: the launcher's guess (get) is not
    // what the command line runs (validate): get's file, read, says it is not its own, and every command's file runs it
    const guess = await readBy(['--specs', 'get', 'validate', sb.specsDir]);
    expect([guess.out.stdout, guess.files]).to.deep.equal(['1 file, 1 attempt: all valid\n', ['bundle-get', 'bundle.get-get', 'chunk-parse-get']]);
  });

  it('the npm package: npm pack, installed from the tarball as npm -g lays it out, runs from any folder (version, validate)', async function () {
    // what `npm install -g ./berthdev-berth-<version>.tgz` makes: the package in <prefix>/lib/node_modules,
    // its bin linked in <prefix>/bin. The dependencies are the checkout's (npm would fetch them; the
    // test phase downloads nothing), so what is checked is what the tarball holds and how it starts.
    const pkg = JSON.parse(await fs.readFile(path.join(REPO, 'package.json'), 'utf8')) as { name: string; version: string; bin: Record<string, string> };
    const prefix = path.join(sb.dir, 'npm-global');
    const home = path.join(prefix, 'lib', 'node_modules', ...pkg.name.split('/'));
    await fs.mkdir(path.dirname(home), { recursive: true });
    // dist/ is built (npm run build); prepack would build it again
    const packed = await exec('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', sb.dir], { cwd: REPO });
    expect(packed.code, packed.stderr).to.equal(0);
    const [info] = JSON.parse(packed.stdout) as { filename: string; files: { path: string }[] }[];
    const files = (info?.files ?? []).map((f) => f.path);
    expect(files).to.include.members(['bin/berth.js', 'dist/berth.cjs', 'dist/cli/index.js', 'schemas/attempt.schema.json', 'README.md', 'package.json']);
    expect(
      files.filter((f) => /^(src|test|bench|scripts)\/|\.map$/.test(f)),
      'sources, tests or maps',
    ).to.deep.equal([]);
    const unpacked = await exec('tar', ['-xzf', path.join(sb.dir, info?.filename ?? ''), '-C', path.dirname(home)]);
    expect(unpacked.code, unpacked.stderr).to.equal(0);
    await fs.rename(path.join(path.dirname(home), 'package'), home);
    await fs.symlink(path.join(REPO, 'node_modules'), path.join(home, 'node_modules'));
    await fs.mkdir(path.join(prefix, 'bin'));
    await fs.symlink(path.join('..', 'lib', 'node_modules', ...pkg.name.split('/'), pkg.bin.berth ?? ''), path.join(prefix, 'bin', 'berth'));

    // from a folder that is no checkout, with the Node berth needs first on PATH (#!/usr/bin/env node)
    const env = { ...process.env, PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? ''}` };
    const berth = path.join(prefix, 'bin', 'berth');
    const version = await exec(berth, ['version', '-o', 'json'], { cwd: os.tmpdir(), env });
    expect(version.code, version.stderr).to.equal(0);
    expect(JSON.parse(version.stdout)).to.include({ version: pkg.version });
    const validate = await exec(berth, ['validate', sb.specsDir], { cwd: '/', env });
    expect([validate.code, validate.stdout], validate.stderr).to.deep.equal([0, '1 file, 1 attempt: all valid\n']);
  });

  it('berth/berth:local runs berth against the mounted engine socket', async function () {
    // Results are bind-mounted by host path: the folder is mounted at the same path inside.
    const clean = await exec(process.execPath, [path.join(bundleDir, 'berth.cjs'), 'clean', ...sb.globalArgs()]);
    expect(clean.code, clean.stderr).to.equal(0);
    await fs.rm(sb.resultsRoot, { recursive: true, force: true });
    const docker = await exec('docker', [
      'run',
      '--rm',
      '--label',
      `${TEST_LABEL}=${TEST_RUN}`,
      '-v',
      '/var/run/docker.sock:/var/run/docker.sock',
      '-v',
      `${sb.dir}:${sb.dir}`,
      '-w',
      sb.dir,
      'berth/berth:local',
      'reconcile',
      '--once',
      '--wait',
      ...sb.globalArgs(),
    ]);
    expect(docker.code, docker.stderr).to.equal(0);
    expect(await results()).to.equal('the task\n16\n');
  });

  it('berth/berth:local stops promptly on docker stop (berth is PID 1): the controller exits 0, reconcile --once --wait 143, no lock left', async function () {
    const box = await Sandbox.create('pkg-stop');
    try {
      await box.write('long.yaml', box.attempt('long', 'sleep 300'));
      for (const [args, code] of [
        [['reconcile'], 0],
        [['reconcile', '--once', '--wait'], 143],
      ] as const) {
        const started = await exec('docker', [
          'run',
          '-d',
          '--label',
          `${TEST_LABEL}=${TEST_RUN}`,
          '-v',
          '/var/run/docker.sock:/var/run/docker.sock',
          '-v',
          `${box.dir}:${box.dir}`,
          'berth/berth:local',
          ...args,
          ...box.globalArgs(),
        ]);
        expect(started.code, started.stderr).to.equal(0);
        const id = started.stdout.trim();
        try {
          // berth in the image holds the instance and the attempt runs: an event, its status record
          await waitFor('long Running', async () => (await box.store().get('long'))?.phase === 'Running' && (await lockHeld(box.instance)), {
            instance: box.instance,
            dirs: [path.join(box.stateDir, box.instance, 'attempts')],
          });
          const stop = await exec('docker', ['stop', '-t', '10', id]);
          expect(stop.code, stop.stderr).to.equal(0);
          // berth's own exit code (a berth that ignored SIGTERM would be killed after the 10 s: 137)
          const exitCode = await exec('docker', ['inspect', '-f', '{{.State.ExitCode}}', id]);
          const logs = await exec('docker', ['logs', id]);
          expect(Number(exitCode.stdout.trim()), `${args.join(' ')}: ${logs.stderr}`).to.equal(code);
          expect(await lockHeld(box.instance), 'berth released the engine lock').to.equal(false);
        } finally {
          await exec('docker', ['rm', '-f', id]);
        }
      }
    } finally {
      await box.destroy();
    }
  });
});

async function lockHeld(instance: string): Promise<boolean> {
  const r = await exec('docker', ['volume', 'inspect', lockVolumeName(instance)]);
  return r.code === 0;
}

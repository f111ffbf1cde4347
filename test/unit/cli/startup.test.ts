/**
 * Start-up (issue 55): a command loads what it uses and nothing else. Each command runs in a new
 * process from the sources (tsx), which then lists the modules it loaded (require.cache); no time
 * is measured (the bench does that: bench/workloads/startup.ts). And the launcher's list of
 * commands (one code cache per command, bin/berth.js) is the program's.
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, mkdirSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildProgram } from '../../../src/cli/index';
import { bufferIo } from '../../../src/cli/io';
import { status } from '../../support/builders';

const REPO = path.resolve(__dirname, '..', '..', '..');

/** The modules (paths relative to the repository) `berth ARGS` loaded, run from the sources in a new process. */
function loadedBy(args: string[], cwd: string): string[] {
  const script = `
const { run } = require(${JSON.stringify(path.join(REPO, 'src', 'cli', 'index.ts'))});
const io = { out: () => {}, err: (s) => process.stderr.write(s), isTTY: false };
run(['node', 'berth', ...${JSON.stringify(args)}], io).then((code) => {
  process.stdout.write(JSON.stringify({ code, modules: Object.keys(require.cache) }));
});`;
  const r = spawnSync(process.execPath, ['--require', require.resolve('tsx/cjs'), '-e', script], {
    cwd,
    encoding: 'utf8',
    timeout: 60_000,
    env: { ...process.env, BERTH_CACHE_DIR: path.join(cwd, 'cache') },
  });
  expect(r.status, r.stderr).to.equal(0);
  const out = JSON.parse(r.stdout) as { code: number; modules: string[] };
  expect(out.code, r.stderr).to.equal(0);
  return out.modules.map((m) => path.relative(REPO, m));
}

const ENGINE_CLIENT = [
  /node_modules\/dockerode\//,
  /node_modules\/docker-modem\//,
  /^src\/engine\/docker\//,
  /^src\/backend\/(?!types\.ts)/,
  /^src\/engine\/swarm\//,
];
const CONTROLLER = [/^src\/controller\/(?!pass\b)/, /node_modules\/chokidar\//, /node_modules\/prom-client\//];
const REPORT = [/^src\/report\//];
const SCHEMA_COMPILER = [/node_modules\/ajv\/dist\/(2020|core|compile)/];

function none(modules: string[], patterns: RegExp[]): string[] {
  return modules.filter((m) => patterns.some((p) => p.test(m)));
}

/** Runs `bundle` as the launcher does (bin/berth.js runBundle, command `get`); says on stderr whether V8 used a code cache: used, rejected or none. */
function codeCacheRunner(dir: string, bundle: string): string {
  const runner = path.join(dir, 'run.cjs');
  writeFileSync(
    runner,
    `const cc = require(${JSON.stringify(path.join(REPO, 'bin', 'berth.js'))});
const vm = require('vm'); const Script = vm.Script;
vm.Script = function (src, o) { const s = new Script(src, o); process.on('exit', () => process.stderr.write(o.cachedData ? (s.cachedDataRejected ? 'rejected' : 'used') : 'none')); return s; };
cc.runBundle(${JSON.stringify(bundle)}, process.env, process.argv, ['get']).main();`,
  );
  return runner;
}

describe('cli: start-up loads what the command uses (issue 55)', function () {
  this.timeout(120_000);
  let dir: string;
  let args: string[];
  before(function () {
    dir = mkdtempSync(path.join(os.tmpdir(), 'berth-startup-'));
    const specs = path.join(dir, 'specs');
    mkdirSync(specs);
    for (const n of ['a', 'b'])
      writeFileSync(
        path.join(specs, `${n}.yaml`),
        `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${n}}\nspec:\n  image: busybox\n  command: ["true"]\n`,
      );
    const records = path.join(dir, 'state', 'default', 'attempts');
    mkdirSync(records, { recursive: true });
    for (const n of ['a', 'b'])
      writeFileSync(path.join(records, `${n}.json`), JSON.stringify(status(n, { phase: 'Succeeded', reason: 'Completed', exitCode: 0 })));
    args = ['--specs', specs, '--state', path.join(dir, 'state')];
  });
  after(function () {
    rmSync(dir, { recursive: true, force: true });
  });

  it('--version: commander and the command line, no spec, status or engine code', function () {
    const m = loadedBy(['--version'], dir);
    expect(none(m, [/node_modules\/yaml\//, /^src\/spec\/loader/, /^src\/status\//, ...ENGINE_CLIENT, ...CONTROLLER, ...REPORT])).to.deep.equal([]);
    expect(m).to.include('src/cli/index.ts');
  });

  it('validate: the spec loader and the kept validator; no engine client, controller, report or schema compiler', function () {
    const m = loadedBy(['validate', path.join(dir, 'specs')], dir);
    expect(none(m, [...ENGINE_CLIENT, ...CONTROLLER, ...REPORT, ...SCHEMA_COMPILER])).to.deep.equal([]);
    expect(m).to.include('src/spec/loader.ts');
    expect(m).to.include('schemas/attempt.validator.cjs');
  });

  it('get of attempts with records: specs and records; no engine client, controller or report', function () {
    const m = loadedBy(['get', ...args], dir);
    expect(none(m, [...ENGINE_CLIENT, ...CONTROLLER, ...REPORT, ...SCHEMA_COMPILER])).to.deep.equal([]);
    expect(m).to.include('src/status/store.ts');
  });

  it('get beside a berth.yaml: its kept validator (schemas/config.validator.cjs), no schema compiler', function () {
    const here = path.join(dir, 'with-config');
    mkdirSync(here, { recursive: true });
    writeFileSync(path.join(here, 'berth.yaml'), `specs: ${path.join(dir, 'specs')}\nstate: ${path.join(dir, 'state')}\nlog-level: warn\n`);
    const m = loadedBy(['get'], here);
    expect(none(m, [...ENGINE_CLIENT, ...SCHEMA_COMPILER])).to.deep.equal([]);
    expect(m).to.include('schemas/config.validator.cjs');
  });

  it('report: the renderer, which the others do not load (the check above can see it)', function () {
    const m = loadedBy(['report', '-o', path.join(dir, 'r.html'), ...args], dir);
    expect(none(m, REPORT)).to.not.deep.equal([]);
    expect(none(m, ENGINE_CLIENT)).to.deep.equal([]);
  });

  it("bin/berth.js lists the program's commands (one code cache each)", function () {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const listed = (require('../../../bin/berth.js') as { COMMANDS: string[] }).COMMANDS;
    const program = buildProgram(bufferIo(), () => {});
    expect([...listed].sort()).to.deep.equal(program.commands.map((c) => c.name()).sort());
  });
});

describe("cli: the launcher's code cache (bin/berth.js)", function () {
  this.timeout(60_000);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const cc = require('../../../bin/berth.js') as { codeCacheDir(env: NodeJS.ProcessEnv): string | undefined };
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'berth-codecache-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('lives in berth cache folder, made 0700; none when BERTH_CACHE_DIR is empty or NODE_DISABLE_COMPILE_CACHE is set', function () {
    const root = path.join(dir, 'c');
    expect(cc.codeCacheDir({ BERTH_CACHE_DIR: root })).to.equal(path.join(root, 'code-cache'));
    expect(statSync(path.join(root, 'code-cache')).mode & 0o777).to.equal(0o700);
    expect(cc.codeCacheDir({ BERTH_CACHE_DIR: '' })).to.equal(undefined);
    expect(cc.codeCacheDir({ BERTH_CACHE_DIR: root, NODE_DISABLE_COMPILE_CACHE: '1' })).to.equal(undefined);
    expect(cc.codeCacheDir({ XDG_CACHE_HOME: dir })).to.equal(path.join(dir, 'berth', 'code-cache'));
  });

  it('is not used in a folder others can write to', function () {
    const root = path.join(dir, 'shared');
    mkdirSync(root, { mode: 0o777 });
    chmodSync(root, 0o777);
    expect(cc.codeCacheDir({ BERTH_CACHE_DIR: root })).to.equal(undefined);
    chmodSync(root, 0o700);
    mkdirSync(path.join(root, 'code-cache'), { recursive: true });
    chmodSync(path.join(root, 'code-cache'), 0o770);
    expect(cc.codeCacheDir({ BERTH_CACHE_DIR: root })).to.equal(undefined);
  });

  it("a bundle's run leaves its command's cache, which the next run uses; a changed bundle gets a cache of its own", function () {
    const bundle = path.join(dir, 'b.cjs');
    writeFileSync(bundle, "#!/usr/bin/env node\nmodule.exports = { main: () => process.stdout.write(String(require('vm') !== undefined)) };\n");
    const runner = codeCacheRunner(dir, bundle);
    const env = { ...process.env, BERTH_CACHE_DIR: path.join(dir, 'c') };
    const once = () => spawnSync(process.execPath, [runner, 'get'], { encoding: 'utf8', env });
    const first = once();
    expect([first.stdout, first.stderr]).to.deep.equal(['true', 'none']);
    const entries = readdirSync(path.join(dir, 'c', 'code-cache')).filter((f) => f.startsWith('bundle-get-'));
    expect(entries).to.have.length(1);
    expect(once().stderr).to.equal('used');
    writeFileSync(bundle, "module.exports = { main: () => process.stdout.write('changed') };\n");
    const changed = once();
    expect([changed.stdout, changed.stderr]).to.deep.equal(['changed', 'none']);
    // the old build's entry is gone once the new one is written
    expect(readdirSync(path.join(dir, 'c', 'code-cache')).filter((f) => f.startsWith('bundle-get-'))).to.have.length(1);
  });

  it('a file of the split build (one function expression, as CommonJS wraps a module) runs as it is, with its code cache', function () {
    const bundle = path.join(dir, 'w.cjs');
    writeFileSync(
      bundle,
      "(function (exports, require, module, __filename, __dirname) {\nmodule.exports = { main: () => process.stdout.write(typeof require('vm').Script + ' ' + require('path').basename(__filename)) };\n})\n",
    );
    const runner = codeCacheRunner(dir, bundle);
    const env = { ...process.env, BERTH_CACHE_DIR: path.join(dir, 'c') };
    const once = () => spawnSync(process.execPath, [runner, 'get'], { encoding: 'utf8', env });
    expect([once().stdout, once().stderr]).to.deep.equal(['function w.cjs', 'used']);
  });

  it('the first entry is made again once, by the first run 10 minutes after it, and that one is read from then on', function () {
    const bundle = path.join(dir, 's.cjs');
    writeFileSync(bundle, "module.exports = { main: () => process.stdout.write('ran') };\n");
    const runner = codeCacheRunner(dir, bundle);
    const cache = path.join(dir, 'c', 'code-cache');
    const env = { ...process.env, BERTH_CACHE_DIR: path.join(dir, 'c') };
    const once = () => spawnSync(process.execPath, [runner, 'get'], { encoding: 'utf8', env }).stderr;
    const entries = () => readdirSync(cache).filter((f) => f.startsWith('bundle-get-') && f.includes(`${statSync(bundle).size}`));
    expect(once()).to.equal('none');
    const [first] = entries();
    expect(first, 'the first entry').to.match(/\d$/);
    expect(once()).to.equal('used');
    expect(entries(), 'younger than 10 minutes: kept as it is').to.deep.equal([first]);
    const old = new Date(Date.now() - 11 * 60 * 1000);
    utimesSync(path.join(cache, first as string), old, old);
    expect(once()).to.equal('used');
    expect(entries(), 'made again, as the settled entry').to.deep.equal([`${first}.2`]);
    expect(once()).to.equal('used');
    expect(entries()).to.deep.equal([`${first}.2`]);
  });

  it('a first run that parsed spec files (coldRun) leaves only a mark; the next run makes the cache, whatever it did', function () {
    const bundle = path.join(dir, 'b.cjs');
    // coldRun() says what the file named by COLD holds, as the bundle's spec loader would say it parsed a file
    writeFileSync(
      bundle,
      "module.exports = { main: () => process.stdout.write('ran'), coldRun: () => require('fs').readFileSync(process.env.COLD, 'utf8') === 'yes' };\n",
    );
    const runner = codeCacheRunner(dir, bundle);
    const cold = path.join(dir, 'cold');
    const env = { ...process.env, BERTH_CACHE_DIR: path.join(dir, 'c'), COLD: cold };
    const entries = () => readdirSync(path.join(dir, 'c', 'code-cache')).filter((f) => f.startsWith('bundle-get-'));
    const once = (parsed: boolean) => {
      writeFileSync(cold, parsed ? 'yes' : 'no');
      const r = spawnSync(process.execPath, [runner, 'get'], { encoding: 'utf8', env });
      expect(r.stdout).to.equal('ran');
      return r.stderr;
    };
    expect(once(true)).to.equal('none');
    expect(entries().map((f) => f.endsWith('.cold'))).to.deep.equal([true]);
    expect(once(false)).to.equal('none');
    expect(
      entries().map((f) => f.endsWith('.cold')),
      'the cache, and the mark gone',
    ).to.deep.equal([false]);
    expect(once(true)).to.equal('used');
    // a command that parses at every run still gets a cache, at its second run
    rmSync(path.join(dir, 'c'), { recursive: true, force: true });
    expect([once(true), once(true), once(true)]).to.deep.equal(['none', 'none', 'used']);
    expect(entries().map((f) => f.endsWith('.cold'))).to.deep.equal([false]);
  });
});

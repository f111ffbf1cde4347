/** The command line as a new user meets it: version, completion, help with examples, BERTH_* defaults, --log-format json on stderr, pluralized messages. */
import { expect } from 'chai';
import { execFileSync, spawnSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../src/cli/index';
import { bufferIo } from '../../src/cli/io';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

async function berth(...args: string[]) {
  const io = bufferIo();
  const code = await run(['node', 'berth', ...args], io);
  return { code, stdout: io.stdout, stderr: io.stderr };
}

/** The built CLI (npm run build), as a user runs it. */
const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

function built(...args: string[]) {
  const r = spawnSync(process.execPath, [BIN, ...args], { encoding: 'utf8', timeout: 20_000 });
  return { code: r.status, signal: r.signal, stdout: r.stdout, stderr: r.stderr };
}

describe('cli usage', function () {
  this.timeout(60_000);

  it("a typo'd command or a bad flag: two lines on stderr (the error, where help is), nothing on stdout, exit 2", function () {
    expect(built('gte')).to.deep.equal({ code: 2, signal: null, stdout: '', stderr: "berth: unknown command 'gte' (did you mean get?)\nsee 'berth --help'\n" });
    expect(built('logs', '--tial', '5')).to.deep.equal({
      code: 2,
      signal: null,
      stdout: '',
      stderr: "berth: unknown option '--tial' (did you mean --tail?)\nsee 'berth logs --help'\n",
    });
    const help = built('get', '--help');
    expect([help.code, help.stderr]).to.deep.equal([0, '']);
    expect(help.stdout).to.match(/^Global Options:\n(.*\n)* {2}--state <dir> /m);
  });

  it('reconcile --timeout without --once --wait is refused at once, no controller started', function () {
    const dir = path.join(os.tmpdir(), `berth-no-controller-${process.pid}`);
    const r = built('reconcile', '--timeout', '30s', '--state', dir, '--specs', dir);
    expect(r).to.deep.equal({
      code: 2,
      signal: null,
      stdout: '',
      stderr: 'berth: --timeout goes with --once --wait (berth reconcile --once --wait --timeout 30m): a controller runs until it is stopped\n',
    });
  });

  it("berth version: berth's and the engine's (server, API, image store); an engine that does not answer is said so, exit 0", async function () {
    const v = await berth('version');
    expect(v.code).to.equal(0);
    expect(v.stdout).to.match(
      /^berth \d+\.\d+\.\d+ \(node v\d+.*\)\nengine \S+ \(API \d+\.\d+(; berth talks \d+\.\d+)?\), (classic|containerd) image store \(\S+\)\nisolation: seccomp .*, runtime \S+: attempts run isolated.*\n$/,
    );
    const j = JSON.parse(built('version', '-o', 'json').stdout) as { engine: { version: string; apiVersion: string } };
    expect(j.engine.apiVersion).to.match(/^\d+\.\d+$/);
    const away = spawnSync(process.execPath, [BIN, 'version'], {
      encoding: 'utf8',
      timeout: 20_000,
      env: { ...process.env, DOCKER_HOST: 'unix:///nonexistent/docker.sock' },
    });
    expect([away.status, away.stderr]).to.deep.equal([0, '']);
    expect(away.stdout).to.match(
      /^berth \d+\.\d+\.\d+ .*\nengine unreachable: the Docker engine at unix:\/\/\/nonexistent\/docker\.sock \(DOCKER_HOST\) cannot be reached: .*\n$/,
    );
    const awayJson = spawnSync(process.execPath, [BIN, 'version', '-o', 'json'], {
      encoding: 'utf8',
      timeout: 20_000,
      env: { ...process.env, DOCKER_HOST: 'unix:///nonexistent/docker.sock' },
    });
    expect(JSON.parse(awayJson.stdout))
      .to.have.nested.property('engine.error')
      .that.matches(/cannot be reached/);
  });

  it('every command has --help with examples; the root help lists exit codes, environment and the --max-running default', async function () {
    const root = await berth('--help');
    expect(root.stdout).to.contain('Exit codes:').and.to.contain('BERTH_SPECS').and.to.contain('Examples:');
    const names = [...root.stdout.matchAll(/^ {2}([a-z]+) /gm)].map((m) => m[1] as string).filter((n) => n !== 'help');
    expect(names).to.include.members(['get', 'wait', 'rerun', 'delete', 'logs', 'version', 'completion']);
    for (const n of names) {
      const h = await berth(n, '--help');
      expect(h.stdout, n).to.match(/Examples:\n {2}\S*.*berth/);
    }
    expect((await berth('reconcile', '--help')).stdout).to.match(
      /--max-running <n>\s+attempts running at once \(default: 2 × CPUs,\s+at\s+least 2: \d+ here\)/,
    );
  });

  it('completion bash: valid bash that completes commands and flags; zsh and fish scripts name every command', async function () {
    const bash = (await berth('completion', 'bash')).stdout;
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-completion-'));
    try {
      const file = path.join(dir, 'berth.bash');
      await fs.writeFile(file, bash);
      const out = execFileSync(
        'bash',
        [
          '-c',
          `source ${file}; COMP_WORDS=(berth wa); COMP_CWORD=1; _berth; echo "\${COMPREPLY[@]}"; COMP_WORDS=(berth get --no-h); COMP_CWORD=2; _berth; echo "\${COMPREPLY[@]}"`,
        ],
        { encoding: 'utf8' },
      );
      expect(out).to.equal('wait\n--no-headers\n');
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
    for (const sh of ['zsh', 'fish']) {
      const s = (await berth('completion', sh)).stdout;
      for (const c of ['get', 'wait', 'rerun', 'delete', 'logs', 'completion']) expect(s, `${sh} ${c}`).to.contain(c);
    }
    expect((await berth('completion', 'tcsh')).code).to.equal(2);
  });

  describe('with the engine', function () {
    before(requireEngine);
    let sb: Sandbox;
    before(async function () {
      sb = await Sandbox.create('usage');
      await sb.write('a.yaml', sb.attempt('a', 'true'));
      expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    });
    after(async function () {
      await sb.destroy();
    });

    it('BERTH_* environment variables are the defaults; flags win', async function () {
      const keys = ['BERTH_SPECS', 'BERTH_STATE', 'BERTH_INSTANCE', 'BERTH_RESULTS_ROOT'] as const;
      const saved = keys.map((k) => process.env[k]);
      Object.assign(process.env, { BERTH_SPECS: sb.specsDir, BERTH_STATE: sb.stateDir, BERTH_INSTANCE: sb.instance, BERTH_RESULTS_ROOT: sb.resultsRoot });
      try {
        const env = await berth('get', '-o', 'name');
        expect([env.code, env.stdout]).to.deep.equal([0, 'attempt/a\n']);
        const empty = path.join(sb.dir, 'no-specs');
        await fs.mkdir(empty, { recursive: true });
        const flag = await berth('get', '-o', 'name', '--specs', empty, '--state', path.join(sb.dir, 'other-state'));
        expect([flag.code, flag.stdout]).to.deep.equal([0, '']);
      } finally {
        keys.forEach((k, i) => (saved[i] === undefined ? delete process.env[k] : (process.env[k] = saved[i])));
      }
    });

    it('--log-format json: every stderr line is JSON, progress and the --timeout message included', async function () {
      await sb.write('slow.yaml', sb.attempt('slow', 'sleep 30'));
      const r = await sb.cli('reconcile', '--once', '--wait', '--timeout', '1', '--log-format', 'json');
      expect(r.code).to.equal(1);
      const lines = r.stderr
        .trimEnd()
        .split('\n')
        .map((l) => JSON.parse(l) as { level: string; message: string; progress?: boolean });
      expect(lines.some((l) => l.progress && /^\[\d+s\] /.test(l.message))).to.equal(true);
      expect(lines.at(-1)).to.deep.include({ level: 'error', message: '--timeout 1s passed with 1 attempt unfinished' });
      const usage = await sb.cli('get', '-l', 'a in (', '--log-format', 'json');
      expect(usage.code).to.equal(2);
      for (const l of usage.stderr.trimEnd().split('\n')) expect(() => JSON.parse(l) as unknown, l).to.not.throw();
      await sb.remove('slow.yaml');
    });

    it('messages count in the singular when there is one', async function () {
      const other = await Sandbox.create('usage1');
      try {
        await other.write('b.yaml', other.attempt('b', 'sleep 30'));
        expect((await other.cli('reconcile', '--once')).code).to.equal(0);
      } finally {
        const clean = await other.cli('clean');
        expect(clean.stdout).to.match(/^removed 1 container, 0 networks, 0 volumes of instance /);
        await fs.rm(other.dir, { recursive: true, force: true });
      }
    });
  });
});

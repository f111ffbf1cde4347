/**
 * berth logs on the real engine: -f on a running attempt, earlier runs, --tail, sidecar logs from their files, and the harvested log when the engine
 * is down.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { lastLines } from '../../src/cli/commands/logs';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

describe('cli logs (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('logs');
    await sb.write('a.yaml', sb.attempt('a', 'for i in 1 2 3 4 5; do echo l$i; done'));
    const first = await sb.cli('reconcile', '--once', '--wait');
    if (first.code !== 0) throw new Error(first.stderr);
    expect((await sb.cli('rerun', 'a')).code).to.equal(0);
    const second = await sb.cli('reconcile', '--once', '--wait');
    if (second.code !== 0) throw new Error(second.stderr);
    await sb.write('live.yaml', sb.attempt('live', 'echo up; sleep 30'));
    const third = await sb.cli('reconcile', '--once');
    if (third.code !== 0) throw new Error(third.stderr);
  });
  after(async function () {
    await sb.destroy();
  });

  it('lastLines keeps the last n lines and the final newline', function () {
    expect(lastLines('a\nb\nc\n', 2)).to.equal('b\nc\n');
    expect(lastLines('a\nb\nc', 1)).to.equal('c');
    expect(lastLines('a\n', 0)).to.equal('');
    expect(lastLines('a\nb\n', 9)).to.equal('a\nb\n');
  });

  it('-f follows a running attempt: what it writes as it writes it, to the end of the run (the built CLI)', async function () {
    // the attempt writes one line, then the rest once the test says so (a file it waits for)
    await sb.write('follow.yaml', sb.attempt('follow', 'echo first; until [ -e /results/go ]; do sleep 0.1; done; echo second; echo last'));
    const started = await sb.cli('reconcile', '--once');
    expect(started.code, started.stderr).to.equal(0);
    const child = spawn(process.execPath, [BIN, 'logs', 'follow', '-f', ...sb.globalArgs()], { stdio: ['ignore', 'pipe', 'pipe'] });
    let [out, err] = ['', ''];
    let seen: () => void = () => undefined;
    child.stdout.on('data', (c) => ((out += String(c)), seen()));
    child.stderr.on('data', (c) => (err += String(c)));
    const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
    try {
      await new Promise<void>((resolve) => {
        seen = () => out.includes('first\n') && resolve();
        seen();
      });
      expect([out, child.exitCode], 'the first line, while the run goes on').to.deep.equal(['first\n', null]);
      const id = (await sb.status('follow'))?.containerId as string;
      const exec = await docker.getContainer(id).exec({ Cmd: ['touch', '/results/go'] });
      await exec.start({ Detach: true });
      expect([await exited, out, err]).to.deep.equal([0, 'first\nsecond\nlast\n', '']);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('--run reads an earlier run from its harvested file; --tail cuts it', async function () {
    expect((await sb.status('a'))?.run).to.equal(2);
    const run1 = path.join(sb.resultsRoot, 'a', 'run-1', 'logs.txt');
    await fs.appendFile(run1, 'marker-of-run-1\n');
    const one = await sb.cli('logs', 'a', '--run', '1');
    expect([one.code, one.stdout]).to.deep.equal([0, 'l1\nl2\nl3\nl4\nl5\nmarker-of-run-1\n']);
    const now = await sb.cli('logs', 'a', '--tail', '2');
    expect([now.code, now.stdout]).to.deep.equal([0, 'l4\nl5\n']);
    expect((await sb.cli('logs', 'a', '--run', '3')).code).to.equal(2);
  });

  it("--sidecar reads a sidecar's harvested log", async function () {
    const dir = path.join(sb.resultsRoot, 'a', 'run-2', 'sidecars');
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, 'egress-proxy.log'), 'proxy up\n');
    const r = await sb.cli('logs', 'a', '--sidecar', 'egress-proxy');
    expect([r.code, r.stdout]).to.deep.equal([0, 'proxy up\n']);
    const none = await sb.cli('logs', 'a', '--sidecar', 'nope');
    expect(none.code).to.equal(1);
    expect(none.stderr).to.contain('no logs for sidecar nope of a run 2');
  });

  it('engine down: a harvested log is shown without the engine; a live one says the engine is unreachable', async function () {
    const saved = process.env.DOCKER_HOST;
    process.env.DOCKER_HOST = `unix://${path.join(sb.dir, 'no-engine.sock')}`;
    try {
      const done = await sb.cli('logs', 'a');
      expect([done.code, done.stdout, done.stderr]).to.deep.equal([0, 'l1\nl2\nl3\nl4\nl5\n', '']);
      const live = await sb.cli('logs', 'live');
      expect(live.code).to.equal(1);
      expect(live.stderr).to.contain('no-engine.sock').and.to.contain('no harvested log of live run 1');
    } finally {
      if (saved === undefined) delete process.env.DOCKER_HOST;
      else process.env.DOCKER_HOST = saved;
    }
  });

  it('an attempt whose spec was removed (its record forgotten with it) still has its harvested logs: logs prints them', async function () {
    const own = await Sandbox.create('logsgone');
    try {
      await own.write('gone.yaml', own.attempt('gone', 'echo first words; echo last words'));
      expect((await own.cli('reconcile', '--once', '--wait')).code).to.equal(0);
      await own.remove('gone.yaml');
      const r = await own.cli('reconcile', '--once', '--allow-empty');
      expect(r.code, r.stderr).to.equal(0);
      expect(await own.status('gone')).to.equal(undefined);
      await fs.access(path.join(own.resultsRoot, 'gone', 'run-1', 'logs.txt'));
      const l = await own.cli('logs', 'gone');
      expect([l.code, l.stdout, l.stderr]).to.deep.equal([0, 'first words\nlast words\n', '']);
      expect((await own.cli('logs', 'attempt/gone', '--tail', '1')).stdout).to.equal('last words\n');
      const other = await own.cli('logs', 'gone', '--run', '2');
      expect([other.code, other.stderr]).to.deep.equal([2, 'berth: --run 2: attempt "gone" has harvested logs of runs 1 only\n']);
      expect((await own.cli('logs', 'never')).code).to.equal(1);
    } finally {
      await own.destroy();
    }
  });
});

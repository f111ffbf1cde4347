/**
 * A sick engine: a loopback socket that accepts and never answers, one that answers only
 * /_ping, and a socket that is not there. Every command ends within its bound with exit 1 and
 * the one clear message naming where berth looked; a controller stops on SIGTERM at once and
 * says in /readyz that the engine does not answer. Runs the built CLI (dist/) as a child
 * process, with DOCKER_HOST pointing at the sick socket and a short --engine-timeout.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { TIMEOUT_HINT } from '../../src/engine/errors';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { SickEngine } from '../support/sick-engine';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');
/** The engine timeout the commands get. */
const TIMEOUT = '500ms';
/**
 * A guard, not a claim on berth's pace: a command still running this long (sixty times its
 * engine timeout) is killed, and its test fails on its exit code. What shows a command kept its
 * deadlines is that it ended by itself, exit 1, with the message naming the timeout.
 */
const KILL_AFTER_MS = 30_000;

interface Ran {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

/** Runs berth; kills it (and says so) if it outlives `killAfterMs`. */
function berth(args: string[], dockerHost: string, killAfterMs = KILL_AFTER_MS): Promise<Ran> {
  const t0 = Date.now();
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, DOCKER_HOST: dockerHost }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c) => (stdout += String(c)));
  child.stderr.on('data', (c) => (stderr += String(c)));
  const killer = setTimeout(() => {
    stderr += `\n[test: still running after ${killAfterMs} ms; killed]`;
    child.kill('SIGKILL');
  }, killAfterMs);
  return new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(killer);
      resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 });
    }),
  );
}

describe('a sick engine: every command is bounded, with one clear message', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('sick');
    await sb.write('a.yaml', sb.attempt('a', 'true'));
  });
  after(async function () {
    await sb.destroy();
  });

  const commands: [string, string[]][] = [
    ['reconcile --once', ['reconcile', '--once']],
    ['reconcile --once --wait', ['reconcile', '--once', '--wait']],
    ['plan', ['plan']],
    ['clean', ['clean']],
    ['describe a', ['describe', 'a']],
    ['logs a', ['logs', 'a']],
  ];

  for (const mode of ['silent', 'ping-only'] as const) {
    it(`${mode === 'silent' ? 'never answers' : 'answers only /_ping'}: ${commands.map(([n]) => n).join(', ')} exit 1 by themselves, naming the timeout; get needs no engine`, async function () {
      const sick = await SickEngine.start(mode);
      try {
        const runs = await Promise.all(commands.map(([, args]) => berth([...args, ...sb.globalArgs(), '--engine-timeout', TIMEOUT], sick.dockerHost)));
        const want = new RegExp(
          `^berth: the Docker engine at ${sick.dockerHost.replace(/[/.]/g, '\\$&')} \\(DOCKER_HOST\\) did not answer [a-z.]+[A-Za-z]* within 500 ms \\(--engine-timeout\\): ${TIMEOUT_HINT}$`,
          'm',
        );
        runs.forEach((r, i) => {
          const what = `${commands[i]![0]}: ${r.stderr}`;
          expect(r.code, what).to.equal(1);
          expect(r.stderr, what).to.match(want);
          expect(r.stderr, what).not.to.match(/ENOENT|ECONNRESET|socket hang up/);
        });
        expect(sick.unanswered, 'the commands did reach the sick engine').to.be.greaterThan(0);
        // describe still shows what the records and specs say
        expect(runs[4]!.stdout).to.match(/Name:\s+a/);
        expect(runs[4]!.stdout).to.match(/Resources:\s+unknown \(the engine did not answer\)/);
        const get = await berth(['get', ...sb.globalArgs(), '--engine-timeout', TIMEOUT], sick.dockerHost);
        expect(get.code, get.stderr).to.equal(0);
        expect(get.stdout).to.match(/^a\s+Pending\s+NotReconciled/m);
      } finally {
        await sick.close();
      }
    });
  }

  it('a socket that is not there: the same commands exit 1 at once, naming it', async function () {
    const dir = await fs.mkdtemp(path.join(sb.dir, 'nosock-'));
    const host = `unix://${dir}/docker.sock`;
    const runs = await Promise.all(commands.map(([, args]) => berth([...args, ...sb.globalArgs()], host)));
    runs.forEach((r, i) => {
      const what = `${commands[i]![0]}: ${r.stderr}`;
      expect(r.code, what).to.equal(1);
      expect(r.stderr, what).to.include(`berth: the Docker engine at ${host} (DOCKER_HOST) cannot be reached: connect ENOENT ${dir}/docker.sock`);
    });
  });

  it('a DOCKER_HOST with credentials: the message names the host without them', async function () {
    const r = await berth(['plan', ...sb.globalArgs(), '--engine-timeout', TIMEOUT], 'tcp://alice:s3cret@127.0.0.1:1');
    expect(r.code, r.stderr).to.equal(1);
    expect(r.stderr).to.include('berth: the Docker engine at tcp://127.0.0.1:1 (DOCKER_HOST) cannot be reached: connect ECONNREFUSED 127.0.0.1:1');
    expect(r.stderr).not.to.match(/alice|s3cret/);
  });

  it('--engine-timeout refuses what is not a duration (exit 2)', async function () {
    const r = await berth(['plan', ...sb.globalArgs(), '--engine-timeout', 'soon'], 'unix:///nonexistent');
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/--engine-timeout must be a duration/);
  });

  describe('the controller', function () {
    /** A guard, far below the deadlines of the calls the controller waits on (60 s, 5 min), not a claim on its pace. */
    const STOP_GUARD_MS = 20_000;
    /** Starts `berth reconcile` (the controller); resolves its metrics URL once it serves. */
    function controller(sick: SickEngine, extra: string[]) {
      const child = spawn(process.execPath, [BIN, 'reconcile', ...sb.globalArgs(), '--log-level', 'info', ...extra], {
        env: { ...process.env, DOCKER_HOST: sick.dockerHost },
        stdio: ['ignore', 'ignore', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (c) => (stderr += String(c)));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      /** Exit code, or a string when it has not exited `ms` after `kill`. */
      const stop = async (ms: number): Promise<{ code: number | null | string; ms: number }> => {
        const t0 = Date.now();
        child.kill('SIGTERM');
        const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r(`still running ${ms} ms after SIGTERM`), ms).unref())]);
        if (typeof code === 'string') child.kill('SIGKILL');
        return { code, ms: Date.now() - t0 };
      };
      return { child, exited, stop, stderr: () => stderr };
    }

    it('answering only /_ping: /readyz names the engine that does not answer; SIGTERM stops it, giving up the calls in flight', async function () {
      const sick = await SickEngine.start('ping-only');
      const c = controller(sick, ['--engine-timeout', TIMEOUT, '--metrics-addr', '127.0.0.1:0', '--resync', '1']);
      try {
        const deadline = Date.now() + 20_000;
        let url: string | undefined;
        let body = '';
        let status = 0;
        while (Date.now() < deadline) {
          url ??= /metrics and health on (http:\/\/[^ ]+) /.exec(c.stderr())?.[1];
          if (url) {
            const res = await fetch(`${url}/readyz`);
            [status, body] = [res.status, await res.text()];
            if (/did not answer/.test(body)) break;
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        expect(status, c.stderr()).to.equal(503);
        expect(body).to.match(
          new RegExp(
            `^not ready: the Docker engine at ${sick.dockerHost.replace(/[/.]/g, '\\$&')} \\(DOCKER_HOST\\) did not answer [a-z.]+[A-Za-z]* within 500 ms`,
          ),
        );
        expect((await fetch(`${url}/healthz`)).status, 'alive: restarting berth does not heal an engine').to.equal(200);
        expect(await (await fetch(`${url}/metrics`)).text()).to.match(/^berth_engine_up 0$/m);
        const stopped = await c.stop(STOP_GUARD_MS);
        expect(stopped.code, c.stderr()).to.equal(0);
        expect(c.stderr()).to.match(/SIGTERM: finishing the operations in flight/);
        expect(c.stderr()).to.match(/the engine does not answer: giving up the engine calls in flight/);
        expect(c.stderr()).to.match(/controller stopped/);
      } finally {
        c.child.kill('SIGKILL');
        await sick.close();
      }
    });

    it('answering only /_ping, its calls given long deadlines: SIGTERM while it takes the lock ends the process, not the deadline', async function () {
      // The lock's volumes.create, unanswered, once held the process for its whole deadline
      // after "controller stopped" (issue 37): the stop must give such calls up. Their deadline
      // is 5 min: a process that ends within the stop's guard (20 s) gave them up.
      const sick = await SickEngine.start('ping-only');
      const c = controller(sick, ['--engine-timeout', '5m']);
      try {
        const t0 = Date.now();
        // (the host check first: its boot and /info calls go unanswered for 10 s each, then it warns and goes on)
        while (!sick.unansweredPaths.some((p) => p.endsWith('/volumes/create')) && Date.now() - t0 < 40_000) await new Promise((r) => setTimeout(r, 50));
        expect(sick.unansweredPaths.join(' '), c.stderr()).to.match(/\/volumes\/create/);
        const stopped = await c.stop(STOP_GUARD_MS);
        expect(stopped.code, c.stderr()).to.equal(0);
        expect(c.stderr()).to.match(/giving them up/);
        expect(c.stderr()).to.match(/controller stopped/);
      } finally {
        c.child.kill('SIGKILL');
        await sick.close();
      }
    });

    it('never answering: exits 1 with the message after its first call; SIGTERM while it waits stops it at once', async function () {
      const sick = await SickEngine.start('silent');
      try {
        const r = await berth(['reconcile', ...sb.globalArgs(), '--engine-timeout', TIMEOUT], sick.dockerHost);
        expect(r.code, r.stderr).to.equal(1);
        expect(r.stderr).to.include(`berth: the Docker engine at ${sick.dockerHost} (DOCKER_HOST) did not answer ping within 500 ms (--engine-timeout)`);

        const before = sick.unanswered;
        const c = controller(sick, ['--engine-timeout', '60s']);
        const t0 = Date.now();
        // its first call (the ping) is waiting for an answer
        while (sick.unanswered === before && Date.now() - t0 < 10_000) await new Promise((res) => setTimeout(res, 50));
        const stopped = await c.stop(STOP_GUARD_MS);
        expect(stopped.code, c.stderr()).to.equal(0);
        expect(c.stderr()).to.match(/SIGTERM before the engine answered/);
      } finally {
        await sick.close();
      }
    });
  });
});

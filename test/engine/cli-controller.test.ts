/**
 * A controller started as a user starts it (`berth reconcile`, the built CLI in its own
 * process) and the commands a user types beside it: a spec broken while it runs (its log,
 * `get`, `describe`, `/readyz`), `rerun` and `delete` carried out by the running controller.
 */
import { expect } from 'chai';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { docker, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.on('data', (c) => (body += String(c)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

interface Running {
  child: ChildProcess;
  /** Everything it wrote on stderr so far (its log). */
  log(): string;
  /** Resolves with the log once it matches `re`. */
  until(re: RegExp, timeoutMs?: number): Promise<string>;
  stop(): Promise<number | null>;
}

/** `berth reconcile ARGS` with the sandbox's folders, its log at info on stderr. */
function controller(sb: Sandbox, ...args: string[]): Running {
  const child = spawn(process.execPath, [BIN, 'reconcile', ...sb.globalArgs(), '--log-level', 'info', ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const waiters = new Set<() => void>();
  child.stderr?.on('data', (c) => {
    err += String(c);
    for (const w of waiters) w();
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  return {
    child,
    log: () => err,
    until: (re, timeoutMs = 20_000) =>
      new Promise((resolve, reject) => {
        const check = () => {
          if (!re.test(err)) return;
          waiters.delete(check);
          clearTimeout(t);
          resolve(err);
        };
        const t = setTimeout(() => {
          waiters.delete(check);
          reject(new Error(`timed out waiting for ${re} in the controller's log:\n${err}`));
        }, timeoutMs);
        waiters.add(check);
        check();
        void exited.then(() => {
          if (!waiters.has(check)) return;
          waiters.delete(check);
          clearTimeout(t);
          reject(new Error(`the controller exited before ${re} appeared:\n${err}`));
        });
      }),
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

/** `script` run by sh as a user types it, `berth` the built CLI, the sandbox's folders and instance from BERTH_*. */
async function shell(sb: Sandbox, script: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const bin = path.join(sb.dir, 'bin');
  await fs.mkdir(bin, { recursive: true });
  await fs.writeFile(path.join(bin, 'berth'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`, { mode: 0o755 });
  const env = {
    ...process.env,
    PATH: `${bin}:${process.env.PATH ?? ''}`,
    BERTH_SPECS: sb.specsDir,
    BERTH_STATE: sb.stateDir,
    BERTH_RESULTS_ROOT: sb.resultsRoot,
    BERTH_INSTANCE: sb.instance,
    BERTH_LOG_LEVEL: 'warn',
  };
  const r = spawnSync('sh', ['-c', script], { env, encoding: 'utf8', timeout: 90_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const count = (text: string, re: RegExp) => [...text.matchAll(new RegExp(re.source, 'g'))].length;

describe('a running controller and the commands beside it (real engine, built CLI)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('ctlcli');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('a spec broken while the controller runs: logged once at warn with file:line:col, shown by get, describe and /readyz; fixed, it is said so', async function () {
    const a = await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
    const b = await sb.write('b.yaml', sb.attempt('b', 'sleep 300'));
    const c = await sb.write('c.yaml', sb.attempt('c', 'sleep 300'));
    const ctl = controller(sb, '--resync', '1s', '--metrics-addr', '127.0.0.1:0');
    try {
      const url = /health on (http:\/\/[^ ]+) /.exec(await ctl.until(/health on http:\/\/\S+ /))?.[1] ?? '';
      const phases = async () => Promise.all(['a', 'b', 'c'].map(async (n) => (await sb.status(n))?.phase));
      await waitFor('all Running', async () => (await phases()).every((p) => p === 'Running'), { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] });
      expect((await get(`${url}/readyz`)).body).to.equal('ok\n');

      // a: the schema refuses a field; b: broken YAML, its name still read; c: nothing of it reads
      await fs.writeFile(a, sb.attempt('a', 'sleep 300').replace('image: berth/busybox:local', 'image: [berth/busybox:local]'));
      await fs.writeFile(b, 'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: b\n');
      await fs.writeFile(c, '\t\tnot: [yaml\n');
      const aErr = new RegExp(`warn.*spec error: ${a.replace(/[.]/g, '\\.')}:6:10: spec\\.image: `);
      const bErr = new RegExp(`warn.*spec error: ${b.replace(/[.]/g, '\\.')}:\\d+:\\d+: `);
      await ctl.until(aErr);
      await ctl.until(bErr);
      await ctl.until(new RegExp(`warn.*spec error: ${c.replace(/[.]/g, '\\.')}:1:1: Tabs are not allowed`));
      // two resyncs later (full passes, counted by the metrics), each is still logged once
      const passes = async () =>
        Number(/^controller_runtime_reconcile_total\{[^}]*result="success"[^}]*\} (\d+)/m.exec((await get(`${url}/metrics`)).body)?.[1] ?? 0);
      const now = await passes();
      await waitFor('two more passes', async () => (await passes()) >= now + 2, { timeoutMs: 20_000 });
      expect(count(ctl.log(), aErr), ctl.log()).to.equal(1);
      expect(count(ctl.log(), bErr), ctl.log()).to.equal(1);

      // nothing removed: both keep running their last good spec
      const running = await docker.listContainers({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`], status: ['running'] }) });
      expect(running.map((x) => x.Labels[LABELS.attempt]).sort()).to.deep.equal(['a', 'b', 'c']);

      const g = await sb.cli('get');
      expect(g.code, g.stderr).to.equal(0);
      expect(g.stdout)
        .to.match(/^a +Running/m)
        .and.to.match(/^b +Running/m)
        .and.to.match(/^c +Running/m);
      expect(g.stderr, g.stderr).to.match(
        /^berth: warning: 3 attempts keep their last good spec: their specs are broken; what runs is left as it is until fixed/,
      );
      expect(g.stderr).to.include(`\n  a: ${a}:6:10: spec.image: `);
      expect(g.stderr).to.match(new RegExp(`\\n  b: ${b.replace(/[.]/g, '\\.')}:3:\\d+: `));
      expect(g.stderr).to.include(`\n  c: ${c}:1:1: Tabs are not allowed as indentation (and 1 more)\n`);

      const da = await sb.cli('describe', 'a');
      expect(da.stdout).to.match(/^Spec: +INVALID: what runs under this name is left as it is until the spec is fixed\n +.*a\.yaml:6:10: spec\.image: /m);
      expect(da.stdout).to.match(/^Phase: +Running$/m);
      const db = await sb.cli('describe', 'b');
      expect(db.stdout).to.match(/^Spec: +INVALID: what runs under this name is left as it is until the spec is fixed\n +.*b\.yaml:3:\d+: /m);
      expect(db.stdout).to.match(/^Phase: +Running$/m);
      const dc = await sb.cli('describe', 'c');
      expect(dc.stdout).to.match(
        /^Spec: +BROKEN: c\.yaml cannot be read; what runs under this name keeps its last good spec, left as it is until the file is fixed\n +.*c\.yaml:1:1: Tabs/m,
      );

      const ready = await get(`${url}/readyz`);
      expect(ready.status).to.equal(200);
      expect(ready.body).to.match(
        /^ok\nspec errors in 3 files \(what runs under them keeps its last good spec\):\n {2}.*a\.yaml:6:10: spec\.image: .*\n {2}.*b\.yaml:3:\d+: .*\n {2}.*c\.yaml:1:1: .*\n$/,
      );

      // another error in a: logged again; a fixed: said once, and gone from get and /readyz
      await fs.writeFile(a, sb.attempt('a', 'sleep 300').replace('image: berth/busybox:local', 'image: berth/busybox:local\n  bogus: 1'));
      await ctl.until(new RegExp(`warn.*spec error: ${a.replace(/[.]/g, '\\.')}:7:3: spec\\.bogus: unknown field`));
      await fs.writeFile(a, sb.attempt('a', 'sleep 300'));
      await ctl.until(new RegExp(`info.*spec errors fixed: ${a.replace(/[.]/g, '\\.')}`));
      expect((await get(`${url}/readyz`)).body).to.match(/^ok\nspec errors in 2 files .*\n {2}.*b\.yaml:.*\n {2}.*c\.yaml:/);
      const g2 = await sb.cli('get');
      expect(g2.stderr).to.match(/^berth: warning: 2 attempts keep their last good spec/);
      expect(g2.stderr).not.to.include('  a: ');
      expect(count(ctl.log(), aErr)).to.equal(1);
    } finally {
      expect(await ctl.stop(), ctl.log()).to.equal(0);
    }
  });

  it('rerun and delete while a controller runs: the controller carries them out and answers; a controller that does not take them is said so', async function () {
    await sb.write('quick.yaml', sb.attempt('quick', 'echo $RANDOM > /results/out.txt'));
    await sb.write('slow.yaml', sb.attempt('slow', 'echo started > /results/s.txt; sleep 300'));
    const ctl = controller(sb);
    try {
      await waitFor(
        'quick Succeeded, slow Running',
        async () => (await sb.status('quick'))?.phase === 'Succeeded' && (await sb.status('slow'))?.phase === 'Running',
        {
          dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
        },
      );
      const r = await shell(sb, 'berth rerun quick');
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.match(/^attempt\/quick rerun: run 2 (Running|Succeeded)\n$/);
      expect(r.stderr).to.equal('1 attempt re-run\n');
      await ctl.until(/info +rerun of quick asked by \S+ \(pid \d+ on /);
      await waitFor('quick run 2 Succeeded', async () => (await sb.status('quick'))?.phase === 'Succeeded' || undefined, {
        dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
      });
      await fs.access(path.join(sb.resultsRoot, 'quick', 'run-1', 'results', 'out.txt'));
      await fs.access(path.join(sb.resultsRoot, 'quick', 'run-2', 'results', 'out.txt'));

      // a running attempt is refused, as without a controller
      const busy = await shell(sb, 'berth rerun slow');
      expect([busy.code, busy.stdout, busy.stderr]).to.deep.equal([
        1,
        '',
        'berth: slow: it is Running, not finished: only a finished attempt (or a failed build) is re-run\n',
      ]);

      const d = await shell(sb, 'berth delete slow');
      expect(d.code, d.stderr).to.equal(0);
      expect(d.stdout).to.match(/^attempt\/slow deleted \(stopped; removed 1 container; results stay in .*run-1\/results\)\n$/);
      expect(d.stderr).to.equal('1 attempt deleted; not run again until the spec changes or berth rerun\n');
      const left = await docker.listContainers({
        all: true,
        filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=slow`] }),
      });
      expect(left).to.have.length(0);
      const st = await sb.status('slow');
      expect([st?.phase, st?.reason, st?.deleted !== undefined]).to.deep.equal(['Failed', 'Deleted', true]);

      // the requests folder is left empty: every request answered, every answer read
      expect(await fs.readdir(path.join(sb.stateDir, sb.instance, 'requests'))).to.deep.equal([]);

      // a controller that does not take the request (stopped by SIGSTOP): the command gives up and says so
      ctl.child.kill('SIGSTOP');
      try {
        const stuck = await shell(sb, 'berth rerun slow --timeout 2s');
        expect([stuck.code, stuck.stdout]).to.deep.equal([1, '']);
        expect(stuck.stderr).to.match(
          /^berth: the controller \(pid \d+ on \S+\) runs instance "[^"]+" but did not take the rerun in 2 s; nothing was done\. Is it stuck\? Its log says; try again with a longer --timeout, or stop it \(SIGTERM\) and run berth rerun again\n$/,
        );
        expect(await fs.readdir(path.join(sb.stateDir, sb.instance, 'requests'))).to.deep.equal([]);
      } finally {
        ctl.child.kill('SIGCONT');
      }
      // another state folder than the controller's: the command says which to give
      const other = path.join(sb.dir, 'other-state');
      const elsewhere = await shell(sb, `BERTH_STATE=${other} berth rerun quick`);
      expect([elsewhere.code, elsewhere.stdout]).to.deep.equal([1, '']);
      expect(elsewhere.stderr).to.equal(
        `berth: a controller runs instance "${sb.instance}" with state folder ${sb.stateDir} (berth reconcile, pid ${ctl.child.pid} on ${os.hostname()}): give --state ${sb.stateDir} and berth asks it to do this\n`,
      );
      // and the deleted attempt comes back with rerun, through the controller
      const back = await shell(sb, 'berth rerun slow');
      expect(back.code, back.stderr).to.equal(0);
      expect(back.stdout).to.match(/^attempt\/slow rerun: run 2 Running\n$/);
    } finally {
      expect(await ctl.stop(), ctl.log()).to.equal(0);
    }
  });

  it('regrade while a controller runs: carried out by the controller, the command ends once the new grade is graded', async function () {
    await sb.write('g.yaml', sb.attempt('g', 'echo done > /results/out.txt', "  grade:\n    command: [sh, -c, 'exit 0']\n"));
    const ctl = controller(sb);
    const graded = async (k: number) => ((await sb.status('g'))?.grades ?? []).filter((x) => x.state === 'graded').length >= k || undefined;
    try {
      await waitFor('grade 1', () => graded(1), { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] });
      const r = await shell(sb, 'berth regrade g');
      expect(r.code, r.stderr).to.equal(0);
      // the command waits for the grade the controller carries out
      expect(r.stdout).to.match(/^attempt\/g regrade: grade 2 of run 1 graded \(pass\)\n$/);
      await ctl.until(/info +regrade of g asked by /);
      expect(await graded(2)).to.equal(true);
    } finally {
      expect(await ctl.stop(), ctl.log()).to.equal(0);
    }
  });
});

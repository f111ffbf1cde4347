/**
 * A controller started as a user starts it (`berth reconcile`, the built CLI in its own
 * process) and the commands a user types beside it: a spec broken while it runs (its log,
 * `get`, `describe`, `/readyz`), `rerun` and `delete` carried out by the running controller.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import http from 'node:http';
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
        /^berth: warning: 3 attempts keep their last good spec: their specs are broken, and what runs is left as it is until fixed/,
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
});

/**
 * A second writer on one instance and one engine, from another state folder (two checkouts
 * running `make run` with the default instance): the engine-side instance lock lets exactly one
 * drive it. Runs the built CLI (dist/) as child processes; `make test` builds it first.
 */
import { expect } from 'chai';
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { LABELS, lockVolumeName } from '../../src/constants';
import { startController } from '../support/controller';
import { docker, requireEngine } from '../support/engine';
import { countByAttempt } from '../support/events';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stderr: string;
}

/** berth as a child process, with `sb`'s specs and instance but the state folder `state`. */
function berth(sb: Sandbox, state: string, ...args: string[]): { child: ChildProcess; exit: Promise<Exit> } {
  const globals = [
    '--specs',
    sb.specsDir,
    '--state',
    path.join(sb.dir, state),
    '--results-root',
    path.join(sb.dir, `${state}-results`),
    '--instance',
    sb.instance,
    '--log-level',
    'warn',
  ];
  const child = spawn(process.execPath, [BIN, ...args, ...globals], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (c) => (stderr += String(c)));
  const exit = new Promise<Exit>((resolve, reject) => {
    child.on('error', reject);
    child.on('exit', (code, signal) => resolve({ code, signal, stderr }));
  });
  return { child, exit };
}

async function lockExists(instance: string): Promise<boolean> {
  return docker
    .getVolume(lockVolumeName(instance))
    .inspect()
    .then(
      () => true,
      () => false,
    );
}

async function running(sb: Sandbox): Promise<{ id: string; name: string }[]> {
  const list = await docker.listContainers({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`], status: ['running'] }) });
  return list.map((c) => ({ id: c.Id, name: c.Names[0] ?? '' })).sort((a, b) => (a.name < b.name ? -1 : 1));
}

describe('a second writer (real engine, two state folders)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  const names = ['w1', 'w2', 'w3'];
  beforeEach(async function () {
    sb = await Sandbox.create('writer');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('two reconcile --once --wait started together: one drives, each attempt starts once; the other exits 1 naming the instance and the holder', async function () {
    for (const n of names) await sb.write(`${n}.yaml`, sb.attempt(n, 'sleep 2', '  network: {mode: isolated}\n'));
    const since = Math.floor(Date.now() / 1000) - 1;
    const [a, b] = await Promise.all([
      berth(sb, 'state-a', 'reconcile', '--once', '--wait', '--timeout', '40').exit,
      berth(sb, 'state-b', 'reconcile', '--once', '--wait', '--timeout', '40').exit,
    ]);
    const codes = [a.code, b.code].sort();
    expect(codes, `${a.stderr}\n${b.stderr}`).to.deep.equal([0, 1]);
    const loser = a.code === 1 ? a : b;
    const holderState = path.join(sb.dir, a.code === 1 ? 'state-b' : 'state-a');
    expect(loser.stderr).to.contain(`instance "${sb.instance}"`).and.contain(`state folder ${holderState}`).and.contain('berth reconcile --once --wait, pid ');
    const starts = await countByAttempt(sb.instance, since, 'start');
    for (const n of names) expect(starts.get(n) ?? 0, `starts of ${n}`).to.equal(1);
    expect(await lockExists(sb.instance), 'the lock outlives its holder').to.equal(false);
  });

  it('plain reconcile --once started together, three times: never a second start, and a refusal names the holder', async function () {
    for (const n of names) await sb.write(`${n}.yaml`, sb.attempt(n, 'sleep 300', '  network: {mode: isolated}\n'));
    const since = Math.floor(Date.now() / 1000) - 1;
    for (let round = 0; round < 3; round++) {
      const both = await Promise.all([berth(sb, 'state-a', 'reconcile', '--once').exit, berth(sb, 'state-b', 'reconcile', '--once').exit]);
      for (const r of both) {
        expect([0, 1], r.stderr).to.include(r.code);
        if (r.code === 1)
          expect(r.stderr).to.contain(`instance "${sb.instance}" is held on this engine by another berth process: berth reconcile --once, pid `);
      }
    }
    const starts = await countByAttempt(sb.instance, since, 'start');
    for (const n of names) expect(starts.get(n) ?? 0, `starts of ${n}`).to.equal(1);
    const f = (n: string) => JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=${n}`] });
    for (const n of names) expect(await docker.listNetworks({ filters: f(n) }), `networks of ${n}`).to.have.length(1);
  });

  it('reconcile --once and clean beside a running controller are refused, and its attempts are untouched', async function () {
    for (const n of names) await sb.write(`${n}.yaml`, sb.attempt(n, 'sleep 300'));
    const ctl = berth(sb, 'state-a', 'reconcile');
    try {
      const before = await waitFor('3 running', async () => ((await running(sb)).length === names.length ? running(sb) : undefined), { instance: sb.instance });
      const since = Date.now() / 1000; // fractional: the controller's own starts came before
      const once = await berth(sb, 'state-b', 'reconcile', '--once').exit;
      expect(once.code, once.stderr).to.equal(1);
      const holder = `berth reconcile, pid ${ctl.child.pid} on host `;
      expect(once.stderr)
        .to.contain(`instance "${sb.instance}" is held on this engine`)
        .and.contain(holder)
        .and.contain(`state folder ${path.join(sb.dir, 'state-a')}`);
      const clean = await berth(sb, 'state-b', 'clean').exit;
      expect(clean.code, clean.stderr).to.equal(1);
      expect(clean.stderr).to.contain(holder);
      const cleanSame = await berth(sb, 'state-a', 'clean').exit;
      expect(cleanSame.code, cleanSame.stderr).to.equal(1);
      expect(cleanSame.stderr).to.contain(`instance "${sb.instance}"`).and.contain(`pid ${ctl.child.pid} on host`);
      expect(await running(sb)).to.deep.equal(before);
      expect(await lockExists(sb.instance)).to.equal(true);
      for (const action of ['create', 'start', 'kill', 'destroy']) {
        expect([...(await countByAttempt(sb.instance, since, action)).values()], action).to.deep.equal([]);
      }
    } finally {
      ctl.child.kill('SIGTERM');
      expect((await ctl.exit).code).to.equal(0);
    }
    expect(await lockExists(sb.instance), 'released at SIGTERM').to.equal(false);
  });

  it('a SIGKILLed holder’s lock is taken over by the next command, which leaves no lock behind', async function () {
    await sb.write('k.yaml', sb.attempt('k', 'sleep 300'));
    const ctl = berth(sb, 'state-a', 'reconcile');
    await waitFor('k running', async () => (await running(sb)).length === 1, { instance: sb.instance });
    ctl.child.kill('SIGKILL');
    expect((await ctl.exit).signal).to.equal('SIGKILL');
    expect(await lockExists(sb.instance), 'a killed holder leaves its lock').to.equal(true);
    const since = Date.now() / 1000; // fractional: the controller's own start came before
    const next = await berth(sb, 'state-b', 'reconcile', '--once').exit;
    expect(next.code, next.stderr).to.equal(0);
    expect(next.stderr).to.contain('took over a stale engine lock').and.contain(`pid ${ctl.child.pid} `);
    expect(await lockExists(sb.instance)).to.equal(false);
    expect([...(await countByAttempt(sb.instance, since, 'start')).values()]).to.deep.equal([]);
  });

  it('a controller whose lock is broken under it (unlock --force) stops and exits 1; its attempts keep running', async function () {
    await sb.write('k.yaml', sb.attempt('k', 'sleep 300'));
    const ctl = startController(sb, { resync: 600, lockCheckSeconds: 0.2 });
    let timer: NodeJS.Timeout | undefined;
    try {
      const before = await waitFor('k running', async () => ((await running(sb)).length === 1 ? running(sb) : undefined), { instance: sb.instance });
      const unlock = await berth(sb, 'state-b', 'unlock', '--force').exit;
      expect(unlock.code, unlock.stderr).to.equal(0);
      const stopped = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error('the controller still runs 15 s after its lock was broken')), 15_000);
      });
      expect(await Promise.race([ctl.done, stopped])).to.equal(1);
      expect(ctl.io.stderr).to.contain(`instance "${sb.instance}": the controller's lock was taken away`);
      expect(await running(sb)).to.deep.equal(before);
    } finally {
      clearTimeout(timer);
      await ctl.stop();
    }
  });
});

/**
 * berth killed (SIGKILL) at arbitrary points of provisioning, then run again: no attempt is ever
 * started twice, nothing half-made leaks, and every attempt ends up running once.
 * Runs the built CLI (dist/) as a child process; `make test` builds it first.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { docker, requireEngine } from '../support/engine';
import { countByAttempt } from '../support/events';
import { Sandbox } from '../support/sandbox';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

function berth(sb: Sandbox, killAfterMs?: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, 'reconcile', '--once', ...sb.globalArgs()], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c) => (err += String(c)));
    let timer: NodeJS.Timeout | undefined;
    if (killAfterMs !== undefined) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL' || code === 0) resolve(code);
      else reject(new Error(`berth exited ${code}: ${err}`));
    });
  });
}

describe('crash safety (real engine, SIGKILL)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('crash');
  });
  after(async function () {
    await sb.destroy();
  });

  it('never starts an attempt twice and leaks nothing when killed between provisioning steps', async function () {
    await sb.write('fixtures/f/in.txt', 'input\n');
    const names = ['c1', 'c2', 'c3', 'c4'];
    for (const n of names) {
      await sb.write(`${n}.yaml`, sb.attempt(n, 'sleep 300', '  fixture: ./fixtures/f\n  network: {mode: isolated}\n  volumes: [{name: v, mountPath: /v}]\n'));
    }
    const since = Math.floor(Date.now() / 1000) - 1;
    // Kill at spread-out moments: during load, observe, creates, copies, starts, status writes.
    let killed = 0;
    for (const ms of [60, 150, 220, 300, 380, 460, 560, 700]) {
      if ((await berth(sb, ms)) === null) killed++;
    }
    expect(killed, 'at least some runs were killed mid-way').to.be.greaterThan(3);
    expect(await berth(sb)).to.equal(0);
    expect(await berth(sb)).to.equal(0);

    const starts = await countByAttempt(sb.instance, since, 'start');
    for (const n of names) expect(starts.get(n) ?? 0, `starts of ${n}`).to.equal(1);
    const f = (extra: string) => JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, extra] });
    for (const n of names) {
      expect(await docker.listContainers({ all: true, filters: f(`${LABELS.attempt}=${n}`) }), n).to.have.length(1);
      expect(await docker.listNetworks({ filters: f(`${LABELS.attempt}=${n}`) }), n).to.have.length(1);
      expect((await docker.listVolumes({ filters: f(`${LABELS.attempt}=${n}`) })).Volumes ?? [], n).to.have.length(1);
      const st = await sb.status(n);
      expect(st?.phase, n).to.equal('Running');
      expect(st?.intent, n).to.equal(undefined);
    }
  });
});

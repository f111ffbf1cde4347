/**
 * Registry faults, from a front of the test's own before the real registry (test/support/registry.ts):
 * each ends as its own message (401, 404, 500, an errorDetail inside the engine's 200 stream, a
 * registry that answers nothing past --engine-timeout); a 429's Retry-After is honoured and its
 * waits do not count toward --pull-retries; a layer cut mid-way is retried and the run uses the
 * digest that arrived; ten attempts of one image cost one pull per back-off step, not ten.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { REASONS } from '../../src/constants';
import type { AttemptStatus } from '../../src/status/types';
import { docker, requireEngine, TEST_RUN } from '../support/engine';
import { makeTestImage, removeImage, TestRegistry, type Fault, type RegistryFront } from '../support/registry';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const attempt = (name: string, image: string) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${name}}\nspec:\n  image: ${image}\n  command: [sh, -c, 'echo ran']\n---\n`;

describe('registry faults (real registry behind a front of the test)', function () {
  this.timeout(180_000);
  let reg: TestRegistry;
  let front: RegistryFront;
  let sb: Sandbox;
  let home: string;
  const local = `berth-test/${TEST_RUN}-fault:1`;
  let ref: string;

  before(async function () {
    await requireEngine();
    reg = await TestRegistry.start();
    await makeTestImage(local, 2 * 1024 * 1024);
    await reg.push(local, 'evals/fault:1');
    await removeImage(local);
    front = await reg.front();
    ref = `${front.host}/evals/fault:1`;
  });
  after(async function () {
    if (ref) await removeImage(ref);
    await removeImage(local);
    await reg?.stop();
  });
  beforeEach(async function () {
    sb = await Sandbox.create('fault');
    home = await fs.mkdtemp(path.join(os.tmpdir(), `berth-faultcfg-${TEST_RUN}-`));
    await fs.writeFile(path.join(home, 'config.json'), JSON.stringify({ auths: { ...reg.authEntry(front.host) } }));
    await removeImage(ref);
    front.set({ kind: 'pass' });
  });
  afterEach(async function () {
    front.onRequest = undefined;
    await sb.destroy();
    await fs.rm(home, { recursive: true, force: true });
  });

  const reconcile = (...args: string[]) =>
    sb.cli('reconcile', '--once', '--wait', '--timeout', '120', '--registry-config', path.join(home, 'config.json'), ...args);

  async function settledWith(name: string, fault: Fault, ...args: string[]): Promise<AttemptStatus | undefined> {
    front.set(fault);
    await sb.write('a.yaml', attempt(name, ref));
    const r = await reconcile('--pull-retries', '1', ...args);
    expect(r.code, r.stderr).to.equal(5);
    const rec = await sb.status(name);
    expect(rec?.phase).to.equal('Blocked');
    expect(rec?.reason).to.equal(REASONS.imagePullBackOff);
    return rec;
  }

  it('401 and 404 each end as their own message', async function () {
    const unauthorized = await settledWith('f401', { kind: 'status', status: 401 });
    expect(unauthorized?.message).to.contain(`unauthorized at ${front.host}: give berth a credential`);
    const notFound = await settledWith('f404', { kind: 'status', status: 404 });
    expect(notFound?.message).to.contain(`not found: ${ref} is not in ${front.host}`);
    expect(notFound?.message).to.contain('test fault 404');
  });

  it('a registry error (500) and a layer whose bytes do not match (the engine says so inside its 200 stream)', async function () {
    const err500 = await settledWith('f500', { kind: 'status', status: 500 });
    expect(err500?.message).to.contain(`registry error from ${front.host}: received unexpected HTTP status: 500`);
    const corrupt = await settledWith('fbad', { kind: 'corrupt' });
    expect(corrupt?.message).to.contain(`registry error from ${front.host}`);
    expect(corrupt?.message).to.contain('verification failed');
  });

  it('a registry that answers nothing: unreachable once --engine-timeout passes, berth does not hang', async function () {
    const silent = await settledWith('fsilent', { kind: 'silent' }, '--engine-timeout', '2s');
    expect(silent?.message).to.contain(`unreachable: ${front.host}: no answer for 2 s (--engine-timeout)`);
  });

  it("a 429's Retry-After is honoured (not the 10 s clock) and its wait does not count toward --pull-retries; then the pull succeeds", async function () {
    front.set({ kind: 'status', status: 429, retryAfter: 2 });
    // berth's own look at the registry (no docker user agent) for the wait: then the registry is fine again
    front.onRequest = () => {
      const last = front.seen.at(-1);
      // after this request is answered (it still gets the 429 and its Retry-After)
      if (last && !last.ua.includes('docker') && /manifests/.test(last.line)) setImmediate(() => (front.fault = { kind: 'pass' }));
    };
    await sb.write('a.yaml', attempt('f', ref));
    const run = reconcile('--pull-retries', '1');
    const waiting = await waitFor(
      'f Blocked/ImagePullBackOff, rate limited',
      async () => {
        const r = await sb.status('f');
        return r?.reason === REASONS.imagePullBackOff ? r : undefined;
      },
      { dirs: [sb.store().dir], timeoutMs: 60_000 },
    );
    const r = await run;
    expect(waiting.message).to.contain(`rate limited by ${front.host}: toomanyrequests: test fault 429`);
    expect(waiting.message).to.contain('(the registry’s Retry-After)');
    expect(r.code, r.stderr).to.equal(0);
    expect((await sb.status('f'))?.phase).to.equal('Succeeded');
    // the engine's own requests come in bursts (it retries a little itself); berth's next pull is the one gap
    const at = front.seen.filter((s) => s.ua.includes('docker') && /manifests/.test(s.line)).map((s) => s.at);
    const gap = Math.max(...at.slice(1).map((t, i) => t - (at[i] as number)));
    expect(gap).to.be.within(1500, 9500);
  });

  it('a layer cut mid-way is retried and the run uses the digest that finally arrived', async function () {
    front.set({ kind: 'cut', times: 1 });
    await sb.write('a.yaml', attempt('f', ref));
    const r = await reconcile();
    expect(r.code, r.stderr).to.equal(0);
    const rec = await sb.status('f');
    expect(rec?.phase).to.equal('Succeeded');
    const digests = (await docker.getImage(ref).inspect()).RepoDigests ?? [];
    expect(rec?.image?.repoDigests).to.deep.equal(digests);
    expect(digests[0]).to.match(/@sha256:[0-9a-f]{64}$/);
    // the cut was met: one blob was asked for more often than once
    const blobs = front.seen.filter((s) => /\/blobs\//.test(s.line)).map((s) => s.line);
    expect(new Set(blobs).size).to.be.lessThan(blobs.length);
  });

  it('one back-off clock per image: 10 attempts of one failing image cost one pull per back-off step, not ten', async function () {
    front.set({ kind: 'status', status: 500 });
    // what one pull costs at the front, asked of the engine directly
    const before = front.seen.length;
    await docker.pull(ref, { authconfig: { username: reg.user.user, password: reg.user.password, serveraddress: front.host } }).then(
      () => undefined,
      () => undefined,
    );
    const perPull = front.seen.slice(before).filter((s) => /manifests/.test(s.line)).length;
    expect(perPull).to.be.greaterThan(0);
    const from = front.seen.length;
    await sb.write('a.yaml', Array.from({ length: 10 }, (_, i) => attempt(`f${i}`, ref)).join(''));
    const r = await reconcile('--pull-retries', '2', '--max-running', '10');
    expect(r.code, r.stderr).to.equal(5);
    const recs = await sb.store().loadAll();
    for (let i = 0; i < 10; i++) {
      expect(recs.get(`f${i}`)?.reason).to.equal(REASONS.imagePullBackOff);
      expect(recs.get(`f${i}`)?.message).to.contain('given up after 2 failed pulls');
    }
    const manifests = front.seen.slice(from).filter((s) => /manifests/.test(s.line) && s.ua.includes('docker'));
    expect(manifests.length).to.equal(2 * perPull);
  });
});

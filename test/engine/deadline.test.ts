/**
 * Engine call deadlines on the real engine: each kind of call gets the budget it needs, never
 * less (a slow copy that still flows, a stop that waits its grace, a quiet event stream or log
 * are not cut), and a stalled call fails as `timeout`. Against a socket that never answers,
 * abandon() gives up every call in flight at once and closes its connections.
 */
import { expect } from 'chai';
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { createDockerEngine } from '../../src/engine/docker';
import { classify, EngineCallAbandonedError } from '../../src/engine/errors';
import type { ContainerCreateSpec } from '../../src/engine/types';
import { docker, newInstance, removeTestResources, requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN } from '../support/engine';
import { SickEngine } from '../support/sick-engine';

/** Short, but not so short that a busy engine misses it where it answers at once. */
const BUDGET_MS = 1000;

function spec(name: string, cmd: string): ContainerCreateSpec {
  return {
    name,
    image: TEST_IMAGE,
    cmd: ['sh', '-c', cmd],
    env: [],
    workingDir: '/',
    labels: { [TEST_LABEL]: TEST_RUN },
    host: {
      networkMode: 'none',
      binds: [],
      mounts: [],
      capDrop: [],
      capAdd: [],
      securityOpt: [],
      privileged: false,
      init: false,
      pidsLimit: 64,
      readonlyRootfs: false,
    },
  };
}

async function tarOf(name: string, bytes: number): Promise<Buffer> {
  const p = pack();
  p.entry({ name, size: bytes, mode: 0o644 }, Buffer.alloc(bytes, 7));
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** The buffer in `parts` pieces, one every `gapMs`; then, if `stallMs`, nothing for that long before the end. */
function trickle(buf: Buffer, parts: number, gapMs: number, stallMs = 0): Readable {
  const size = Math.ceil(buf.length / parts);
  return Readable.from(
    (async function* () {
      for (let i = 0; i < buf.length; i += size) {
        yield buf.subarray(i, i + size);
        await new Promise((r) => setTimeout(r, i + size >= buf.length ? stallMs : gapMs));
      }
    })(),
  );
}

describe('engine call deadlines (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);
  after(removeTestResources);

  /** The calls under test get a short budget; the set-up around them the usual one (a start takes longer than 300 ms on a busy machine). */
  const engine = createDockerEngine(docker, { timeoutMs: BUDGET_MS });
  const setup = createDockerEngine(docker);
  const tag = newInstance('ddl');

  it('a copy that keeps flowing is not cut off, however long it takes; one that stalls fails as a timeout', async function () {
    const id = await setup.containers.create(spec(`${tag}-cp`, 'true'));
    const tar = await tarOf('big.bin', 4 * 1024 * 1024);
    const t0 = Date.now();
    await engine.containers.putArchive(id, '/', trickle(tar, 12, 300));
    expect(Date.now() - t0, 'the copy took longer than the budget').to.be.greaterThan(3 * BUDGET_MS);
    let copied = 0;
    for await (const c of (await docker.getContainer(id).getArchive({ path: '/big.bin' })) as unknown as Readable) copied += (c as Buffer).length;
    expect(copied, 'the whole file is in the container').to.be.greaterThan(4 * 1024 * 1024);
    const stalled = await engine.containers.putArchive(id, '/', trickle(tar, 4, 10, 2.5 * BUDGET_MS)).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(classify(stalled)).to.equal('timeout');
    expect((stalled as Error).message).to.match(/did not answer containers\.putArchive within 1 s \(--engine-timeout\)/);
    await setup.containers.remove(id);
  });

  it('a stop waits its grace period on top of the budget', async function () {
    // a grace of twice the budget: the stop takes longer than the budget alone, and the engine
    // keeps a whole budget (2 s) beyond the grace to end the container on a loaded machine
    const stopper = createDockerEngine(docker, { timeoutMs: 2 * BUDGET_MS });
    const id = await setup.containers.create(spec(`${tag}-stop`, "trap '' TERM; while true; do sleep 0.1; done"));
    await setup.containers.start(id);
    const t0 = Date.now();
    await stopper.containers.stop(id, 4);
    expect(Date.now() - t0).to.be.greaterThan(3_500);
    expect((await setup.containers.inspect(id)).runState.running).to.equal(false);
    await setup.containers.remove(id);
  });

  it('a quiet event stream and a quiet log follow are not cut: the budget ends when the engine answers', async function () {
    const filter = [`${TEST_LABEL}=${TEST_RUN}`, `dev.berth.ddl=${tag}`];
    const ac = new AbortController();
    const events = await engine.events.stream(filter, { signal: ac.signal });
    const id = await setup.containers.create({ ...spec(`${tag}-quiet`, 'sleep 2; echo late'), labels: { [TEST_LABEL]: TEST_RUN } });
    await setup.containers.start(id);
    const log = await engine.containers.logs(id, { follow: true });
    let text = '';
    for await (const c of log) text += String(c);
    expect(text).to.equal('late\n');
    // the stream has been quiet for longer than the budget: an event still comes through
    const first = (async () => {
      for await (const ev of events) return [ev.type, ev.action];
      return undefined;
    })();
    await new Promise((r) => setTimeout(r, 1.5 * BUDGET_MS));
    const late = await setup.containers.create({ ...spec(`${tag}-late`, 'true'), labels: { [TEST_LABEL]: TEST_RUN, 'dev.berth.ddl': tag } });
    expect(await first).to.deep.equal(['container', 'create']);
    ac.abort();
    await setup.containers.remove(late);
    await setup.containers.remove(id);
  });

  it('an engine that goes away in the middle of logs -f: the stream ends with the engine-down error', async function () {
    const proxy = await SickEngine.start({ proxyTo: '/var/run/docker.sock' });
    try {
      const id = await setup.containers.create(spec(`${tag}-talk`, 'while true; do echo tick; sleep 0.2; done'));
      await setup.containers.start(id);
      const e = createDockerEngine(new (docker.constructor as typeof import('dockerode'))({ socketPath: proxy.socket }), { timeoutMs: BUDGET_MS });
      const log = await e.containers.logs(id, { follow: true });
      const err = await (async () => {
        try {
          for await (const c of log) if (String(c).includes('tick')) proxy.dropAll();
          return undefined;
        } catch (x) {
          return x;
        }
      })();
      expect(classify(err), String(err)).to.equal('unavailable');
      expect((err as Error).message).to.match(new RegExp(`^the Docker engine at unix://${proxy.socket.replace(/[/.]/g, '\\$&')} cannot be reached: `));
      await setup.containers.remove(id);
    } finally {
      await proxy.close();
    }
  });

  it('abandon(): the calls in flight give up at once and their connections close; later calls are refused', async function () {
    const sick = await SickEngine.start('silent');
    try {
      // a client with an API version of its own (no negotiation first): each call is a connection of its own
      const e = createDockerEngine(new (docker.constructor as typeof import('dockerode'))({ socketPath: sick.socket, version: 'v1.41' }), {
        timeoutMs: 60_000,
      });
      const calls = [e.containers.list([]), e.networks.inspect('x'), e.ping()].map((p) =>
        p.then(
          () => undefined,
          (err: unknown) => err,
        ),
      );
      const t0 = Date.now();
      while (sick.openConnections < 3 && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 20));
      expect(sick.openConnections).to.equal(3);
      const t1 = Date.now();
      e.abandon?.('the test is stopping');
      // at once: the silent engine never answers and the budget is 60 s, so only abandon() ends them
      const errs = await Promise.all(calls);
      for (const err of errs) expect(err).to.be.instanceOf(EngineCallAbandonedError);
      while (sick.openConnections > 0 && Date.now() - t1 < 2_000) await new Promise((r) => setTimeout(r, 20));
      expect(sick.openConnections).to.equal(0);
      expect(
        await e.volumes.list([]).then(
          () => undefined,
          (err: unknown) => err,
        ),
      ).to.be.instanceOf(EngineCallAbandonedError);
    } finally {
      await sick.close();
    }
  });

  it('abandon() while the API version is being negotiated: the calls waiting for it give up at once too', async function () {
    const sick = await SickEngine.start('silent');
    try {
      const e = createDockerEngine(new (docker.constructor as typeof import('dockerode'))({ socketPath: sick.socket }), { timeoutMs: 60_000 });
      const calls = [e.containers.list([]), e.networks.inspect('x'), e.ping()].map((p) =>
        p.then(
          () => undefined,
          (err: unknown) => err,
        ),
      );
      const t0 = Date.now();
      // one connection: the negotiation (GET /_ping), which the three calls wait for
      while (sick.openConnections < 1 && Date.now() - t0 < 5_000) await new Promise((r) => setTimeout(r, 20));
      expect(sick.openConnections).to.equal(1);
      const t1 = Date.now();
      e.abandon?.('the test is stopping');
      const errs = await Promise.all(calls);
      expect(Date.now() - t1).to.be.lessThan(200);
      for (const err of errs) expect(err).to.be.instanceOf(EngineCallAbandonedError);
    } finally {
      await sick.close();
    }
  });
});

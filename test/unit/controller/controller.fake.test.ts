/**
 * The controller against the fake engine and a fake clock: what it does with each way work on a
 * key ends (the retry switch), which the real-engine tests cannot reach on purpose — a create
 * that fails and is retried after its back-off and no sooner, back-offs that grow and are
 * forgotten after a success, a batch whose lists time out, an exit seen from the event stream
 * (by the inspect asked on its `die` while the lists lag, or by the lists when that inspect fails).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ALL, Controller, type ControllerWatcher } from '../../../src/controller/controller';
import type { Plan } from '../../../src/plan/types';
import { StatusStore } from '../../../src/status/store';
import type { AttemptStatus } from '../../../src/status/types';
import { FakeClock, settle } from '../../../src/util/clock';
import { silentLogger } from '../../../src/util/log';
import { FakeEngine } from '../../support/fake-engine';
import { fakeCfg } from './helpers';

const I = 'unit-ctl';
const IMAGE = 'berth/busybox:local';
const SPEC = (name: string) => `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: ${IMAGE}\n  command: [sh, -c, 'true']\n`;

describe('controller against the fake engine (retry switch)', function () {
  this.timeout(20_000);
  let dir: string;
  let clock: FakeClock;
  let fake: FakeEngine;
  let store: StatusStore;
  let ctl: Controller;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-ctl-'));
    await fs.mkdir(path.join(dir, 'specs'));
    clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    fake = new FakeEngine(clock);
    fake.addImage({ ref: IMAGE, labels: {} });
    store = new StatusStore(path.join(dir, 'state'), I);
  });
  afterEach(async function () {
    fake.releaseHangs();
    await ctl?.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function start(names: string[], extra: { finite?: true; only?: ReadonlySet<string>; watcher?: ControllerWatcher } = {}): Promise<void> {
    for (const n of names) await fs.writeFile(path.join(dir, 'specs', `${n}.yaml`), SPEC(n));
    ctl = new Controller({
      cfg: fakeCfg({ dir, instance: I, clock }),
      engine: fake,
      store,
      log: silentLogger(),
      workers: 2,
      resyncMs: 3_600_000,
      clock,
      ...extra,
    });
    await ctl.start();
  }

  /** Lets the controller work (promises, real I/O) without moving the fake clock. */
  async function until(what: string, cond: () => Promise<boolean> | boolean): Promise<void> {
    const deadline = Date.now() + 10_000;
    while (!(await cond())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
      await settle();
      await new Promise((r) => setTimeout(r, 5));
    }
  }

  const rec = (n: string): Promise<AttemptStatus | undefined> => store.get(n);
  const creates = () => fake.calls.filter((c) => c.op === 'containers.create').length;

  for (const follows of [true, false]) {
    it(`an attempt Blocked for a missing image is looked at again at an image event (a tag), with no resync${follows ? '' : ': not without the image events (the test can fail)'}`, async function () {
      // without: an image event stream that says nothing until it is closed
      if (!follows)
        (fake.events as { images: unknown }).images = (opts: { signal?: AbortSignal }) =>
          Promise.resolve(
            (async function* (): AsyncGenerator<never> {
              await new Promise<void>((done) => opts.signal?.addEventListener('abort', () => done(), { once: true }));
              yield* [];
            })(),
          );
      await fs.writeFile(
        path.join(dir, 'specs', 'late.yaml'),
        `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: late\nspec:\n  image: late/img:1\n  command: [sh, -c, 'true']\n`,
      );
      await start([]);
      await until('late is Blocked/ImageMissing and the controller idle', async () => (await rec('late'))?.reason === 'ImageMissing' && ctl.idle());
      // idle: nothing more is queued by the block itself
      for (let i = 0; i < 5; i++) await settle();
      expect(ctl.idle()).to.equal(true);
      expect(creates()).to.equal(0);
      fake.tagImage('late/img:1', IMAGE);
      if (follows) {
        await until('late runs', async () => (await rec('late'))?.phase === 'Running');
        expect((await rec('late'))?.image).to.deep.include({ ref: 'late/img:1', id: (await fake.images.inspect(IMAGE)).id });
      } else {
        for (let i = 0; i < 20; i++) await settle();
        await new Promise((r) => setTimeout(r, 50));
        expect(ctl.idle()).to.equal(true);
        expect((await rec('late'))?.phase).to.equal('Blocked');
      }
    });
  }

  it('a resync does not plan again an attempt finished and collected whose spec, record and engine state are as last planned (quiet.ts); a change to any plans it again', async function () {
    const plans: Plan[] = [];
    const ttl = (n: string, s: number) => SPEC(n).replace('  command:', `  ttlSecondsAfterFinished: ${s}\n  command:`);
    await fs.writeFile(path.join(dir, 'specs', 'q.yaml'), ttl('q', 0));
    await start(['r'], { watcher: { planned: (_l, p) => plans.push(p) } });
    await until('both run', async () => (await rec('q'))?.phase === 'Running' && (await rec('r'))?.phase === 'Running');
    fake.exit(`berth_${I.replace(/_/g, '__')}_q`, 0);
    await clock.advanceAsync(20);
    await until('q finished and collected, the controller idle', async () => (await rec('q'))?.collectedAt !== undefined && ctl.idle());
    const resync = async (): Promise<Plan> => {
      const from = plans.length;
      ctl.queue.add(ALL);
      await until('the resync planned', () => plans.length > from && ctl.idle());
      return plans[plans.length - 1] as Plan;
    };
    // the first resync plans q (its last plan was the collection's); from then on it is quiet
    expect((await resync()).unchanged.has('q')).to.equal(true);
    const quiet = await resync();
    expect(quiet.unchanged.has('q')).to.equal(false);
    expect(quiet.unchanged.get('r')).to.equal('Running');
    expect(quiet.actions.map((a) => a.attempt)).to.deep.equal([]);
    // its file edited (a field outside the hash: nothing to run): planned again, then quiet again
    await fs.writeFile(path.join(dir, 'specs', 'q.yaml'), ttl('q', 5));
    ctl.reloadSpecs();
    expect((await resync()).unchanged.get('q')).to.equal('Succeeded');
    expect((await resync()).unchanged.has('q')).to.equal(false);
    // its record changed: planned again
    await store.put({ ...((await rec('q')) as AttemptStatus), message: 'touched' });
    expect((await resync()).unchanged.get('q')).to.equal('Succeeded');
    expect(creates()).to.equal(2);
  });

  it('a finite run over some attempts only (berth regrade seeing its grades through) plans them alone: the others are not started', async function () {
    await start(['a', 'b', 'c'], { finite: true, only: new Set(['b']) });
    await until('b runs and the controller is idle', async () => (await rec('b'))?.phase === 'Running' && ctl.idle());
    // b's exit (an event of the scope) is seen; the others' records never made, nothing created for them
    const id = (await rec('b'))?.containerId as string;
    fake.exit(id, 0);
    await until('b finished', async () => (await rec('b'))?.phase === 'Succeeded' && ctl.idle());
    expect([await rec('a'), await rec('c')]).to.deep.equal([undefined, undefined]);
    expect(creates()).to.equal(1);
  });

  it('a create that fails is retried after its back-off and no sooner; the error is recorded, then cleared', async function () {
    fake.fail('containers.create', { status: 500, message: 'disk full' }, { times: 3 });
    await start(['a']);
    await until('the first failure is recorded', async () => (await rec('a'))?.lastError?.failures === 1);
    const gaps: number[] = [];
    for (let failures = 1; failures <= 3; failures++) {
      const r = (await rec('a')) as AttemptStatus;
      expect(r.lastError?.message).to.match(/disk full/);
      const gap = Date.parse(r.lastError?.nextRetryAt as string) - clock.now();
      gaps.push(gap);
      // just before the back-off ends nothing is tried again
      const before = creates();
      await clock.advanceAsync(gap - 1);
      await new Promise((r) => setTimeout(r, 30));
      expect(creates(), `failure ${failures}: retried before its back-off`).to.equal(before);
      await clock.advanceAsync(1);
      if (failures < 3) await until(`failure ${failures + 1} is recorded`, async () => (await rec('a'))?.lastError?.failures === failures + 1);
    }
    expect(gaps[1]).to.be.greaterThan(gaps[0] as number);
    expect(gaps[2]).to.be.greaterThan(gaps[1] as number);
    // the fourth create succeeds: the attempt runs, the error and its back-off are gone
    await until('the attempt runs', async () => (await rec('a'))?.phase === 'Running');
    await until('lastError is cleared', async () => (await rec('a'))?.lastError === undefined);
    expect(ctl.queue.numRequeues('a')).to.equal(0);
  });

  it('an exit on the event stream finishes the attempt; a list that times out fails the batch and it is tried again', async function () {
    await start(['b', 'c']);
    await until('both run', async () => (await rec('b'))?.phase === 'Running' && (await rec('c'))?.phase === 'Running');
    expect(ctl.synced).to.equal(true);

    fake.exit(`berth_${I.replace(/_/g, '__')}_b`, 0);
    await clock.advanceAsync(20); // the controller looks 20 ms after an event
    await until('b succeeded', async () => (await rec('b'))?.phase === 'Succeeded');

    // the next batch's lists time out: c backs off (rate-limited), nothing is lost (the die's
    // inspect fails too, so that the batch lists c instead of planning it from that inspect)
    fake.fail('containers.inspect', { status: 500, message: 'busy' }, { times: 1 });
    fake.fail('containers.list', { timeoutMs: 1 }, { times: 1 });
    const exitAt = clock.now();
    fake.exit(`berth_${I.replace(/_/g, '__')}_c`, 3);
    await clock.advanceAsync(20);
    await until('the failed batch backs c off', () => ctl.queue.numRequeues('c') >= 1);
    expect((await rec('c'))?.phase).to.equal('Running');
    await clock.advanceAsync(ctl.queue.backoffFor('c') + 1_000);
    await until('c failed with its exit code', async () => (await rec('c'))?.phase === 'Failed');
    expect((await rec('c'))?.exitCode).to.equal(3);
    expect(Date.parse((await rec('c'))?.finishedAt as string)).to.equal(exitAt);
  });

  it('an exit the lists do not show yet is finished from the inspect asked on its die, with no clock moved', async function () {
    await start(['d']);
    await until('d runs', async () => (await rec('d'))?.phase === 'Running');
    // a batch after d's start lists it (its own action's end calls for a list, as any change berth made)
    const listedFrom = fake.calls.length;
    ctl.queue.add('d');
    await until('d is listed after its start', () => fake.calls.slice(listedFrom).some((c) => c.op === 'containers.list'));
    await settle();
    fake.lagLists();
    const inspects = () => fake.calls.filter((c) => c.op === 'containers.inspect').length;
    const before = inspects();
    const from = fake.calls.length;
    fake.exit(`berth_${I.replace(/_/g, '__')}_d`, 4);
    await until('d failed with its exit code', async () => (await rec('d'))?.phase === 'Failed');
    expect((await rec('d'))?.exitCode).to.equal(4);
    // the die's inspect, then the finish's own; the batch between them listed nothing (the inspect told what changed)
    expect(inspects() - before).to.equal(2);
    const upToFinish = fake.calls.slice(
      from,
      fake.calls.findIndex((c, i) => i > from && c.op === 'containers.inspect' && fake.calls.slice(from, i).some((x) => x.op === 'containers.inspect')),
    );
    expect(upToFinish.map((c) => c.op)).to.deep.equal(['containers.inspect']);
    const listed = await fake.containers.list([]);
    expect(listed.find((c) => c.name.endsWith('_d'))?.state, 'the lists still lag').to.equal('running');
  });

  it('an exit whose inspect fails waits for the lists (looked at again 50 ms later, doubling), as before', async function () {
    await start(['e']);
    await until('e runs', async () => (await rec('e'))?.phase === 'Running');
    fake.lagLists();
    const name = `berth_${I.replace(/_/g, '__')}_e`;
    const inspects = () => fake.calls.filter((c) => c.op === 'containers.inspect').length;
    const before = inspects();
    fake.fail('containers.inspect', { status: 500, message: 'busy' });
    fake.exit(name, 0);
    await until('the die was inspected', () => inspects() > before);
    // the lists lag: the batches look again, and nothing finishes
    for (const ms of [50, 100, 200]) {
      await new Promise((r) => setTimeout(r, 30));
      expect((await rec('e'))?.phase).to.equal('Running');
      await clock.advanceAsync(ms);
    }
    fake.catchUpLists();
    await clock.advanceAsync(400);
    await until('e succeeded', async () => (await rec('e'))?.phase === 'Succeeded');
  });
});

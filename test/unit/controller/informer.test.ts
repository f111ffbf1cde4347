/**
 * The controller's snapshot cache (informer.ts) on the fake engine: which batches go to the
 * engine for what. An attempt queued only to be planned again (a slot freed, a time come) is
 * planned from the kept lists unless the engine told something of it, an action of its that
 * changed the engine ended, or an exit of its lags the lists; the engine's images are listed
 * again only after image news, its boot read again only after its event stream broke.
 */
import { expect } from 'chai';
import { SnapshotCache } from '../../../src/controller/informer';
import type { EngineEvent } from '../../../src/engine/types';
import { FakeClock } from '../../../src/util/clock';
import { FakeEngine } from '../../support/fake-engine';

const I = 'unit-inf';

describe('controller/informer: what a batch asks of the engine', () => {
  let clock: FakeClock;
  let fake: FakeEngine;
  let cache: SnapshotCache;
  let streamEpoch: number | undefined;
  let imagesEpoch: number | undefined;

  beforeEach(() => {
    clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    fake = new FakeEngine(clock);
    streamEpoch = 0;
    imagesEpoch = 0;
    cache = new SnapshotCache({
      engine: fake,
      instance: I,
      clock,
      finite: false,
      queue: () => undefined,
      exitSeen: () => undefined,
      streamEpoch: () => streamEpoch,
      imagesEpoch: () => imagesEpoch,
    });
  });
  afterEach(() => cache.close());

  /** The engine calls of one batch of `keys` (`all`: a full list), by name; the attempts listed. */
  async function batch(keys: string[], all = false): Promise<{ ops: string[]; listed: string[] }> {
    const from = fake.calls.length;
    await cache.observe(all, new Set(keys), Promise.resolve(new Map()));
    const calls = fake.calls.slice(from);
    const listed = calls
      .filter((c) => c.op === 'containers.list')
      .map((c) => ((c.args[0] as string[]).find((f) => f.startsWith('dev.berth.attempt=')) ?? '*').replace('dev.berth.attempt=', ''));
    return { ops: [...new Set(calls.map((c) => c.op))].sort(), listed: listed.sort() };
  }
  const ev = (key: string, action: string): EngineEvent => ({
    type: 'container',
    action,
    id: 'c1',
    attributes: { 'dev.berth.attempt': key },
    timeNano: BigInt(clock.now()) * 1_000_000n,
  });

  it('an attempt queued only to be planned again is planned from the kept lists; news of it, its action that changed the engine, or a lagging exit list it', async () => {
    expect((await batch([], true)).listed).to.deep.equal(['*']);
    for (const k of ['a', 'b', 'c', 'd']) cache.replan(k);
    expect(await batch(['a', 'b', 'c', 'd'])).to.deep.equal({ ops: [], listed: [] });
    // an event of b, an action of c that changed the engine: listed, not the others
    cache.event('b', ev('b', 'start'));
    cache.actionEnded('c');
    for (const k of ['a', 'b', 'c']) cache.replan(k);
    expect((await batch(['a', 'b', 'c'])).listed).to.deep.equal(['b', 'c']);
    // listed since: planned from the kept lists again
    for (const k of ['b', 'c']) cache.replan(k);
    expect((await batch(['b', 'c'])).listed).to.deep.equal([]);
    // a key queued for any other reason is listed, as before
    expect((await batch(['a'])).listed).to.deep.equal(['a']);
    // a mark is one batch's: the next time a is queued without one, it is listed
    cache.replan('a');
    await batch(['a']);
    expect((await batch(['a'])).listed).to.deep.equal(['a']);
    // a die whose lists lag (the exit is looked at again until they show it): listed while it lags
    cache.event('d', ev('d', 'destroy'));
    cache.replan('d');
    expect((await batch(['d'])).listed).to.deep.equal(['d']);
  });

  it('an action that only read the engine lists its attempt again only when the engine told something of it the kept lists do not show', async () => {
    await batch([], true);
    cache.actionEnded('f', false);
    expect((await batch(['x'])).listed).to.deep.equal(['x']);
    // a finish planned from the inspect of a die, the lists not asked since: listed after it, whatever the batch
    cache.event('f', ev('f', 'kill'));
    cache.actionEnded('f', false);
    expect((await batch(['x'])).listed).to.deep.equal(['f', 'x']);
    cache.actionEnded('f', false);
    expect((await batch(['x'])).listed).to.deep.equal(['x']);
  });

  it('more than TARGETED_MAX attempts queued only to be planned again list nothing (not the whole instance)', async () => {
    await batch([], true);
    const keys = Array.from({ length: 50 }, (_, i) => `w${i}`);
    for (const k of keys) cache.replan(k);
    cache.actionEnded('r');
    expect((await batch([...keys, 'r'])).listed).to.deep.equal(['r']);
  });

  it('the images are listed again only after image news (an event, a pull or build ended) or while their events are not followed; the boot only after the event stream broke', async () => {
    await batch([], true);
    expect((await batch(['a'])).ops).to.deep.equal(['containers.list', 'networks.list', 'volumes.list']);
    cache.imagesChanged();
    expect((await batch(['a'])).ops)
      .to.include('images.list')
      .and.not.include('boot');
    expect((await batch(['a'])).ops).to.not.include('images.list');
    // image news with nothing to list: the images alone
    cache.imagesChanged();
    cache.replan('a');
    expect((await batch(['a'])).ops).to.deep.equal(['images.list']);
    // the image events not followed (a break, not connected yet): listed every batch until they are, then kept
    imagesEpoch = undefined;
    expect((await batch(['a'])).ops).to.include('images.list');
    expect((await batch(['a'])).ops).to.include('images.list');
    imagesEpoch = 1;
    expect((await batch(['a'])).ops).to.include('images.list');
    expect((await batch(['a'])).ops).to.not.include('images.list');
    // the engine restarts: its event stream breaks; the boot is read again, and kept once connected
    const before = (await cache.observe(false, new Set(['a']), Promise.resolve(new Map()))).boot;
    fake.restart();
    streamEpoch = undefined;
    expect((await batch(['a'])).ops).to.include('boot');
    streamEpoch = 1;
    const after = (await cache.observe(false, new Set(['a']), Promise.resolve(new Map()))).boot;
    expect(after?.id).to.not.equal(before?.id);
    expect((await batch(['a'])).ops).to.not.include('boot');
    // a failed batch: the next lists everything, images and boot with it
    cache.invalidate();
    expect((await batch(['a'])).ops).to.include.members(['boot', 'images.list']);
  });
});

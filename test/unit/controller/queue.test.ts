/** WorkQueue: client-go workqueue semantics, driven entirely by a FakeClock (no real sleeping). */
import { expect } from 'chai';
import { WorkQueue, type QueueMetrics } from '../../../src/controller/queue';
import { FakeClock, settle } from '../../../src/util/clock';

/** A queue on a fake clock with a rate limit high enough not to matter unless a test sets one. */
function setup(options: ConstructorParameters<typeof WorkQueue>[0] = {}): { q: WorkQueue; clock: FakeClock } {
  const clock = new FakeClock(1_000_000);
  const q = new WorkQueue({ clock, rateLimit: { ratePerSecond: 1e9, burst: 1_000_000 }, ...options });
  return { q, clock };
}

/** Takes every key that is ready right now, in order. */
async function takeAll(q: WorkQueue): Promise<string[]> {
  const keys: string[] = [];
  while (q.len() > 0) keys.push((await q.get()) as string);
  return keys;
}

describe('controller/queue', () => {
  describe('basic semantics', () => {
    it('hands keys out first in, first out', async () => {
      const { q } = setup();
      for (const k of ['c', 'a', 'b']) q.add(k);
      expect(q.len()).to.equal(3);
      expect(await takeAll(q)).to.deep.equal(['c', 'a', 'b']);
      expect(q.len()).to.equal(0);
    });

    it('collapses duplicates of a waiting key, keeping its place', async () => {
      const { q } = setup();
      for (const k of ['a', 'b', 'a', 'c', 'b', 'a']) q.add(k);
      expect(q.len()).to.equal(3);
      expect(await takeAll(q)).to.deep.equal(['a', 'b', 'c']);
    });

    it('never hands a key being processed to a second worker', async () => {
      const { q } = setup();
      q.add('a');
      expect(await q.get()).to.equal('a');
      q.add('a');
      expect(q.len()).to.equal(0);
      let second: string | undefined;
      void q.get().then((k) => (second = k));
      await settle();
      expect(second).to.equal(undefined);
      q.done('a');
      await settle();
      expect(second).to.equal('a');
    });

    it('re-queues a key added while processing after done, once, at the back', async () => {
      const { q } = setup();
      q.add('a');
      q.add('b');
      expect(await q.get()).to.equal('a');
      q.add('a');
      q.add('a');
      q.add('c');
      expect(q.len()).to.equal(2);
      q.done('a');
      expect(await takeAll(q)).to.deep.equal(['b', 'c', 'a']);
    });

    it('does not re-queue a key that was not added again', async () => {
      const { q } = setup();
      q.add('a');
      await q.get();
      q.done('a');
      expect(q.len()).to.equal(0);
      q.done('a'); // unknown / repeated done is a no-op
      expect(q.len()).to.equal(0);
    });

    it('wakes waiting workers in the order they asked', async () => {
      const { q } = setup();
      const got: string[] = [];
      const w1 = q.get().then((k) => got.push(`w1:${k}`));
      const w2 = q.get().then((k) => got.push(`w2:${k}`));
      q.add('x');
      q.add('y');
      await Promise.all([w1, w2]);
      expect(got).to.deep.equal(['w1:x', 'w2:y']);
    });

    it('hands a key to at most one of many waiting workers', async () => {
      const { q } = setup();
      const waiting = Array.from({ length: 5 }, () => q.get());
      q.add('only');
      await settle();
      q.shutDown();
      const got = await Promise.all(waiting);
      expect(got.filter((k) => k === 'only')).to.have.length(1);
      expect(got.filter((k) => k === undefined)).to.have.length(4);
    });
  });

  describe('shutdown', () => {
    it('resolves waiting gets with undefined and ignores later adds', async () => {
      const { q } = setup();
      const waiting = q.get();
      q.shutDown();
      expect(await waiting).to.equal(undefined);
      expect(q.shuttingDown()).to.equal(true);
      q.add('a');
      q.addAfter('b', 10);
      q.addRateLimited('c');
      expect(q.len()).to.equal(0);
      expect(q.delayedLen()).to.equal(0);
      expect(await q.get()).to.equal(undefined);
    });

    it('still hands out keys queued before the shutdown (as client-go does), then undefined', async () => {
      const { q } = setup();
      q.add('a');
      q.add('b');
      q.shutDown();
      expect(await q.get()).to.equal('a');
      expect(await q.get()).to.equal('b');
      expect(await q.get()).to.equal(undefined);
    });

    it('drops delayed adds and their timer', () => {
      const { q, clock } = setup();
      q.addAfter('a', 1000);
      expect(clock.pendingTimers()).to.equal(1);
      q.shutDown();
      expect(clock.pendingTimers()).to.equal(0);
      clock.advance(5000);
      expect(q.len()).to.equal(0);
    });

    it('shutDownWithDrain waits until every held key is done', async () => {
      const { q } = setup();
      q.add('a');
      q.add('b');
      const a = (await q.get()) as string;
      const b = (await q.get()) as string;
      let drained = false;
      const drain = q.shutDownWithDrain().then(() => (drained = true));
      await settle();
      expect(drained).to.equal(false);
      q.done(a);
      await settle();
      expect(drained).to.equal(false);
      q.done(b);
      await drain;
      expect(drained).to.equal(true);
      expect(q.processingLen()).to.equal(0);
    });

    it('shutDownWithDrain returns at once when nothing is held', async () => {
      const { q } = setup();
      await q.shutDownWithDrain();
      expect(q.shuttingDown()).to.equal(true);
    });

    it('shutDown cuts a drain short', async () => {
      const { q } = setup();
      q.add('a');
      await q.get();
      const drain = q.shutDownWithDrain();
      q.shutDown();
      await drain;
      expect(q.processingLen()).to.equal(1);
    });
  });

  describe('addAfter', () => {
    it('adds the key when the delay has passed on the injected clock', () => {
      const { q, clock } = setup();
      q.addAfter('a', 500);
      expect(q.len()).to.equal(0);
      expect(q.delayedLen()).to.equal(1);
      clock.advance(499);
      expect(q.len()).to.equal(0);
      clock.advance(1);
      expect(q.len()).to.equal(1);
      expect(q.delayedLen()).to.equal(0);
      expect(clock.pendingTimers()).to.equal(0);
    });

    it('adds at once for a zero, negative or NaN delay', () => {
      const { q, clock } = setup();
      q.addAfter('a', 0);
      q.addAfter('b', -10);
      q.addAfter('c', NaN);
      expect(q.len()).to.equal(3);
      expect(clock.pendingTimers()).to.equal(0);
    });

    it('keeps the earlier time when a key is delayed twice', () => {
      const { q, clock } = setup();
      q.addAfter('a', 100);
      q.addAfter('a', 1000);
      clock.advance(100);
      expect(q.len()).to.equal(1);
      expect(q.delayedLen()).to.equal(0);
    });

    it('moves a key earlier when delayed again for sooner', () => {
      const { q, clock } = setup();
      q.addAfter('a', 1000);
      q.addAfter('a', 100);
      clock.advance(100);
      expect(q.len()).to.equal(1);
      expect(q.delayedLen()).to.equal(0);
      clock.advance(2000);
      expect(q.len()).to.equal(1);
    });

    it('adds delayed keys in due order, ties in request order, across one advance', async () => {
      const { q, clock } = setup();
      q.addAfter('late', 300);
      q.addAfter('early', 100);
      q.addAfter('tie1', 200);
      q.addAfter('tie2', 200);
      expect(clock.pendingTimers()).to.equal(1); // one timer, for the earliest key
      clock.advance(1000);
      expect(await takeAll(q)).to.deep.equal(['early', 'tie1', 'tie2', 'late']);
    });

    it('collapses a delayed add into a key that is already queued', async () => {
      const { q, clock } = setup();
      q.add('a');
      q.addAfter('a', 10);
      clock.advance(10);
      expect(await takeAll(q)).to.deep.equal(['a']);
    });

    it('wakes a waiting worker when the delay passes', async () => {
      const { q, clock } = setup();
      const got = q.get();
      q.addAfter('a', 50);
      clock.advance(50);
      expect(await got).to.equal('a');
    });
  });

  describe('rate limiting', () => {
    it('backs a key off exponentially from 100 ms, capped at 60 s', () => {
      const { q, clock } = setup();
      const delays: number[] = [];
      for (let i = 0; i < 12; i++) {
        delays.push(q.backoffFor('a'));
        q.addRateLimited('a');
        expect(q.numRequeues('a')).to.equal(i + 1);
        clock.advance(60_000);
        expect(q.len()).to.equal(1);
      }
      expect(delays).to.deep.equal([100, 200, 400, 800, 1600, 3200, 6400, 12800, 25600, 51200, 60000, 60000]);
    });

    it('delays each rate-limited add by the back-off, measured on the clock', () => {
      const { q, clock } = setup();
      q.addRateLimited('a'); // 100
      clock.advance(100);
      expect(q.len()).to.equal(1);
      void q.get();
      q.done('a');
      q.addRateLimited('a'); // 200
      clock.advance(199);
      expect(q.len()).to.equal(0);
      clock.advance(1);
      expect(q.len()).to.equal(1);
    });

    it('forget resets the back-off; keys back off independently', () => {
      const { q } = setup();
      for (let i = 0; i < 4; i++) q.addRateLimited('a');
      q.addRateLimited('b');
      expect(q.backoffFor('a')).to.equal(1600);
      expect(q.backoffFor('b')).to.equal(200);
      q.forget('a');
      expect(q.numRequeues('a')).to.equal(0);
      expect(q.backoffFor('a')).to.equal(100);
      expect(q.numRequeues('b')).to.equal(1);
    });

    it('backoffFor does not count as a retry', () => {
      const { q } = setup();
      for (let i = 0; i < 5; i++) expect(q.backoffFor('a')).to.equal(100);
      expect(q.numRequeues('a')).to.equal(0);
    });

    it('honours configured back-off', () => {
      const { q } = setup({ backoff: { baseMs: 5, factor: 3, maxMs: 100 } });
      const delays: number[] = [];
      for (let i = 0; i < 5; i++) {
        delays.push(q.backoffFor('a'));
        q.addRateLimited('a');
      }
      expect(delays).to.deep.equal([5, 15, 45, 100, 100]);
    });

    it('spreads a burst of new keys by the global token bucket (max of both limits)', async () => {
      const clock = new FakeClock(0);
      const q = new WorkQueue({ clock, rateLimit: { ratePerSecond: 10, burst: 3 } });
      for (let i = 0; i < 6; i++) q.addRateLimited(`k${i}`);
      // 3 tokens: k0..k2 wait only their back-off (100 ms); k3..k5 wait 100, 200, 300 ms for tokens,
      // but back-off (100 ms) is the larger for k3.
      clock.advance(100);
      expect(await takeAll(q)).to.deep.equal(['k0', 'k1', 'k2', 'k3']);
      clock.advance(99);
      expect(q.len()).to.equal(0);
      clock.advance(1);
      expect(await takeAll(q)).to.deep.equal(['k4']);
      clock.advance(100);
      expect(await takeAll(q)).to.deep.equal(['k5']);
      expect(q.backoffFor('new')).to.equal(100); // bucket refilled enough for one
    });

    it('reports the bucket wait in backoffFor when it exceeds the back-off', () => {
      const clock = new FakeClock(0);
      const q = new WorkQueue({ clock, rateLimit: { ratePerSecond: 1, burst: 1 } });
      q.addRateLimited('a');
      expect(q.backoffFor('b')).to.equal(1000);
      clock.advance(400);
      expect(q.backoffFor('b')).to.equal(600);
    });
  });

  describe('metrics hooks', () => {
    it('reports adds, depth, retries, queue latency and work duration on the clock', async () => {
      const events: string[] = [];
      const metrics: QueueMetrics = {
        add: (k) => events.push(`add ${k}`),
        depth: (n) => events.push(`depth ${n}`),
        retry: (k) => events.push(`retry ${k}`),
        queueLatency: (k, ms) => events.push(`latency ${k} ${ms}`),
        workDuration: (k, ms) => events.push(`work ${k} ${ms}`),
      };
      const { q, clock } = setup({ metrics });
      q.add('a');
      q.add('a'); // collapses: not counted
      clock.advance(30);
      await q.get();
      clock.advance(70);
      q.done('a');
      q.addAfter('b', 10);
      clock.advance(10);
      expect(events).to.deep.equal(['add a', 'depth 1', 'latency a 30', 'depth 0', 'work a 70', 'retry b', 'add b', 'depth 1']);
    });
  });

  describe('long runs', () => {
    it('keeps FIFO order over many keys (internal compaction)', async () => {
      const { q } = setup();
      const keys = Array.from({ length: 5000 }, (_, i) => `k${i}`);
      const out: string[] = [];
      for (const k of keys) {
        q.add(k);
        if (q.len() > 3) out.push((await q.get()) as string);
      }
      out.push(...(await takeAll(q)));
      expect(out).to.deep.equal(keys);
    });
  });
});

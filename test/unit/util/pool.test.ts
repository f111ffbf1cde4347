/** runBounded and Semaphore: the bound is measured, order kept, failures isolated. No real sleeping. */
import { expect } from 'chai';
import fc from 'fast-check';
import { mapChunked, Semaphore, runBounded } from '../../../src/util/pool';
import { settle } from '../../../src/util/clock';

/** Waits `turns` macrotask turns: lets other tasks interleave without any real delay. */
async function turns(n: number): Promise<void> {
  for (let i = 0; i < n; i++) await settle();
}

describe('util/pool', () => {
  describe('runBounded', () => {
    it('never has more than `limit` calls in flight, and reaches the limit (property)', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(fc.nat(4), { maxLength: 40 }), fc.integer({ min: 1, max: 8 }), async (work, limit) => {
          let inFlight = 0;
          let peak = 0;
          const results = await runBounded(work, limit, async (n, i) => {
            inFlight++;
            peak = Math.max(peak, inFlight);
            await turns(n);
            inFlight--;
            if (n === 3) throw new Error(`item ${i} failed`);
            return n * 10 + i;
          });
          expect(peak).to.be.at.most(limit);
          if (work.length > 0) expect(peak).to.equal(Math.min(limit, work.length));
          expect(results).to.have.length(work.length);
          results.forEach((r, i) => {
            if (work[i] === 3) expect(r).to.deep.equal({ status: 'rejected', reason: new Error(`item ${i} failed`) });
            else expect(r).to.deep.equal({ status: 'fulfilled', value: (work[i] as number) * 10 + i });
          });
        }),
        { numRuns: 100 },
      );
    });

    it('keeps input order even when later items finish first', async () => {
      const results = await runBounded([5, 1, 3, 0], 4, async (n) => {
        await turns(n);
        return n;
      });
      expect(results.map((r) => (r.status === 'fulfilled' ? r.value : undefined))).to.deep.equal([5, 1, 3, 0]);
    });

    it('starts items in order and runs every item although some fail, also synchronously', async () => {
      const started: number[] = [];
      const results = await runBounded([0, 1, 2, 3, 4], 2, (i) => {
        started.push(i);
        if (i === 1) throw new Error('sync throw');
        if (i === 2) return Promise.reject(new Error('async reject'));
        return Promise.resolve(i);
      });
      expect(started).to.deep.equal([0, 1, 2, 3, 4]);
      expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'rejected', 'fulfilled', 'fulfilled']);
    });

    it('handles no items, Infinity, and rejects a bad limit', async () => {
      expect(await runBounded([], 3, () => Promise.resolve(1))).to.deep.equal([]);
      const all = await runBounded([1, 2, 3], Infinity, (n) => Promise.resolve(n));
      expect(all).to.have.length(3);
      for (const bad of [0, -1, 1.5, NaN]) {
        await runBounded([1], bad, () => Promise.resolve(1)).then(
          () => expect.fail(`limit ${bad} should be refused`),
          (err: Error) => expect(err).to.be.instanceOf(RangeError),
        );
      }
    });
  });

  describe('Semaphore', () => {
    it('bounds concurrent run() calls, measured', async () => {
      const sem = new Semaphore(3);
      let inFlight = 0;
      let peak = 0;
      await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          sem.run(async () => {
            inFlight++;
            peak = Math.max(peak, inFlight);
            await turns(1 + (i % 4));
            inFlight--;
          }),
        ),
      );
      expect(peak).to.equal(3);
      expect(sem.available()).to.equal(3);
    });

    it('serves waiters first come, first served', async () => {
      const sem = new Semaphore(1);
      await sem.acquire();
      const order: number[] = [];
      const waiters = [1, 2, 3].map((n) => sem.acquire().then(() => order.push(n)));
      expect(sem.waiting()).to.equal(3);
      expect(sem.tryAcquire()).to.equal(false);
      for (let i = 0; i < 3; i++) {
        sem.release();
        await settle();
      }
      await Promise.all(waiters);
      expect(order).to.deep.equal([1, 2, 3]);
      sem.release();
      expect(sem.available()).to.equal(1);
    });

    it('releases when the function throws', async () => {
      const sem = new Semaphore(1);
      await sem.run(() => Promise.reject(new Error('boom'))).catch(() => undefined);
      expect(sem.available()).to.equal(1);
    });

    it('an aborted acquire leaves the queue and takes nothing', async () => {
      const sem = new Semaphore(1);
      await sem.acquire();
      const ac = new AbortController();
      const aborted = sem.acquire(ac.signal);
      const next = sem.acquire();
      ac.abort(new Error('cancelled'));
      await aborted.then(
        () => expect.fail('should reject'),
        (err: Error) => expect(err.message).to.equal('cancelled'),
      );
      expect(sem.waiting()).to.equal(1);
      sem.release();
      await next; // the permit went to the next waiter, not the aborted one
      expect(sem.available()).to.equal(0);
      await sem.acquire(ac.signal).then(
        () => expect.fail('should reject at once'),
        (err: Error) => expect(err.message).to.equal('cancelled'),
      );
    });

    it('refuses to release more than was acquired, and bad permit counts', () => {
      const sem = new Semaphore(2);
      expect(() => sem.release()).to.throw(/more often than acquire/);
      expect(() => new Semaphore(0)).to.throw(RangeError);
      expect(() => new Semaphore(Infinity)).to.throw(RangeError);
    });
  });

  describe('mapChunked', () => {
    it('maps in order and gives the event loop a turn between chunks, not within one', async () => {
      const seen: string[] = [];
      const out = await mapChunked([1, 2, 3, 4, 5], 2, (x, i) => {
        if (i === 0) setImmediate(() => seen.push('turn'));
        seen.push(`item ${x}`);
        return x * 10;
      });
      expect(out).to.deep.equal([10, 20, 30, 40, 50]);
      expect(seen).to.deep.equal(['item 1', 'item 2', 'turn', 'item 3', 'item 4', 'item 5']);
    });

    it('passes a throw on, and refuses a bad chunk size', async () => {
      let err: unknown;
      await mapChunked([1, 2], 1, (x) => {
        if (x === 2) throw new Error('boom');
        return x;
      }).catch((e: unknown) => (err = e));
      expect(String(err)).to.match(/boom/);
      let bad: unknown;
      await mapChunked([1], 0, (x) => x).catch((e: unknown) => (bad = e));
      expect(bad).to.be.instanceOf(RangeError);
    });
  });
});

/** Clock: the FakeClock that every timing test relies on, and the system clock's basics. */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { FakeClock, createSystemClock, settle, systemClock } from '../../../src/util/clock';

describe('util/clock', () => {
  describe('FakeClock', () => {
    it('stands still until advanced, then runs due timers in time order', () => {
      const clock = new FakeClock(1000);
      const seen: string[] = [];
      clock.setTimeout(() => seen.push(`b@${clock.now()}`), 20);
      clock.setTimeout(() => seen.push(`a@${clock.now()}`), 10);
      clock.setTimeout(() => seen.push(`c@${clock.now()}`), 30);
      expect(clock.now()).to.equal(1000);
      expect(clock.pendingTimers()).to.equal(3);
      expect(clock.nextTimerAt()).to.equal(1010);
      expect(clock.advance(25)).to.equal(2);
      expect(seen).to.deep.equal(['a@1010', 'b@1020']);
      expect(clock.now()).to.equal(1025);
      expect(clock.pendingTimers()).to.equal(1);
      clock.advance(5);
      expect(seen).to.deep.equal(['a@1010', 'b@1020', 'c@1030']);
      expect(clock.pendingTimers()).to.equal(0);
      expect(clock.nextTimerAt()).to.equal(undefined);
    });

    it('runs timers due at the same time in the order they were scheduled', () => {
      const clock = new FakeClock();
      const seen: number[] = [];
      for (const i of [1, 2, 3]) clock.setTimeout(() => seen.push(i), 5);
      clock.advance(5);
      expect(seen).to.deep.equal([1, 2, 3]);
    });

    it('runs timers scheduled by timers inside the advanced window', () => {
      const clock = new FakeClock();
      const seen: number[] = [];
      const tick = (): void => {
        seen.push(clock.now());
        clock.setTimeout(tick, 10);
      };
      clock.setTimeout(tick, 10);
      clock.advance(45);
      expect(seen).to.deep.equal([10, 20, 30, 40]);
      expect(clock.pendingTimers()).to.equal(1);
      clock.setTimeout(() => seen.push(-clock.now()), 0);
      clock.advance(0);
      expect(seen.at(-1)).to.equal(-45);
    });

    it('clears timers and ignores foreign or spent handles', () => {
      const clock = new FakeClock();
      let fired = 0;
      const h = clock.setTimeout(() => fired++, 5);
      clock.clearTimeout(h);
      clock.advance(10);
      expect(fired).to.equal(0);
      clock.clearTimeout(h);
      clock.clearTimeout(systemClock.setTimeout(() => undefined, 0));
      expect(clock.pendingTimers()).to.equal(0);
    });

    it('treats negative and NaN delays as 0 and never fires Infinity', () => {
      const clock = new FakeClock();
      let fired = 0;
      clock.setTimeout(() => fired++, -5);
      clock.setTimeout(() => fired++, NaN);
      clock.setTimeout(() => fired++, Infinity);
      clock.advance(0);
      expect(fired).to.equal(2);
      clock.advance(1e12);
      expect(fired).to.equal(2);
      expect(() => clock.advance(-1)).to.throw(RangeError);
    });

    it('resolves sleep on advance, not before', async () => {
      const clock = new FakeClock();
      let woke = false;
      const p = clock.sleep(100).then(() => (woke = true));
      clock.advance(99);
      await settle();
      expect(woke).to.equal(false);
      clock.advance(1);
      await p;
      expect(woke).to.equal(true);
    });

    it('rejects sleep when the signal aborts, and drops its timer', async () => {
      const clock = new FakeClock();
      const ac = new AbortController();
      const p = clock.sleep(100, ac.signal);
      expect(clock.pendingTimers()).to.equal(1);
      ac.abort(new Error('stop'));
      await p.then(
        () => expect.fail('should reject'),
        (err: Error) => expect(err.message).to.equal('stop'),
      );
      expect(clock.pendingTimers()).to.equal(0);
      const already = clock.sleep(1, ac.signal);
      await already.then(
        () => expect.fail('should reject'),
        (err: Error) => expect(err.message).to.equal('stop'),
      );
    });

    it('advanceAsync includes timers scheduled after an awaited sleep inside the window', async () => {
      const clock = new FakeClock();
      const seen: number[] = [];
      const loop = async (): Promise<void> => {
        for (let i = 0; i < 3; i++) {
          await clock.sleep(10);
          seen.push(clock.now());
        }
      };
      const done = loop();
      expect(await clock.advanceAsync(35)).to.equal(3);
      await done;
      expect(seen).to.deep.equal([10, 20, 30]);

      // plain advance runs only what is already scheduled; continuations see the end time
      const seen2: number[] = [];
      const loop2 = (async () => {
        for (let i = 0; i < 2; i++) {
          await clock.sleep(10);
          seen2.push(clock.now());
        }
      })();
      clock.advance(25);
      await settle();
      expect(seen2).to.deep.equal([60]);
      clock.advance(10);
      await loop2;
      expect(seen2).to.deep.equal([60, 70]);
    });
  });

  describe('system clock', () => {
    it('reports epoch milliseconds', () => {
      const before = Date.now();
      const now = systemClock.now();
      expect(now).to.be.within(before, Date.now());
    });

    it('fires, clears and sleeps with real timers (0 ms: no waiting)', async () => {
      const clock = createSystemClock();
      let fired = 0;
      const cleared = clock.setTimeout(() => fired++, 0);
      clock.clearTimeout(cleared);
      await new Promise<void>((resolve) => clock.setTimeout(resolve, 0));
      await clock.sleep(0);
      expect(fired).to.equal(0);
      const ac = new AbortController();
      const p = clock.sleep(60_000, ac.signal);
      ac.abort();
      await p.then(
        () => expect.fail('should reject'),
        (err: Error) => expect(err.name).to.equal('AbortError'),
      );
    });

    it('with unref, a pending timer does not keep the process alive', function () {
      this.timeout(20_000);
      const script = `require(${JSON.stringify(require.resolve('../../../src/util/clock'))}).createSystemClock({ unref: true }).setTimeout(() => console.log('fired'), 30000)`;
      // kept alive, it would run 30 s: spawnSync's guard (15 s) would kill it, status null
      const run = spawnSync(process.execPath, ['--require', 'tsx/cjs', '-e', script], { encoding: 'utf8', timeout: 15_000 });
      expect([run.status, run.signal]).to.deep.equal([0, null]);
      expect(run.stdout).to.equal('');
    });
  });
});

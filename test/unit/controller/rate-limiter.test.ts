/** Back-off and rate limiters on their own: growth, cap, overflow, token bucket refill, max-of. */
import { expect } from 'chai';
import fc from 'fast-check';
import { DEFAULT_BACKOFF, ItemExponentialBackoff, backoffDelay } from '../../../src/controller/backoff';
import { MaxOfRateLimiter, TokenBucketRateLimiter, defaultControllerRateLimiter } from '../../../src/controller/rate-limiter';
import { FakeClock, type Clock } from '../../../src/util/clock';

function clockMethods(c: FakeClock): Clock {
  return { now: () => c.now(), setTimeout: (fn, ms) => c.setTimeout(fn, ms), clearTimeout: (h) => c.clearTimeout(h), sleep: (ms, s) => c.sleep(ms, s) };
}

describe('controller/backoff and rate-limiter', () => {
  it('defaults to base 100 ms, factor 2, cap 60 s', () => {
    expect(DEFAULT_BACKOFF).to.deep.equal({ baseMs: 100, factor: 2, maxMs: 60_000 });
  });

  it('backoffDelay grows monotonically, never exceeds the cap, and survives overflow', () => {
    fc.assert(
      fc.property(fc.nat(5000), fc.integer({ min: 0, max: 10_000 }), fc.integer({ min: 1, max: 10 }), (n, base, factor) => {
        const opts = { baseMs: base, factor, maxMs: base + 60_000 };
        const d = backoffDelay(n, opts);
        expect(d).to.be.at.most(opts.maxMs);
        expect(Number.isFinite(d)).to.equal(true);
        expect(backoffDelay(n + 1, opts)).to.be.at.least(d);
      }),
    );
    expect(backoffDelay(100_000, DEFAULT_BACKOFF)).to.equal(60_000);
  });

  it('rejects nonsensical back-off options, naming the field', () => {
    expect(() => new ItemExponentialBackoff({ baseMs: -1 })).to.throw(RangeError, /baseMs/);
    expect(() => new ItemExponentialBackoff({ factor: 0.5 })).to.throw(RangeError, /factor/);
    expect(() => new ItemExponentialBackoff({ baseMs: 10, maxMs: 5 })).to.throw(RangeError, /maxMs/);
  });

  it('token bucket: burst passes at once, then one token per 1/rate, refill capped at burst', () => {
    const clock = new FakeClock(0);
    const tb = new TokenBucketRateLimiter({ ratePerSecond: 4, burst: 2 }, clock);
    expect([tb.when('x'), tb.when('y'), tb.when('z'), tb.when('w')]).to.deep.equal([0, 0, 250, 500]);
    clock.advance(10_000); // refills to the burst only
    expect([tb.when('a'), tb.when('b'), tb.when('c')]).to.deep.equal([0, 0, 250]);
    expect(tb.numRequeues('a')).to.equal(0);
  });

  it('token bucket: peek predicts when without consuming; time running backwards adds nothing', () => {
    const clock = new FakeClock(1000);
    const tb = new TokenBucketRateLimiter({ ratePerSecond: 1, burst: 1 }, clock);
    expect(tb.peek('a')).to.equal(0);
    expect(tb.peek('a')).to.equal(0);
    expect(tb.when('a')).to.equal(0);
    expect(tb.peek('a')).to.equal(1000);
    let t = 5000;
    const back = new FakeClock(0);
    const tb2 = new TokenBucketRateLimiter({ ratePerSecond: 1, burst: 1 }, { ...clockMethods(back), now: () => t });
    expect(tb2.when('a')).to.equal(0);
    t = 1000; // the wall clock jumps back 4 s: no tokens appear, none are lost
    expect(tb2.when('a')).to.equal(1000);
    t = 2000;
    expect(tb2.when('a')).to.equal(1000);
  });

  it('token bucket rejects a zero rate or a fractional burst', () => {
    const clock = new FakeClock();
    expect(() => new TokenBucketRateLimiter({ ratePerSecond: 0 }, clock)).to.throw(RangeError, /ratePerSecond/);
    expect(() => new TokenBucketRateLimiter({ burst: 1.5 }, clock)).to.throw(RangeError, /burst/);
  });

  it('max-of takes the longest delay and forgets in all limiters', () => {
    const clock = new FakeClock(0);
    const rl = new MaxOfRateLimiter(new ItemExponentialBackoff({ baseMs: 10 }), new TokenBucketRateLimiter({ ratePerSecond: 1, burst: 2 }, clock));
    expect(rl.when('a')).to.equal(10);
    expect(rl.when('a')).to.equal(20);
    expect(rl.when('b')).to.equal(1000);
    expect(rl.numRequeues('a')).to.equal(2);
    rl.forget('a');
    expect(rl.numRequeues('a')).to.equal(0);
    expect(() => new MaxOfRateLimiter()).to.throw(RangeError);
  });

  it('default controller limiter: per-key back-off under a 20/s, burst 100 bucket', () => {
    const clock = new FakeClock(0);
    const rl = defaultControllerRateLimiter(clock);
    const first = Array.from({ length: 100 }, (_, i) => rl.when(`k${i}`));
    expect(new Set(first)).to.deep.equal(new Set([100]));
    expect(rl.when('k100')).to.equal(100); // bucket: 50 ms < back-off
    expect(rl.when('k101')).to.equal(100);
    expect(rl.when('k102')).to.equal(150);
  });
});

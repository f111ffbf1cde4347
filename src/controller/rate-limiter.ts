/**
 * Rate limiters for the work queue, after client-go's workqueue: a `RateLimiter` answers "how long
 * until this key may be retried". `TokenBucketRateLimiter` bounds retries overall (golang.org/x/time/rate
 * semantics), `MaxOfRateLimiter` combines limiters by taking the longest delay, and
 * `defaultControllerRateLimiter` is per-key exponential back-off combined with a global bucket.
 */

import type { Clock } from '../util/clock';
import { ItemExponentialBackoff, type BackoffOptions, type RateLimiter } from './backoff';

export type { RateLimiter } from './backoff';

export interface TokenBucketOptions {
  /** Tokens added per second. */
  ratePerSecond: number;
  /** Bucket size: how many retries may go at once after a quiet period. */
  burst: number;
}

export const DEFAULT_TOKEN_BUCKET: Readonly<TokenBucketOptions> = { ratePerSecond: 20, burst: 100 };

/**
 * One bucket for all keys. Each `when` takes a token; when none is left the caller is given the
 * time until its token will have been refilled (tokens may go negative: reservations queue up).
 */
export class TokenBucketRateLimiter implements RateLimiter {
  private readonly ratePerMs: number;
  private readonly burst: number;
  private tokens: number;
  private last: number;

  constructor(
    options: Partial<TokenBucketOptions>,
    private readonly clock: Clock,
  ) {
    const { ratePerSecond, burst } = { ...DEFAULT_TOKEN_BUCKET, ...options };
    if (!(ratePerSecond > 0 && Number.isFinite(ratePerSecond))) {
      throw new RangeError(`token bucket ratePerSecond must be a finite number > 0, got ${ratePerSecond}`);
    }
    if (!(burst >= 1 && Number.isInteger(burst))) throw new RangeError(`token bucket burst must be an integer >= 1, got ${burst}`);
    this.ratePerMs = ratePerSecond / 1000;
    this.burst = burst;
    this.tokens = burst;
    this.last = clock.now();
  }

  when(_key: string): number {
    const now = this.clock.now();
    this.tokens = this.refilled(now) - 1;
    this.last = now;
    return this.tokens >= 0 ? 0 : -this.tokens / this.ratePerMs;
  }

  peek(_key: string): number {
    const after = this.refilled(this.clock.now()) - 1;
    return after >= 0 ? 0 : -after / this.ratePerMs;
  }

  forget(_key: string): void {}

  numRequeues(_key: string): number {
    return 0;
  }

  /** Tokens available at `now` (time that runs backwards adds none). */
  private refilled(now: number): number {
    const elapsed = Math.max(0, now - this.last);
    return Math.min(this.burst, this.tokens + elapsed * this.ratePerMs);
  }
}

/** The longest delay of several limiters; every limiter records every retry. */
export class MaxOfRateLimiter implements RateLimiter {
  private readonly limiters: readonly RateLimiter[];

  constructor(...limiters: RateLimiter[]) {
    if (limiters.length === 0) throw new RangeError('MaxOfRateLimiter needs at least one limiter');
    this.limiters = limiters;
  }

  when(key: string): number {
    return Math.max(...this.limiters.map((l) => l.when(key)));
  }

  peek(key: string): number {
    return Math.max(...this.limiters.map((l) => l.peek(key)));
  }

  forget(key: string): void {
    for (const l of this.limiters) l.forget(key);
  }

  numRequeues(key: string): number {
    return Math.max(...this.limiters.map((l) => l.numRequeues(key)));
  }
}

export interface ControllerRateLimiterOptions {
  backoff?: Partial<BackoffOptions>;
  bucket?: Partial<TokenBucketOptions>;
}

/** client-go's DefaultControllerRateLimiter: max(per-key exponential back-off, global token bucket). */
export function defaultControllerRateLimiter(clock: Clock, options: ControllerRateLimiterOptions = {}): RateLimiter {
  return new MaxOfRateLimiter(new ItemExponentialBackoff(options.backoff), new TokenBucketRateLimiter(options.bucket ?? {}, clock));
}

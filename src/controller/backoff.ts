/**
 * Per-key exponential back-off, like client-go's ItemExponentialFailureRateLimiter: the n-th
 * failure of a key (0-based) waits `baseMs * factor^n`, capped at `maxMs`; `forget` starts the
 * key over. Keys are independent, so one failing attempt never slows down the others.
 */

/** What the work queue asks of a limiter: how long until a key may be retried (rate-limiter.ts combines them). */
export interface RateLimiter {
  /** Delay before `key` may be retried; records one more retry of it. */
  when(key: string): number;
  /** The delay `when` would return right now, recording nothing (for `describe`). */
  peek(key: string): number;
  /** Stops tracking `key`: its next retry starts from scratch. */
  forget(key: string): void;
  /** How many times `key` was retried since it was last forgotten. */
  numRequeues(key: string): number;
}

export interface BackoffOptions {
  /** Delay after the first failure. */
  baseMs: number;
  /** Growth per further failure (>= 1). */
  factor: number;
  /** Upper bound of any delay. */
  maxMs: number;
}

export const DEFAULT_BACKOFF: Readonly<BackoffOptions> = { baseMs: 100, factor: 2, maxMs: 60_000 };

/** Checks options, throwing a RangeError that names the bad field. */
export function checkBackoff(options: BackoffOptions): BackoffOptions {
  const { baseMs, factor, maxMs } = options;
  if (!(baseMs >= 0 && Number.isFinite(baseMs))) throw new RangeError(`backoff baseMs must be a finite number >= 0, got ${baseMs}`);
  if (!(factor >= 1 && Number.isFinite(factor))) throw new RangeError(`backoff factor must be a finite number >= 1, got ${factor}`);
  if (!(maxMs >= baseMs)) throw new RangeError(`backoff maxMs must be >= baseMs (${baseMs}), got ${maxMs}`);
  return options;
}

/** The delay after `failures` earlier failures (0 → baseMs), capped at maxMs. Pure. */
export function backoffDelay(failures: number, options: BackoffOptions): number {
  const delay = options.baseMs * options.factor ** Math.max(0, failures);
  return Number.isFinite(delay) && delay < options.maxMs ? delay : options.maxMs;
}

export class ItemExponentialBackoff implements RateLimiter {
  private readonly options: BackoffOptions;
  private readonly failures = new Map<string, number>();

  constructor(options: Partial<BackoffOptions> = {}) {
    this.options = checkBackoff({ ...DEFAULT_BACKOFF, ...options });
  }

  when(key: string): number {
    const failures = this.failures.get(key) ?? 0;
    this.failures.set(key, failures + 1);
    return backoffDelay(failures, this.options);
  }

  peek(key: string): number {
    return backoffDelay(this.failures.get(key) ?? 0, this.options);
  }

  forget(key: string): void {
    this.failures.delete(key);
  }

  numRequeues(key: string): number {
    return this.failures.get(key) ?? 0;
  }
}

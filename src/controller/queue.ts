/**
 * The controller's work queue, with client-go workqueue semantics (util/workqueue: queue.go,
 * delaying_queue.go, rate_limiting_queue.go). Items are keys (attempt names), never events.
 *
 * - `dirty` holds keys that need processing, `processing` keys a worker holds. A key is never
 *   handed to two workers at once; adding a key that is being processed marks it dirty and it is
 *   queued again when the worker calls `done`. Adding a key that is already waiting is a no-op.
 *   Otherwise keys come out in the order they went in.
 * - `addAfter` delays an add through the injected Clock; a key already due earlier keeps the
 *   earlier time. `addRateLimited` delays by the rate limiter (per-key back-off, max'ed with a
 *   global token bucket); `forget` resets the key's back-off.
 * - `shutDown` ignores further adds and drops delayed ones; `get` keeps handing out what is
 *   queued, then resolves undefined. `shutDownWithDrain` also waits until workers hand back
 *   (`done`) every key they hold.
 */

import { systemClock, type Clock, type TimerHandle } from '../util/clock';
import type { BackoffOptions } from './backoff';
import { defaultControllerRateLimiter, type RateLimiter, type TokenBucketOptions } from './rate-limiter';

/** Optional metric callbacks (client-go's workqueue metrics); wire them to any metrics library. */
export interface QueueMetrics {
  /** A key was added (adds that collapse into an already-dirty key are not counted). */
  add?(key: string): void;
  /** The number of dirty keys (queued, or re-added while processing) changed. */
  depth?(depth: number): void;
  /** A delayed or rate-limited add was asked for (client-go counts these as retries). */
  retry?(key: string): void;
  /** How long a key waited, from its add until a worker got it. */
  queueLatency?(key: string, ms: number): void;
  /** How long a worker held a key, from `get` until `done`. */
  workDuration?(key: string, ms: number): void;
}

export interface WorkQueueOptions {
  clock?: Clock;
  /** Replaces the default limiter (`backoff` and `rateLimit` are then ignored). */
  rateLimiter?: RateLimiter;
  /** Per-key back-off; default base 100 ms, factor 2, cap 60 s. */
  backoff?: Partial<BackoffOptions>;
  /** Global retry rate; default 20/s, burst 100. */
  rateLimit?: Partial<TokenBucketOptions>;
  metrics?: QueueMetrics;
}

interface Delayed {
  readyAt: number;
  seq: number;
}

export class WorkQueue {
  private readonly clock: Clock;
  private readonly limiter: RateLimiter;
  private readonly metrics: QueueMetrics;

  /** FIFO of keys ready to hand out: `fifo[head..]`; every key in it is also in `dirty`. */
  private fifo: string[] = [];
  private head = 0;
  private readonly dirty = new Set<string>();
  private readonly processing = new Set<string>();
  /** Workers waiting in `get`; non-empty only while the FIFO is empty. */
  private readonly getters: ((key: string | undefined) => void)[] = [];

  private readonly delayed = new Map<string, Delayed>();
  private delaySeq = 0;
  private timer: TimerHandle | undefined;
  private timerAt = Infinity;

  private closing = false;
  private draining = false;
  private drainWaiters: (() => void)[] = [];

  private readonly addedAt = new Map<string, number>();
  private readonly startedAt = new Map<string, number>();

  constructor(options: WorkQueueOptions = {}) {
    this.clock = options.clock ?? systemClock;
    this.limiter = options.rateLimiter ?? defaultControllerRateLimiter(this.clock, { backoff: options.backoff, bucket: options.rateLimit });
    this.metrics = options.metrics ?? {};
  }

  /** Marks `key` as needing processing. */
  add(key: string): void {
    if (this.closing || this.dirty.has(key)) return;
    this.metrics.add?.(key);
    if (!this.addedAt.has(key)) this.addedAt.set(key, this.clock.now());
    this.dirty.add(key);
    this.metrics.depth?.(this.dirty.size);
    if (this.processing.has(key)) return;
    this.fifo.push(key);
    this.serveGetters();
  }

  /** Adds `key` once `ms` have passed; if it is already waiting for an earlier time, that stays. */
  addAfter(key: string, ms: number): void {
    if (this.closing) return;
    this.metrics.retry?.(key);
    if (!(ms > 0)) {
      this.add(key);
      return;
    }
    const readyAt = this.clock.now() + ms;
    const existing = this.delayed.get(key);
    if (existing !== undefined && existing.readyAt <= readyAt) return;
    this.delayed.set(key, { readyAt, seq: ++this.delaySeq });
    if (readyAt < this.timerAt) this.armTimer(readyAt);
  }

  /** Adds `key` after the rate limiter's delay for it (back-off grows with each call). */
  addRateLimited(key: string): void {
    if (this.closing) return;
    this.addAfter(key, this.limiter.when(key));
  }

  /** Resets `key`'s back-off, e.g. after it was reconciled successfully. */
  forget(key: string): void {
    this.limiter.forget(key);
  }

  /** How many rate-limited adds `key` had since it was last forgotten. */
  numRequeues(key: string): number {
    return this.limiter.numRequeues(key);
  }

  /** The delay the next `addRateLimited(key)` would get, without recording anything. */
  backoffFor(key: string): number {
    return this.limiter.peek(key);
  }

  /**
   * The next key to work on, waiting for one if need be; the caller must call `done(key)` when
   * finished. Resolves undefined once the queue is shut down and nothing is left to hand out.
   */
  get(): Promise<string | undefined> {
    if (this.head < this.fifo.length) return Promise.resolve(this.take());
    if (this.closing) return Promise.resolve(undefined);
    return new Promise((resolve) => this.getters.push(resolve));
  }

  /** Hands `key` back; if it was added again meanwhile, it is queued again. */
  done(key: string): void {
    if (!this.processing.delete(key)) return;
    const started = this.startedAt.get(key);
    this.startedAt.delete(key);
    if (started !== undefined) this.metrics.workDuration?.(key, this.clock.now() - started);
    if (this.dirty.has(key)) {
      this.fifo.push(key);
      this.serveGetters();
    }
    if (this.draining && this.processing.size === 0) this.finishDrain();
  }

  /** Keys ready to hand out (not counting keys being processed or waiting for a delay). */
  len(): number {
    return this.fifo.length - this.head;
  }

  /** Keys waiting for a delayed or rate-limited add. */
  delayedLen(): number {
    return this.delayed.size;
  }

  /** Keys workers hold right now. */
  processingLen(): number {
    return this.processing.size;
  }

  shuttingDown(): boolean {
    return this.closing;
  }

  /** Stops accepting keys, drops delayed adds, and wakes waiting workers (they get undefined). */
  shutDown(): void {
    this.draining = false;
    this.close();
    this.finishDrain();
  }

  /** Like `shutDown`, then waits until workers have called `done` for every key they hold. */
  shutDownWithDrain(): Promise<void> {
    this.draining = true;
    this.close();
    if (this.processing.size === 0) {
      this.finishDrain();
      return Promise.resolve();
    }
    return new Promise((resolve) => this.drainWaiters.push(resolve));
  }

  private close(): void {
    this.closing = true;
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.timerAt = Infinity;
    this.delayed.clear();
    // Getters wait only while the FIFO is empty, so there is nothing left for them.
    for (const resolve of this.getters.splice(0)) resolve(undefined);
  }

  private finishDrain(): void {
    this.draining = false;
    for (const resolve of this.drainWaiters.splice(0)) resolve();
  }

  /** Pops the FIFO's head and marks it as being processed. Only call when the FIFO is non-empty. */
  private take(): string {
    const key = this.fifo[this.head] as string;
    this.head++;
    if (this.head === this.fifo.length) {
      this.fifo = [];
      this.head = 0;
    } else if (this.head >= 1024 && this.head * 2 >= this.fifo.length) {
      this.fifo = this.fifo.slice(this.head);
      this.head = 0;
    }
    const now = this.clock.now();
    const added = this.addedAt.get(key);
    this.addedAt.delete(key);
    if (added !== undefined) this.metrics.queueLatency?.(key, now - added);
    this.startedAt.set(key, now);
    this.processing.add(key);
    this.dirty.delete(key);
    this.metrics.depth?.(this.dirty.size);
    return key;
  }

  private serveGetters(): void {
    while (this.getters.length > 0 && this.head < this.fifo.length) {
      const resolve = this.getters.shift() as (key: string | undefined) => void;
      resolve(this.take());
    }
  }

  private armTimer(at: number): void {
    if (this.timer !== undefined) this.clock.clearTimeout(this.timer);
    this.timerAt = at;
    this.timer = this.clock.setTimeout(() => this.onTimer(at), at - this.clock.now());
  }

  /** Adds every delayed key that is due, in due order, then re-arms for the next one. */
  private onTimer(armedFor: number): void {
    this.timer = undefined;
    this.timerAt = Infinity;
    // The timer firing proves `armedFor` has passed, even if the wall clock disagrees slightly.
    const now = Math.max(this.clock.now(), armedFor);
    const due: [string, Delayed][] = [];
    let next = Infinity;
    for (const entry of this.delayed) {
      if (entry[1].readyAt <= now) due.push(entry);
      else next = Math.min(next, entry[1].readyAt);
    }
    due.sort((a, b) => a[1].readyAt - b[1].readyAt || a[1].seq - b[1].seq);
    for (const [key] of due) this.delayed.delete(key);
    for (const [key] of due) this.add(key);
    if (next < Infinity && !this.closing) this.armTimer(next);
  }
}

/**
 * Time, injected (STYLE.md principle 7). Every timer in berth — back-off, rate limits, delayed
 * requeues, deadlines, resyncs — goes through a `Clock`, so retry logic is testable without
 * sleeping: production code uses `systemClock`, tests a `FakeClock` that moves only when told to.
 */

/** Opaque handle of a scheduled timer; pass it back to the clock that made it. */
export interface TimerHandle {
  readonly __clockTimer: true;
}

export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Runs `fn` once after `ms` milliseconds (negative or NaN count as 0, Infinity never fires). */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancels a timer; handles that fired already, were cleared, or are foreign are ignored. */
  clearTimeout(handle: TimerHandle): void;
  /** Resolves after `ms`; rejects with the signal's reason as soon as `signal` aborts. */
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

/** Normalizes a delay: NaN and negatives are 0, Infinity stays (the timer never fires). */
function delayOf(ms: number): number {
  return ms > 0 ? ms : 0;
}

function abortReason(signal: AbortSignal): unknown {
  return signal.reason ?? new DOMException('The operation was aborted', 'AbortError');
}

/** `Clock.sleep` on top of any clock's setTimeout/clearTimeout. */
function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(abortReason(signal));
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      clock.clearTimeout(handle);
      reject(abortReason(signal as AbortSignal));
    };
    const handle = clock.setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** Node clamps longer timeouts to 1 ms; longer delays are chained in steps of this size. */
const MAX_NODE_TIMEOUT_MS = 2 ** 31 - 1;

class SystemTimer implements TimerHandle {
  declare readonly __clockTimer: true;
  timer: NodeJS.Timeout | undefined;
}

export interface SystemClockOptions {
  /** Unref every timer so that a pending timer alone never keeps the process alive. */
  unref?: boolean;
}

/** A clock backed by `Date.now` and Node's timers. */
export function createSystemClock(options: SystemClockOptions = {}): Clock {
  const unref = options.unref ?? false;
  const clock: Clock = {
    now: () => Date.now(),
    setTimeout(fn, ms) {
      const handle = new SystemTimer();
      const due = Date.now() + delayOf(ms);
      const arm = (): void => {
        const left = Math.max(0, due - Date.now());
        handle.timer = left > MAX_NODE_TIMEOUT_MS ? setTimeout(arm, MAX_NODE_TIMEOUT_MS) : setTimeout(fn, left);
        if (unref) handle.timer.unref();
      };
      arm();
      return handle;
    },
    clearTimeout(handle) {
      if (handle instanceof SystemTimer && handle.timer !== undefined) clearTimeout(handle.timer);
    },
    sleep: (ms, signal) => sleepOn(clock, ms, signal),
  };
  return clock;
}

/** The real clock; its timers keep the process alive like plain `setTimeout`. */
export const systemClock: Clock = createSystemClock();

class FakeTimer implements TimerHandle {
  declare readonly __clockTimer: true;
  constructor(
    readonly seq: number,
    readonly due: number,
    readonly fn: () => void,
  ) {}
}

/**
 * A clock for tests: time stands still until `advance`. Timers run in due-time order (ties in the
 * order they were scheduled), each with `now()` equal to its due time, including timers that
 * other timers schedule inside the advanced window.
 */
export class FakeClock implements Clock {
  private current: number;
  private seq = 0;
  private readonly timers = new Set<FakeTimer>();

  constructor(startMs = 0) {
    this.current = startMs;
  }

  now(): number {
    return this.current;
  }

  setTimeout(fn: () => void, ms: number): TimerHandle {
    const timer = new FakeTimer(++this.seq, this.current + delayOf(ms), fn);
    this.timers.add(timer);
    return timer;
  }

  clearTimeout(handle: TimerHandle): void {
    if (handle instanceof FakeTimer) this.timers.delete(handle);
  }

  sleep(ms: number, signal?: AbortSignal): Promise<void> {
    return sleepOn(this, ms, signal);
  }

  /** How many timers are scheduled and not yet fired or cleared. */
  pendingTimers(): number {
    return this.timers.size;
  }

  /** When the next timer is due, or undefined when none is scheduled. */
  nextTimerAt(): number | undefined {
    return this.next(Infinity)?.due;
  }

  /**
   * Moves time forward by `ms`, running every timer that falls due on the way, synchronously.
   * Returns how many timers ran. Promise continuations (e.g. code after `await sleep()`) run only
   * after this returns; use `advanceAsync` when such code schedules timers inside the window.
   */
  advance(ms: number): number {
    const target = this.target(ms);
    let fired = 0;
    for (let timer = this.next(target); timer !== undefined; timer = this.next(target)) {
      this.fire(timer);
      fired++;
    }
    this.current = target;
    return fired;
  }

  /** Like `advance`, but lets pending promise continuations run before and after each timer. */
  async advanceAsync(ms: number): Promise<number> {
    const target = this.target(ms);
    let fired = 0;
    await settle();
    for (let timer = this.next(target); timer !== undefined; timer = this.next(target)) {
      this.fire(timer);
      fired++;
      await settle();
    }
    this.current = target;
    return fired;
  }

  private target(ms: number): number {
    if (!(ms >= 0)) throw new RangeError(`FakeClock.advance: ms must be >= 0, got ${ms}`);
    return this.current + ms;
  }

  private fire(timer: FakeTimer): void {
    this.timers.delete(timer);
    this.current = Math.max(this.current, timer.due);
    timer.fn();
  }

  /** The earliest timer due at or before `limit`. */
  private next(limit: number): FakeTimer | undefined {
    let best: FakeTimer | undefined;
    for (const t of this.timers) {
      if (t.due > limit) continue;
      if (best === undefined || t.due < best.due || (t.due === best.due && t.seq < best.seq)) best = t;
    }
    return best;
  }
}

/** Lets every queued promise continuation run (one macrotask turn; no real time passes). */
export function settle(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(resolve));
}

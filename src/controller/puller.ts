/**
 * The puller: runs the pulls a plan asks for (Plan.pulls; the pull gate decides, plan/pull-gate.ts)
 * and keeps what it knows of each image as observed state for the next plans: under way (bytes),
 * failed (the first and the latest failure, the image's one back-off clock), done (the id, the
 * digest, the runs it was asked for). One pull per image at a time, however many attempts ask;
 * at most `maxPulls` at once, the rest queued in the order their attempts will be admitted, the
 * pulls free slots wait for first: a prefetch (`PullRequest.ahead`) begins only while none of
 * those is under way or queued, so it never shares the bandwidth a free slot waits on; nor, for
 * at most DEFAULTS.prefetchYieldMs, while the controller starts runs (`starting`): a pull's
 * extraction beside a container's create and start slows them by a second or more on a small
 * machine, and a prefetch is there to save the slots time. A
 * credential is found per pull (registry/credentials.ts) and goes to the engine only; every text
 * of a failure is redacted of every credential value and bounded. What it knows is written to
 * `<state>/<instance>/pulls.json` (describe, `berth images`, the progress line read it), at most
 * every DEFAULTS.pullStateWriteMs while pulls run.
 */
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DEFAULTS } from '../constants';
import { boundedText, ImagePullError, type PullErrorKind } from '../engine/errors';
import type { Engine, RegistryAuth } from '../engine/types';
import { failureText, pullBackoffMs, type ImagePullState, type PullRequest } from '../plan/pull-gate';
import { CredentialError, type RegistryCredentials } from '../registry/credentials';
import { registryOf } from '../registry/reference';
import { registryRetryAfter } from '../registry/retry-after';
import { writeFileAtomic } from '../status/atomic-file';
import type { Clock, TimerHandle } from '../util/clock';
import type { Logger } from '../util/log';
import { Redactor } from '../util/redact';

export interface PullerOptions {
  engine: Engine;
  credentials: RegistryCredentials;
  maxPulls: number;
  clock: Clock;
  log: Logger;
  /** Where what it knows is written (none: not written). */
  stateFile?: string;
  /** The attempts that asked for an image whose pull ended (or failed): look at them again. */
  onSettled(attempts: string[]): void;
  /** How long the engine may say nothing during a pull (default: the engine's call budget). */
  idleMs?: number;
  /** Runs being started now (the controller's starts in flight): a prefetch waits for them (at most DEFAULTS.prefetchYieldMs). */
  starting?: () => number;
  /** Asks a rate-limited registry for its Retry-After (tests give their own). */
  retryAfter?: (ref: string, auth: RegistryAuth | undefined) => Promise<number | undefined>;
}

interface Want {
  ref: string;
  platform?: string;
  attempts: Set<string>;
  runs: Set<string>;
  /** The order it was asked in (a plan's requests come in admission order). */
  seq: number;
  /** A prefetch: no free slot waits for it (yet). */
  ahead: boolean;
  /** When it was queued (a prefetch waits for starts in flight at most DEFAULTS.prefetchYieldMs from then). */
  queuedAt: number;
}

/** The file's form of what the puller knows. */
export interface PullsFile {
  updatedAt: string;
  pulls: Record<string, ImagePullState>;
}

export class Puller {
  private readonly states = new Map<string, ImagePullState>();
  private readonly queue = new Map<string, Want>();
  private readonly active = new Map<string, { want: Want; ac: AbortController; done: Promise<void> }>();
  /** Back-off counters per image: counted failures (--pull-retries) and tries (the clock, rate limits included). */
  private readonly tries = new Map<string, number>();
  private seq = 0;
  private closed = false;
  private writeTimer: TimerHandle | undefined;
  private yieldTimer: TimerHandle | undefined;
  private writing: Promise<void> = Promise.resolve();
  private dirty = false;
  /** drained() callers waiting while only prefetches are queued: woken by each pump (a timer's or a start's end). */
  private pumpWaiters: (() => void)[] = [];

  constructor(private readonly o: PullerOptions) {}

  /** What the next plans see (PullInput.states). */
  view(): ReadonlyMap<string, ImagePullState> {
    return this.states;
  }

  /** No pull under way or queued. */
  idle(): boolean {
    return this.active.size === 0 && this.queue.size === 0;
  }

  /** Resolves once no pull is under way or queued. */
  async drained(): Promise<void> {
    while (!this.idle()) {
      if (this.active.size) await Promise.allSettled([...this.active.values()].map((a) => a.done));
      // only prefetches waiting for starts in flight (a controller's): the next pump (their timer's,
      // or the last start's end) may begin them
      else await new Promise<void>((r) => this.pumpWaiters.push(r));
    }
  }

  /**
   * The pulls a plan asks for. One already under way takes the new attempts and runs with it
   * (its end answers them); a queued one too; others are queued, and begun while fewer than
   * `maxPulls` run.
   */
  want(requests: readonly PullRequest[]): void {
    if (this.closed) return;
    for (const r of requests) {
      const under = this.active.get(r.ref)?.want ?? this.queue.get(r.ref);
      if (under) {
        for (const a of r.attempts) under.attempts.add(a);
        for (const k of r.runs) under.runs.add(k);
        if (!r.ahead) under.ahead = false; // a free slot waits for it now
        continue;
      }
      this.queue.set(r.ref, {
        ref: r.ref,
        ...(r.platform ? { platform: r.platform } : {}),
        attempts: new Set(r.attempts),
        runs: new Set(r.runs),
        seq: this.seq++,
        ahead: r.ahead === true,
        queuedAt: this.o.clock.now(),
      });
      this.update(r.ref, { queued: true });
    }
    this.pump();
  }

  private update(ref: string, patch: Partial<ImagePullState>, drop: (keyof ImagePullState)[] = []): void {
    const next: ImagePullState = { ...this.states.get(ref), ...patch };
    for (const k of drop) delete next[k];
    this.states.set(ref, next);
    this.dirty = true;
    this.scheduleWrite();
  }

  /** Begins what may begin now (a start in flight ended: a prefetch that waited for it may). */
  pump(): void {
    try {
      this.begin();
    } finally {
      const waiters = this.pumpWaiters;
      this.pumpWaiters = [];
      for (const w of waiters) w();
    }
  }

  private begin(): void {
    while (!this.closed && this.active.size < Math.max(1, this.o.maxPulls) && this.queue.size > 0) {
      const now = this.o.clock.now();
      const starting = (this.o.starting?.() ?? 0) > 0;
      const waits = (w: Want) => starting && now - w.queuedAt < DEFAULTS.prefetchYieldMs;
      const next = nextPull(
        [...this.queue.values()],
        [...this.active.values()].map((a) => a.want),
        waits,
      );
      if (!next) {
        this.wakeForPrefetch(now);
        return;
      }
      this.queue.delete(next.ref);
      const ac = new AbortController();
      const entry = { want: next, ac, done: Promise.resolve() };
      this.active.set(next.ref, entry);
      entry.done = this.pull(next, ac.signal).finally(() => {
        this.active.delete(next.ref);
        this.o.onSettled([...next.attempts]);
        this.pump();
      });
    }
  }

  /** A prefetch waiting for starts in flight begins at the latest when its wait is over. */
  private wakeForPrefetch(now: number): void {
    if (this.yieldTimer) return;
    // only those still within their wait: one past it waits for a pull of now, whose end pumps again
    const ends = [...this.queue.values()]
      .filter((w) => w.ahead)
      .map((w) => w.queuedAt + DEFAULTS.prefetchYieldMs)
      .filter((t) => t > now);
    if (!ends.length) return;
    const at = Math.min(...ends);
    this.yieldTimer = this.o.clock.setTimeout(
      () => {
        this.yieldTimer = undefined;
        this.pump();
      },
      Math.max(0, at - now) + 1,
    );
  }

  private async pull(w: Want, signal: AbortSignal): Promise<void> {
    const { ref } = w;
    const clock = this.o.clock;
    const began = clock.now();
    this.update(ref, { pulling: { since: began, done: 0, total: 0 } }, ['queued']);
    this.o.log.info(`pulling image ${ref}${w.platform ? ` (platform ${w.platform})` : ''} for ${[...w.attempts].sort().join(', ')}`);
    let auth: RegistryAuth | undefined;
    try {
      auth = await this.o.credentials.forImage(ref);
      const pull = this.o.engine.images.pull.bind(this.o.engine.images);
      let lastShown = 0;
      const res = await pull.call(this.o.engine.images, ref, {
        ...(auth ? { auth } : {}),
        ...(w.platform ? { platform: w.platform } : {}),
        signal,
        ...(this.o.idleMs !== undefined ? { idleMs: this.o.idleMs } : {}),
        onProgress: (p) => {
          const st = this.states.get(ref);
          if (st?.pulling) st.pulling = { ...st.pulling, done: p.done, total: p.total };
          const t = clock.now();
          if (t - lastShown >= DEFAULTS.pullStateWriteMs) {
            lastShown = t;
            this.dirty = true;
            this.scheduleWrite();
          }
        },
      });
      const total = this.states.get(ref)?.pulling?.total ?? 0;
      this.tries.delete(ref);
      this.update(ref, { pulled: { at: clock.now(), id: res.id, ...(res.digest ? { digest: res.digest } : {}), for: [...w.runs].sort() } }, [
        'pulling',
        'failed',
      ]);
      const secs = ((clock.now() - began) / 1000).toFixed(1);
      this.o.log.info(`pulled image ${ref} in ${secs} s${res.digest ? ` (${res.digest})` : ''}${total ? `, ${total} bytes` : ''}`);
    } catch (err) {
      if (signal.aborted || this.closed) {
        this.update(ref, {}, ['pulling', 'queued']);
        return;
      }
      await this.failed(w, err, auth);
    }
  }

  private async failed(w: Want, err: unknown, auth: RegistryAuth | undefined): Promise<void> {
    const { ref } = w;
    const clock = this.o.clock;
    const redactor = new Redactor(this.o.credentials.secretValues(), DEFAULTS.redactMinBytes);
    let kind: PullErrorKind = 'other';
    let text: string;
    if (err instanceof ImagePullError) {
      kind = err.kind;
      text = err.text;
    } else if (err instanceof CredentialError) {
      text = err.message;
    } else text = err instanceof Error ? err.message : String(err);
    text = boundedText(redactor.redactText(text));
    let retryAfterMs = err instanceof ImagePullError ? err.retryAfterMs : undefined;
    if (kind === 'rate-limited' && retryAfterMs === undefined) {
      retryAfterMs = await (this.o.retryAfter ?? registryRetryAfter)(ref, auth).catch(() => undefined);
    }
    const prev = this.states.get(ref)?.failed;
    const tries = (this.tries.get(ref) ?? 0) + 1;
    this.tries.set(ref, tries);
    // a rate limit's waits do not count toward --pull-retries
    const failures = (prev?.failures ?? 0) + (kind === 'rate-limited' ? 0 : 1);
    const wait = pullBackoffMs(tries, retryAfterMs);
    const words = failureText(kind, ref, text, registryOf(ref));
    this.update(
      ref,
      {
        failed: {
          kind,
          first: prev?.first ?? words,
          latest: words,
          failures,
          retryAt: clock.now() + wait,
          ...(retryAfterMs !== undefined ? { retryAfter: true } : {}),
        },
      },
      ['pulling'],
    );
    this.o.log.warn(`pull of image ${ref} failed: ${words}; next try in ${Math.ceil(wait / 1000)} s`);
    // the attempts look again once the clock allows a try (the plan's requeue says so too)
    const names = [...w.attempts];
    clock.setTimeout(() => this.o.onSettled(names), wait + 1);
  }

  private scheduleWrite(): void {
    if (!this.o.stateFile || this.writeTimer) return;
    this.writeTimer = this.o.clock.setTimeout(() => {
      this.writeTimer = undefined;
      void this.flush();
    }, 50);
  }

  /** Writes what it knows now (atomically), if anything changed. */
  async flush(): Promise<void> {
    const file = this.o.stateFile;
    if (!file || !this.dirty) return this.writing;
    this.dirty = false;
    const body: PullsFile = {
      updatedAt: new Date(this.o.clock.now()).toISOString(),
      pulls: Object.fromEntries([...this.states].sort(([a], [b]) => (a < b ? -1 : 1))),
    };
    this.writing = this.writing.then(async () => {
      await mkdir(path.dirname(file), { recursive: true });
      await writeFileAtomic(file, `${JSON.stringify(body, null, 2)}\n`);
    });
    return this.writing.catch((err: unknown) => {
      this.o.log.warn(`cannot write ${file}: ${String(err)}`);
    });
  }

  /** Stops: pulls under way are cancelled (the engine stops them when their connection closes), queued ones dropped. */
  async close(): Promise<void> {
    this.closed = true;
    this.queue.clear();
    for (const w of this.pumpWaiters.splice(0)) w();
    if (this.yieldTimer) this.o.clock.clearTimeout(this.yieldTimer);
    this.yieldTimer = undefined;
    for (const a of this.active.values()) a.ac.abort(new Error('berth is stopping'));
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
    if (this.writeTimer) this.o.clock.clearTimeout(this.writeTimer);
    this.writeTimer = undefined;
    this.dirty = true;
    await this.flush();
  }
}

/**
 * Which queued pull begins next, if any: the pulls free slots wait for first, each kind in the
 * order asked; a prefetch (`ahead`) only while no pull a free slot waits for is under way or
 * queued, and not while `waits` says it waits (for runs being started).
 */
export function nextPull<W extends { seq: number; ahead: boolean }>(
  queued: readonly W[],
  active: readonly W[],
  waits: (w: W) => boolean = () => false,
): W | undefined {
  const next = [...queued].sort((a, b) => Number(a.ahead) - Number(b.ahead) || a.seq - b.seq)[0];
  if (!next) return undefined;
  if (next.ahead && (active.some((w) => !w.ahead) || waits(next))) return undefined;
  return next;
}

/** The pulls file of an instance. */
export function pullsFile(stateDir: string, instance: string): string {
  return path.join(path.resolve(stateDir), instance, 'pulls.json');
}

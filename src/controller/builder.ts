/**
 * The builder: runs the builds plans ask for (Plan.builds; the build gate decides,
 * plan/build-gate.ts) and keeps what it knows of each build hash as observed state for the next
 * plans: queued, under way (the step, or the other berth that builds it), failed (BuildFailed's
 * message), built (the image's id). One build per hash at a time, however many attempts and sets
 * ask; at most `--max-builds` at once, the rest queued in the order their attempts will be
 * admitted. A build's own steps (lock, image check, pack, engine, limits, records) are
 * build/run.ts's. When a build ends, the attempts that asked are looked at again (`onSettled`).
 */
import type { BuildOptions, Engine } from '../engine/types';
import type * as RunMod from '../build/run';
import type { BuildOutcome } from '../build/run';
import { readBuildRecord } from '../build/records';
import type { BuildRequest, ImageBuildState } from '../plan/build-gate';
import type { DiskThresholds } from '../plan/disk-pressure';
import type { Clock } from '../util/clock';
import type { Logger } from '../util/log';

export interface BuilderOptions {
  engine: Engine;
  stateDir: string;
  instance: string;
  /** `--max-builds`. */
  maxBuilds: number;
  /** `--build-timeout` (ms). */
  timeoutMs: number;
  clock: Clock;
  log: Logger;
  /** `--disk-pressure-free`: a build stops when the engine's data root falls below it. */
  pressure?: DiskThresholds;
  /** Where the engine keeps its data, when this host can read it. */
  dataRoot?: () => Promise<string | undefined>;
  /** The FROM images' registry credentials (the registries' rules, docs/CONTRACT.md "Images from registries"); none: anonymous. */
  registryConfig?: (refs: readonly string[]) => Promise<BuildOptions['registryConfig']>;
  /** The attempts that asked for a build that ended (or whose state changed): look at them again. */
  onSettled(attempts: string[]): void;
  /** How often another berth's build lock is looked at again (ms). */
  pollMs?: number;
}

interface Want {
  request: BuildRequest;
  attempts: Set<string>;
  seq: number;
}

export class Builder {
  private readonly states = new Map<string, ImageBuildState>();
  private readonly queue = new Map<string, Want>();
  private readonly active = new Map<string, { want: Want; done: Promise<void> }>();
  private readonly stopping = new AbortController();
  /** Build locks being released after their builds ended (the next build does not wait for them; drained and close do). */
  private readonly releases = new Set<Promise<void>>();
  private seq = 0;

  constructor(private readonly o: BuilderOptions) {}

  get maxBuilds(): number {
    return this.o.maxBuilds;
  }

  /** What the next plans see (BuildInput.states). */
  view(): ReadonlyMap<string, ImageBuildState> {
    return this.states;
  }

  /** The state of `hash` as the plans should see it: this builder's, else a failure recorded in the state folder (by any berth). */
  stateOf(hash: string): ImageBuildState | undefined {
    const own = this.states.get(hash);
    if (own) return own;
    const rec = readBuildRecord(this.o.stateDir, hash);
    return rec?.state === 'failed' ? { failed: { at: Date.parse(rec.at), message: rec.message ?? '' } } : undefined;
  }

  idle(): boolean {
    return this.active.size === 0 && this.queue.size === 0;
  }

  /** Resolves once no build is under way or queued, and their locks are released. */
  async drained(): Promise<void> {
    while (!this.idle()) await Promise.allSettled([...this.active.values()].map((a) => a.done));
    await Promise.allSettled([...this.releases]);
  }

  /**
   * The builds a plan asks for. One under way or queued takes the new attempts (its end answers
   * them); others are queued, and begun while fewer than --max-builds run.
   */
  want(requests: readonly BuildRequest[]): void {
    if (this.stopping.signal.aborted) return;
    for (const r of requests) {
      const under = this.active.get(r.hash)?.want ?? this.queue.get(r.hash);
      if (under) {
        for (const a of r.attempts) under.attempts.add(a);
        // a wider limit or a later rerun asked meanwhile applies to a build not yet begun
        if (!this.active.has(r.hash)) under.request = r;
        continue;
      }
      this.queue.set(r.hash, { request: r, attempts: new Set(r.attempts), seq: this.seq++ });
      this.states.set(r.hash, { queued: true });
    }
    this.pump();
  }

  private pump(): void {
    while (!this.stopping.signal.aborted && this.active.size < Math.max(1, this.o.maxBuilds) && this.queue.size > 0) {
      const next = [...this.queue.values()].sort((a, b) => a.seq - b.seq)[0] as Want;
      this.queue.delete(next.request.hash);
      const entry = { want: next, done: Promise.resolve() };
      this.active.set(next.request.hash, entry);
      entry.done = this.run(next).finally(() => {
        this.active.delete(next.request.hash);
        this.o.onSettled([...next.attempts]);
        this.pump();
      });
    }
  }

  private async run(w: Want): Promise<void> {
    const r = w.request;
    const { clock, log } = this.o;
    const since = clock.now();
    this.states.set(r.hash, { building: { since } });
    log.info(`building image ${r.tag} (build ${r.hash.slice(0, 12)}, context ${r.build.context}) for ${[...w.attempts].sort().join(', ')}`);
    let outcome: BuildOutcome;
    try {
      // loaded at the first build (tar-stream and the context's packing with it): a controller that builds nothing loads none of it
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { runBuild } = require('../build/run') as typeof RunMod;
      outcome = await runBuild({
        engine: this.o.engine,
        request: r,
        stateDir: this.o.stateDir,
        instance: this.o.instance,
        clock,
        timeoutMs: this.o.timeoutMs,
        ...(this.o.pressure ? { pressure: this.o.pressure } : {}),
        ...(this.o.dataRoot ? { dataRoot: this.o.dataRoot } : {}),
        ...(this.o.registryConfig ? { registryConfig: await this.o.registryConfig(r.build.from) } : {}),
        signal: this.stopping.signal,
        ...(this.o.pollMs !== undefined ? { pollMs: this.o.pollMs } : {}),
        releasing: (p) => {
          this.releases.add(p);
          void p.finally(() => this.releases.delete(p));
        },
        onProgress: (p) => {
          const was = this.states.get(r.hash)?.building;
          this.states.set(r.hash, { building: { since, ...(p.step ? { step: p.step } : {}), ...(p.elsewhere ? { elsewhere: p.elsewhere } : {}) } });
          // another berth builds it: the attempts' message says so (once)
          if (p.elsewhere && !was?.elsewhere) this.o.onSettled([...w.attempts]);
        },
      });
    } catch (err) {
      // the engine failed us (not the build): forgotten, asked again by the next plan
      this.states.delete(r.hash);
      log.warn(`build of ${r.tag} could not run: ${err instanceof Error ? err.message : String(err)}`);
      return;
    }
    const secs = ((clock.now() - since) / 1000).toFixed(1);
    switch (outcome.type) {
      case 'built':
        this.states.set(r.hash, { built: { at: outcome.at, id: outcome.id } });
        log.info(`built image ${r.tag} in ${secs} s (${outcome.id})`);
        break;
      case 'present':
        this.states.set(r.hash, { built: { at: clock.now(), id: outcome.id } });
        log.info(`image ${r.tag} is on the engine (built before, or by another berth): used as it is`);
        break;
      case 'failed':
        this.states.set(r.hash, { failed: { at: outcome.at, message: outcome.message } });
        log.warn(`build of image ${r.tag} failed: ${outcome.message}`);
        break;
      case 'stopped':
        this.states.delete(r.hash);
        break;
    }
  }

  /** Stops the builds under way (nothing recorded: the next berth builds them) and drops the queued ones. */
  async close(): Promise<void> {
    this.stopping.abort(new Error('berth is stopping'));
    this.queue.clear();
    await Promise.allSettled([...this.active.values()].map((a) => a.done));
    await Promise.allSettled([...this.releases]);
  }
}

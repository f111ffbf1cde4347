/**
 * The controller's disk meter: every `--disk-interval`, what each running attempt with a disk
 * limit holds (observe/disk.ts: its writable layer, its results folder, its volumes), kept in
 * memory for the planner (PlanInput.diskUsage), which decides the stop. An attempt measured over
 * its limit is queued at once; the others are planned with their last measure when they come up.
 *
 * Bounded: the attempts measured longest ago go first, and one interval walks at most
 * DEFAULTS.diskEntriesPerInterval entries over them all (those left go first next time). Each
 * container is inspected once, for the folders of its layer and volumes (the results folder is
 * the record's). The layer's folder: overlay2's, as inspect names it; the containerd image
 * store's (overlayfs snapshotter), from the container's root mount (observe/overlay-upper.ts). A
 * layer the meter cannot read (another driver, or no access) is counted by the engine (SizeRw),
 * which walks it itself.
 */
import { DEFAULTS, RUNNING_STATES } from '../constants';
import type { Engine } from '../engine/types';
import { countDisk, type DiskCount } from '../observe/disk-usage';
import { upperDirOfPid } from '../observe/overlay-upper';
import type { DiskUsage } from '../observe/types';
import { diskExceeded } from '../plan/disk';
import type { AttemptStatus } from '../status/types';
import type { Clock, TimerHandle } from '../util/clock';
import type { Logger } from '../util/log';

/** Where one container's writes land on the host. */
interface Places {
  /** The writable layer's folder, or null: berth cannot read it (the engine counts it). */
  layer: string | null;
  /** The volumes it mounts: their folders on the host, and where each is mounted. */
  volumes: { source: string; destination: string }[];
}

export interface DiskMeterOptions {
  engine: Engine;
  /** The status records (the controller's: it is their only writer). */
  records: () => Promise<ReadonlyMap<string, AttemptStatus>>;
  clock: Clock;
  intervalMs: number;
  log: Logger;
  /** An attempt measured over its limit: look at it now. */
  onOver: (name: string) => void;
  entriesPerInterval?: number;
  signal?: AbortSignal;
}

export class DiskMeter {
  private readonly usage = new Map<string, DiskUsage>();
  private readonly places = new Map<string, Places>();
  private timer: TimerHandle | undefined;
  private closed = false;

  constructor(private readonly o: DiskMeterOptions) {}

  /** The last measures, by attempt name. */
  current(): ReadonlyMap<string, DiskUsage> {
    return this.usage;
  }

  start(): void {
    this.schedule(0);
  }

  close(): void {
    this.closed = true;
    if (this.timer) this.o.clock.clearTimeout(this.timer);
  }

  private schedule(ms: number): void {
    if (this.closed) return;
    this.timer = this.o.clock.setTimeout(() => {
      void this.measure()
        .catch((err: unknown) => this.o.log.warn(`disk measure: ${String(err)}`))
        .finally(() => this.schedule(this.o.intervalMs));
    }, ms);
  }

  /** One interval: measure the running attempts with a limit, oldest measure first, within the budget. */
  async measure(): Promise<void> {
    const records = await this.o.records();
    const targets = [...records.values()].filter(
      (r) => r.phase === 'Running' && (r.disk || r.volumeSizes?.some((v) => v.enforcedBy === 'measured')) && r.containerId && r.resultsDir,
    );
    const live = new Set(targets.map((r) => r.name));
    for (const n of [...this.usage.keys()]) if (!live.has(n)) this.usage.delete(n);
    const ids = new Set(targets.map((r) => r.containerId));
    for (const id of [...this.places.keys()]) if (!ids.has(id)) this.places.delete(id);
    const measuredAt = (r: AttemptStatus) => (this.usage.get(r.name)?.containerId === r.containerId ? (this.usage.get(r.name)?.at ?? 0) : 0);
    targets.sort((a, b) => measuredAt(a) - measuredAt(b) || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
    let budget = this.o.entriesPerInterval ?? DEFAULTS.diskEntriesPerInterval;
    for (const r of targets) {
      if (budget <= 0 || this.closed) return;
      this.o.signal?.throwIfAborted();
      const u = await this.measureOne(r, budget);
      if (!u) continue;
      const cut = u.entries >= budget;
      budget -= u.entries;
      // over its limit as the planner reads it (plan/disk.ts), which then stops it
      const over = diskExceeded(r, u, u.containerId) !== undefined;
      // a walk the budget cut short says only "at least": kept when that is already over, else this attempt goes first next time
      if (cut && !over) return;
      this.usage.set(r.name, u);
      if (over) this.o.onOver(r.name);
    }
  }

  private async placesOf(id: string): Promise<Places | undefined> {
    const known = this.places.get(id);
    if (known) return known;
    const d = await this.o.engine.containers.inspect(id).catch(() => undefined);
    if (!d || !RUNNING_STATES.has(d.state)) return undefined;
    // overlay2 names its folder; the containerd store's overlayfs snapshotter does not: its root mount does
    const layer =
      d.storage?.upperDir && d.storage.driver === 'overlay2'
        ? d.storage.upperDir
        : d.storage?.driver === 'overlayfs'
          ? ((await upperDirOfPid(d.runState.pid)) ?? null)
          : null;
    const p: Places = {
      layer,
      volumes: d.mounts.filter((m) => m.type === 'volume' && m.source).map((m) => ({ source: m.source, destination: m.destination })),
    };
    this.places.set(id, p);
    return p;
  }

  /** One attempt's measure; undefined: its container is not there to measure. */
  private async measureOne(r: AttemptStatus, budget: number): Promise<DiskUsage | undefined> {
    const id = r.containerId as string;
    // each sized volume berth measures (the engine enforces the others), by where it is mounted
    const sized = new Map((r.volumeSizes ?? []).filter((v) => v.enforcedBy === 'measured').map((v) => [v.mountPath, v]));
    // a backend whose runs are elsewhere (a swarm node) counts there: no host path is walked
    const elsewhere = this.o.engine.remote?.diskUse.bind(this.o.engine.remote);
    if (elsewhere) {
      const u = await elsewhere(id);
      if (!u) return undefined;
      const parts: DiskUsage['parts'] = r.disk ? { ...(r.disk.enforcedBy !== 'engine' ? { layer: u.layer } : {}), results: u.results, volumes: u.volumes } : {};
      const bytes = (parts.layer ?? 0) + (parts.results ?? 0) + (parts.volumes ?? 0);
      const own = sized.size ? { sized: Object.fromEntries([...sized].map(([at, v]) => [v.name, u.byMountPath[at] ?? 0])) } : {};
      return { containerId: id, at: this.o.clock.now(), bytes, parts, entries: 0, complete: true, countedBy: u.countedBy, ...own };
    }
    const p = await this.placesOf(id);
    if (!p) return undefined;
    const limit = r.disk?.bytes ?? 0;
    const total: DiskCount = { bytes: 0, entries: 0, complete: true, over: false };
    /** Counts `roots` within the walk's budget, stopping above `stop` bytes; undefined: not counted (something is over already, or the budget ran out). */
    const count = async (roots: string[], stop: number): Promise<DiskCount | undefined> => {
      if (total.over || !total.complete) return undefined;
      const c = await countDisk(roots, { stopAboveBytes: stop, maxEntries: Math.max(1, budget - total.entries) }, this.o.signal);
      total.entries += c.entries;
      total.complete &&= c.complete;
      return c;
    };
    const part = async (roots: string[]): Promise<number | undefined> => {
      const c = await count(roots, limit - total.bytes);
      if (!c) return undefined;
      total.bytes += c.bytes;
      total.over ||= c.over;
      return c.bytes;
    };
    let layer: number | undefined;
    let results: number | undefined;
    if (r.disk && r.disk.enforcedBy !== 'engine') {
      if (p.layer !== null) layer = await part([p.layer]);
      else if (this.o.engine.local) {
        layer = await this.o.engine.local.writableBytes(id).catch(() => 0);
        total.bytes += layer;
        total.over = total.bytes > limit;
      }
    }
    if (r.disk) results = await part([r.resultsDir as string]);
    // the volumes one by one: each toward the limit, and a sized one against its own size too
    let volumes: number | undefined;
    const own: Record<string, number> = {};
    for (const v of p.volumes) {
      const size = sized.get(v.destination);
      if (!r.disk && !size) continue;
      const c = await count([v.source], Math.min(r.disk ? limit - total.bytes : Infinity, size ? size.bytes : Infinity));
      if (!c) break;
      if (size) own[size.name] = c.bytes;
      if (r.disk) {
        volumes = (volumes ?? 0) + c.bytes;
        total.bytes += c.bytes;
      }
      total.over ||= (r.disk !== undefined && total.bytes > limit) || (size !== undefined && c.bytes > size.bytes);
    }
    return {
      containerId: id,
      at: this.o.clock.now(),
      bytes: total.bytes,
      parts: { ...(layer !== undefined ? { layer } : {}), ...(results !== undefined ? { results } : {}), ...(volumes !== undefined ? { volumes } : {}) },
      entries: total.entries,
      complete: total.complete || total.over,
      ...(sized.size ? { sized: own } : {}),
    };
  }
}

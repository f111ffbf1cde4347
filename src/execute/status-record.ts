/**
 * The attempts' status records as the executor writes them: the current record (or a fresh
 * one), an update, and the start of a new run (the earlier run moves to history).
 */
import type { DesiredAttempt } from '../desired/types';
import type { AttemptAction, Operation, RunCounters } from '../plan/types';
import type { StatusStore } from '../status/store';
import type { AttemptStatus } from '../status/types';
import { iso } from '../util/iso';

export class StatusRecords {
  constructor(
    private readonly store: StatusStore,
    private readonly instance: string,
    readonly now: () => number,
  ) {}

  /** The status record of the action's attempt, or a fresh one. */
  async current(a: AttemptAction): Promise<AttemptStatus> {
    const rec = await this.store.get(a.attempt);
    if (rec) return rec;
    const d = a.desired;
    return {
      name: a.attempt,
      instance: this.instance,
      phase: 'Pending',
      specHash: d?.hash ?? '',
      ...(d ? { source: d.loaded.relFile } : {}),
      ...(d?.loaded.revision ? { revision: d.loaded.revision } : {}),
      run: d?.run ?? 0,
      retriesUsed: 0,
      createdAt: iso(this.now()),
      history: [],
      updatedAt: iso(this.now()),
    };
  }

  async update(a: AttemptAction, f: (r: AttemptStatus) => AttemptStatus): Promise<AttemptStatus> {
    const next = f(await this.current(a));
    await this.store.put(next);
    return next;
  }

  put(rec: AttemptStatus): Promise<void> {
    return this.store.put(rec);
  }

  remove(name: string): Promise<void> {
    return this.store.remove(name);
  }

  /** Every record of the instance (for the ownership rule's recorded ids). */
  loadAll(): ReturnType<StatusStore['loadAll']> {
    return this.store.loadAll();
  }
}

/**
 * Run `d` begins with the planner's `counters` (planner.ts `runCounters`) at `at` (when it became
 * eligible: its queue wait counts from then): the earlier run moves to history. A record that
 * already holds this run is left as it is.
 */
export function beginRun(r: AttemptStatus, d: DesiredAttempt, counters: RunCounters, at: string): AttemptStatus {
  if (r.run === d.run && r.specHash === d.hash) return r;
  const history = [...r.history];
  if (r.run > 0 && (r.startedAt || r.finishedAt)) {
    history.push({
      run: r.run,
      specHash: r.specHash,
      phase: r.phase,
      ...(r.reason ? { reason: r.reason } : {}),
      ...(r.message ? { message: r.message } : {}),
      ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
      ...(r.startedAt ? { startedAt: r.startedAt } : {}),
      ...(r.finishedAt ? { finishedAt: r.finishedAt } : {}),
      ...(r.resultsDir ? { resultsDir: r.resultsDir } : {}),
      ...(r.image ? { image: r.image } : {}),
      ...(r.touched ? { touched: r.touched } : {}),
    });
  }
  return {
    name: r.name,
    instance: r.instance,
    phase: 'Pending',
    specHash: d.hash,
    source: d.loaded.relFile,
    ...(d.loaded.revision ? { revision: d.loaded.revision } : {}),
    run: d.run,
    ...counters,
    createdAt: r.createdAt,
    eligibleAt: at,
    history,
    // every run's grades stay (each names its run)
    ...(r.grades ? { grades: r.grades } : {}),
    updatedAt: r.updatedAt,
  };
}

/** A `record` operation: a status change with no engine call (one with counters begins the action's run). */
export async function recordPatch(records: StatusRecords, a: AttemptAction, op: Extract<Operation, { type: 'record' }>): Promise<void> {
  await records.update(a, (r) => {
    const d = a.desired;
    const base = d && op.counters && r.run !== d.run ? beginRun(r, d, op.counters, iso(records.now())) : r;
    return { ...base, ...op.patch };
  });
}

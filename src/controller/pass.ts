/**
 * One reconcile pass, level-triggered: read the specs and the status records, take one
 * snapshot of the engine, plan with no I/O, execute the plan. A straight line, as in
 * docker compose's create(): observe → plan → execute.
 */
import { Executor, type ActionResult } from '../execute/executor';
import type { Engine } from '../engine/types';
import { observe } from '../observe/snapshot';
import type { Snapshot } from '../observe/types';
import { plan as makePlan } from '../plan/planner';
import type { Plan } from '../plan/types';
import { loadSpecs } from '../spec/loader';
import type { PlanInput } from '../plan/input';
import type { LoadResult } from '../spec/types';
import type { AttemptStatus } from '../status/types';
import { StatusStore } from '../status/store';
import type { Logger } from '../util/log';

export interface PassConfig {
  specsDir: string;
  stateDir: string;
  resultsRoot: string;
  instance: string;
  maxRunning: number;
  concurrency: number;
  attestIntervalMs: number;
  /** First back-off between a failed run and its retry. */
  retryBaseMs?: number;
  /** Re-runs after infrastructure deaths (`--infra-retries`). */
  infraRetries?: number;
  /** `--egress-proxy-image`, `--egress-network`. */
  egress?: { proxyImage?: string; network?: string };
  env: NodeJS.ProcessEnv;
  log: Logger;
  now?: () => number;
}

export interface PassResult {
  load: LoadResult;
  snapshot: Snapshot;
  plan: Plan;
  results: ActionResult[];
}

/** Message of the first error of each protected (invalid or duplicated) name. */
export function invalidReasons(load: LoadResult): Map<string, string> {
  const out = new Map<string, string>();
  for (const name of load.protectedNames) out.set(name, 'the spec is invalid');
  for (const e of load.errors) {
    const m = e.path === 'metadata.name' && e.code === 'duplicate-name' ? /"([^"]+)"/.exec(e.message)?.[1] : undefined;
    if (m && load.protectedNames.has(m) && out.get(m) === 'the spec is invalid') out.set(m, `${e.file}:${e.line}:${e.col}: ${e.message}`);
  }
  return out;
}

export { resolveResultsRoot } from '../plan/results';

/** Container ids berth recorded creating: what makes a container from a berth-labeled image ours. */
export function knownContainerIds(statuses: ReadonlyMap<string, AttemptStatus>): Set<string> {
  return new Set([...statuses.values()].map((s) => s.containerId).filter((x): x is string => !!x));
}

/** The planner's input for one pass (or one controller batch, with `extra`). */
export function planInput(
  cfg: PassConfig,
  load: LoadResult,
  snapshot: Snapshot,
  statuses: ReadonlyMap<string, AttemptStatus>,
  now: number,
  extra: Pick<PlanInput, 'only' | 'reservedSlots'> = {},
): PlanInput {
  return {
    instance: cfg.instance,
    now,
    resultsRoot: cfg.resultsRoot,
    specs: load.specs,
    protectedNames: load.protectedNames,
    invalid: invalidReasons(load),
    unreadableFiles: load.unreadableFiles,
    snapshot,
    statuses,
    maxRunning: cfg.maxRunning,
    attestIntervalMs: cfg.attestIntervalMs,
    ...(cfg.retryBaseMs !== undefined ? { retryBaseMs: cfg.retryBaseMs } : {}),
    ...(cfg.infraRetries !== undefined ? { infraRetries: cfg.infraRetries } : {}),
    ...(cfg.egress ? { egress: cfg.egress } : {}),
    ...extra,
  };
}

/** Observe and plan, changing nothing. */
export async function planPass(cfg: PassConfig, engine: Engine, store: StatusStore): Promise<Omit<PassResult, 'results'>> {
  const now = cfg.now ?? Date.now;
  // The engine's lists go out first; specs and records load while the engine answers.
  const statusesP = store.loadAll();
  const snapshotP = observe(engine, cfg.instance, statusesP.then(knownContainerIds), now());
  const [load, statuses, snapshot] = await Promise.all([loadSpecs({ specsDir: cfg.specsDir, resultsRoot: cfg.resultsRoot }), statusesP, snapshotP]);
  const plan = makePlan(planInput(cfg, load, snapshot, statuses, now()));
  return { load, snapshot, plan };
}

export async function reconcilePass(cfg: PassConfig, engine: Engine, store: StatusStore): Promise<PassResult> {
  const planned = await planPass(cfg, engine, store);
  const executor = new Executor({
    engine,
    store,
    instance: cfg.instance,
    concurrency: cfg.concurrency,
    log: cfg.log,
    env: cfg.env,
    ...(cfg.now ? { now: cfg.now } : {}),
  });
  const results = await executor.run(planned.plan);
  return { ...planned, results };
}

/**
 * One reconcile pass, level-triggered: read the specs and the status records, take one
 * snapshot of the engine, plan with no I/O, execute the plan. A straight line, as in
 * docker compose's create(): observe → plan → execute.
 */
import type { ActionResult, Executor } from '../execute/executor';
import type * as ExecutorMod from '../execute/executor';
import type { HarvestLimits } from '../execute/harvest';
import type { Engine } from '../engine/types';
import { observe } from '../observe/snapshot';
import { recordedContainers, type RecordedContainers } from '../ownership';
import type { Snapshot } from '../observe/types';
import { plan as makePlan } from '../plan/planner';
import type { ActionKind, AttemptAction, Plan } from '../plan/types';
import { loadSpecs } from '../spec/loader';
import type { PlanInput } from '../plan/input';
import { DesiredStates } from '../plan/desired-for';
import type { LoadResult, SpecError } from '../spec/types';
import type { AttemptStatus, SpecIssue } from '../status/types';
import { runFloor } from '../plan/results';
import { StatusStore } from '../status/store';
import type { Logger } from '../util/log';
import { nextTurn, runBounded } from '../util/pool';

/**
 * The executor's modules (tar-stream, the harvest, the attestation checks) load on the first
 * plan that has an operation: a pass that changes nothing (a CI no-op) never loads them.
 */
function newExecutor(deps: ConstructorParameters<typeof Executor>[0]): Executor {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return new (require('../execute/executor') as typeof ExecutorMod).Executor(deps);
}

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
  /** `--allow-empty`: a specs source with no attempt at all may remove the instance's attempts. */
  allowEmpty?: boolean;
  /** Re-runs after infrastructure deaths (`--infra-retries`). */
  infraRetries?: number;
  /** `--egress-proxy-image`, `--egress-network`. */
  egress?: { proxyImage?: string; network?: string };
  env: NodeJS.ProcessEnv;
  log: Logger;
  now?: () => number;
  /** The harvest's log cap and hashing budget (`--log-max-bytes`, `--hash-max-bytes`, `--hash-max-seconds`). */
  harvest?: HarvestLimits;
  /** Specs from git: the commit `specsDir` holds. */
  revision?: string;
  /** Plan only these attempts (`berth rerun`, `berth delete`); the others still count for admission. */
  only?: ReadonlySet<string>;
  /**
   * The specs' desired states, kept for as long as this configuration's passes run (a
   * controller's life, a `reconcile`'s passes; `passConfig` makes one): the planner reads them
   * from its input and keeps no state of its own. Without it each plan builds its own (correct,
   * only slower over many passes).
   */
  desired?: DesiredStates;
  /**
   * Exits the engine's lists may not show yet, seen by inspecting each container on its `die`
   * (`reconcile --once --wait`: the Waker's ExitWatch): laid over every pass's lists.
   */
  exits?: { apply(s: Snapshot): Snapshot };
}

export interface PassResult {
  load: LoadResult;
  snapshot: Snapshot;
  plan: Plan;
  results: ActionResult[];
}

/** The errors of each protected (invalid or duplicated) name, positioned, in file order. */
export function invalidErrors(load: LoadResult): Map<string, SpecIssue[]> {
  const out = new Map<string, SpecIssue[]>();
  for (const name of load.protectedNames) out.set(name, []);
  for (const e of load.errors) {
    const issue = { file: e.file, line: e.line, col: e.col, path: e.path, code: e.code, message: e.message };
    if (e.attempt !== undefined) out.get(e.attempt)?.push(issue);
    // An error of an AttemptSet as a whole is an error of each of its (protected) children.
    else if (e.set !== undefined) for (const c of load.sets?.get(e.set)?.children ?? []) out.get(c)?.push(issue);
  }
  return out;
}

/** The specs root is missing, not a folder, or unreadable: nothing may be planned (CONTRACT: exit 2, engine untouched). */
export class SpecsRootError extends Error {
  readonly code = 'SpecsRootUnreadable';
  constructor(readonly error: SpecError) {
    super(`${error.file || 'the specs folder'}: ${error.message}; nothing was planned or changed`);
    this.name = 'SpecsRootError';
  }
}

export { resolveResultsRoot } from '../plan/results';

/** Container ids the records name, for the ownership rule (src/ownership.ts). */
export function knownContainerIds(statuses: ReadonlyMap<string, AttemptStatus>): RecordedContainers {
  return recordedContainers(statuses.values());
}

/** The planner's input for one pass (or one controller batch, with `extra`). */
export function planInput(
  cfg: PassConfig,
  load: LoadResult,
  snapshot: Snapshot,
  statuses: ReadonlyMap<string, AttemptStatus>,
  now: number,
  extra: Pick<PlanInput, 'only' | 'reservedSlots' | 'reservedBySet' | 'runFloors'> = {},
): PlanInput {
  // A load that knows no attempt because its root cannot be read must never be planned from:
  // it would remove everything. One check here covers every pass and every controller batch.
  if (load.rootError) throw new SpecsRootError(load.rootError);
  return {
    instance: cfg.instance,
    now,
    resultsRoot: cfg.resultsRoot,
    specs: load.specs,
    protectedNames: load.protectedNames,
    invalid: invalidErrors(load),
    unreadableFiles: load.unreadableFiles,
    unreadableFolders: load.unreadableFolders,
    ...(cfg.allowEmpty ? { allowEmpty: true } : {}),
    snapshot,
    statuses,
    maxRunning: cfg.maxRunning,
    attestIntervalMs: cfg.attestIntervalMs,
    ...(cfg.retryBaseMs !== undefined ? { retryBaseMs: cfg.retryBaseMs } : {}),
    ...(cfg.infraRetries !== undefined ? { infraRetries: cfg.infraRetries } : {}),
    ...(cfg.egress ? { egress: cfg.egress } : {}),
    desired: cfg.desired ?? new DesiredStates(),
    ...extra,
  };
}

/**
 * Plans, then looks on disk at the results folders of the runs the plan starts: where a
 * `run-<n>` folder at or above the planned number already exists (after `clean`, with a fresh
 * state folder, another state folder sharing the results root), plans again with those floors so
 * the run gets a folder of its own. Only the few attempts a plan starts cost a folder read.
 */
export function planWithRunFloors(input: PlanInput): Plan {
  const first = makePlan(input);
  const floors = new Map<string, number>();
  for (const a of first.actions) {
    // The operation that makes the run's folder, told by the planner whether it is the run's own already.
    const begin = a.ops.find((o) => o.type === 'begin-run');
    if (begin?.type !== 'begin-run') continue;
    const d = begin.desired;
    const floor = runFloor(d.resultsDir, begin.ownFolder);
    if (floor >= d.run) floors.set(d.name, floor);
  }
  return floors.size ? makePlan({ ...input, runFloors: floors }) : first;
}

/** The specs a pass over `cfg` plans from (reading them changes nothing). */
function loadPassSpecs(cfg: PassConfig): Promise<LoadResult> {
  return loadSpecs({ specsDir: cfg.specsDir, resultsRoot: cfg.resultsRoot, cacheIn: cfg.stateDir, ...(cfg.revision !== undefined ? { revision: cfg.revision } : {}) });
}

/**
 * Observe and plan, changing nothing. `specs`: a load to plan from instead of loading the folder
 * again (a side pass plans from its pass's load: leftAlone chose its attempts from that load).
 */
export async function planPass(
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  reserved: Pick<PlanInput, 'reservedSlots' | 'reservedBySet'> = {},
  specs?: LoadResult,
): Promise<Omit<PassResult, 'results'>> {
  const now = cfg.now ?? Date.now;
  // The engine's lists go out first; specs and records load while the engine answers. They
  // start a turn of the event loop later: dockerode sends each request from a promise callback,
  // which synchronous reads started now would hold back.
  const listsOut = nextTurn();
  const statusesP = listsOut.then(() => store.loadAll());
  const snapshotP = observe(engine, cfg.instance, statusesP.then(knownContainerIds), now());
  const loadP = specs ? Promise.resolve(specs) : listsOut.then(() => loadPassSpecs(cfg));
  const [load, statuses, listed] = await Promise.all([loadP, statusesP, snapshotP]);
  const snapshot = cfg.exits ? cfg.exits.apply(listed) : listed;
  const plan = planWithRunFloors(planInput(cfg, load, snapshot, statuses, now(), { ...(cfg.only ? { only: cfg.only } : {}), ...reserved }));
  return { load, snapshot, plan };
}

/**
 * What runs alongside a pass's actions (`--wait`'s side passes): told the plan, when the
 * actions are all over, and the attempts whose action has ended so far (a live set).
 */
export type Alongside = (planned: Omit<PassResult, 'results'>, over: Promise<unknown>, ended: ReadonlySet<string>) => Promise<void>;

/**
 * Observe, plan, execute. `alongside`, when given, runs while the plan's actions are under way;
 * the pass ends when both have. `onEnded` hears of each action's end (with `alongside`).
 */
export async function reconcilePass(cfg: PassConfig, engine: Engine, store: StatusStore, alongside?: Alongside, onEnded?: (attempt: string) => void): Promise<PassResult> {
  const planning = planPass(cfg, engine, store);
  // A writer's start-up (damaged records set aside, temp files of interrupted writes removed)
  // while the engine answers: the lists are out, and it shares the plan's load of the records.
  const recovering = store.recover();
  recovering.catch(() => undefined); // awaited below, once the plan is made
  const planned = await planning;
  await recovering;
  // Nothing to do: no executor (Executor.run of a plan without operations does nothing either).
  if (!alongside && !planned.plan.actions.some((a) => a.ops.length > 0)) return { ...planned, results: [] };
  const executor = newExecutor({
    engine,
    store,
    instance: cfg.instance,
    concurrency: cfg.concurrency,
    log: cfg.log,
    env: cfg.env,
    resultsRoot: cfg.resultsRoot,
    ...(cfg.now ? { now: cfg.now } : {}),
    ...(cfg.harvest ? { harvest: cfg.harvest } : {}),
  });
  if (!alongside) return { ...planned, results: await executor.run(planned.plan) };
  // Executor.run's own loop, also telling which attempts' actions have ended.
  const ended = new Set<string>();
  const actions = planned.plan.actions.filter((a) => a.ops.length > 0);
  const running = runBounded(actions, cfg.concurrency, (a) =>
    executor.runAction(a).finally(() => {
      ended.add(a.attempt);
      onEnded?.(a.attempt);
    }),
  );
  const side = alongside(planned, running, ended);
  const settled = await running;
  await side;
  const results = settled.map((r, i): ActionResult => (r.status === 'fulfilled' ? r.value : { attempt: actions[i]?.attempt ?? '?', ok: false, done: 0, ran: [], error: String(r.reason) }));
  return { ...planned, results };
}

/**
 * What a side pass (`sidePlan`) carries out: the end of a run (its harvest and finished record),
 * the removal of a finished run's resources once its TTL passed, and the start of a waiting
 * attempt (first run or retry) in a slot an exit freed, counting the main pass's admissions
 * still under way as taken (`reservedSlots`, as the controller counts its own). A spec change
 * (replace) and everything else wait for the next pass.
 */
const SIDE_KINDS: ReadonlySet<ActionKind> = new Set<ActionKind>(['finish', 'expire', 'provision', 'retry']);
const ADMITTING: ReadonlySet<ActionKind> = new Set<ActionKind>(['provision', 'replace', 'retry']);

/** The slots a pass's admissions still under way hold (all of them, and per AttemptSet). */
export function reservedBy(planned: Pick<PassResult, 'plan'>, ended: ReadonlySet<string>): { reservedSlots: number; reservedBySet: Map<string, number> } {
  const bySet = new Map<string, number>();
  let slots = 0;
  for (const a of planned.plan.actions) {
    if (!ADMITTING.has(a.kind) || a.ops.length === 0 || ended.has(a.attempt)) continue;
    slots++;
    if (a.set !== undefined) bySet.set(a.set, (bySet.get(a.set) ?? 0) + 1);
  }
  return { reservedSlots: slots, reservedBySet: bySet };
}

/**
 * The attempts (specs, and what is in the engine) that a pass planned no operation for, and
 * those whose action has `ended`: while the pass's other actions are under way (starts, copies,
 * harvests), these are the ones a side pass may look at without meeting that work. A `die` of
 * one of them, or a slot it frees, need not wait for the next pass.
 */
export function leftAlone(planned: Pick<PassResult, 'plan' | 'snapshot' | 'load'>, ended: ReadonlySet<string> = new Set()): Set<string> {
  const busy = planned.plan.actions.filter((a) => a.ops.length > 0 && !ended.has(a.attempt)).map((a) => a.attempt);
  const out = new Set([...planned.load.specs.map((s) => s.spec.name), ...planned.snapshot.attempts.keys(), ...ended]);
  for (const n of busy) out.delete(n);
  return out;
}

/**
 * A side pass over `only` (attempts the pass under way left alone, see leftAlone): observe and
 * plan them from the pass's own load of the specs (`specs`: the folder is not read again; a spec
 * changed meanwhile is the next pass's), with the slots of admissions under way `reserved`
 * (reservedBy), and keep only
 * SIDE_KINDS; anything else they need waits for the next pass. Changes nothing: the caller runs
 * the actions (sideExecutor), each attempt busy until its action ends. `reconcile --once --wait`
 * runs these while a pass's actions are under way, so that an exit is harvested and recorded,
 * and its slot given, without waiting for the pass's starts (issue 18).
 */
export async function sidePlan(
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  only: ReadonlySet<string>,
  reserved: Pick<PlanInput, 'reservedSlots' | 'reservedBySet'>,
  specs?: LoadResult,
): Promise<{ snapshot?: Snapshot; actions: AttemptAction[] }> {
  if (only.size === 0) return { actions: [] };
  const planned = await planPass({ ...cfg, only }, engine, store, reserved, specs);
  const actions = planned.plan.actions.filter((a) => only.has(a.attempt) && SIDE_KINDS.has(a.kind) && a.ops.length > 0);
  return { snapshot: planned.snapshot, actions };
}

/** Whether an action takes a slot (for the slots of side actions under way). */
export function admits(a: AttemptAction): boolean {
  return ADMITTING.has(a.kind);
}

/**
 * The executor of side actions. No store recovery: the pass under way did it, and its writes
 * may be in flight.
 */
export function sideExecutor(cfg: PassConfig, engine: Engine, store: StatusStore): Executor {
  return newExecutor({
    engine,
    store,
    instance: cfg.instance,
    concurrency: 1,
    log: cfg.log,
    env: cfg.env,
    resultsRoot: cfg.resultsRoot,
    ...(cfg.now ? { now: cfg.now } : {}),
    ...(cfg.harvest ? { harvest: cfg.harvest } : {}),
  });
}

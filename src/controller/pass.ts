/**
 * One reconcile pass, level-triggered: read the specs and the status records, take one
 * snapshot of the engine, plan with no I/O, execute the plan. A straight line, as in
 * docker compose's create(): observe → plan → execute.
 */
import path from 'node:path';
import { buildTag, DEFAULTS } from '../constants';
import type { RunPolicy } from '../policy';
import type { ActionResult, Executor } from '../execute/executor';
import type * as ExecutorMod from '../execute/executor';
import type * as PullerMod from './puller';
import type * as BuilderMod from './builder';
import type * as CredentialsMod from '../registry/credentials';
import type * as ClockMod from '../util/clock';
import type { HarvestLimits } from '../execute/harvest';
import type { Engine } from '../engine/types';
import { observe } from '../observe/snapshot';
import { DiskObserver } from '../observe/disk';
import type { DiskInput, DiskThresholds } from '../plan/disk-pressure';
import { engineCaps } from '../observe/storage';
import { recordedContainers, recordIndex, type RecordedContainers } from '../ownership';
import type { Snapshot } from '../observe/types';
import { plan as makePlan } from '../plan/planner';
import type { Plan } from '../plan/types';
import { loadSpecs, type LoadReport } from '../spec/loader';
import { LastGoodSets } from '../spec/last-good';
import type { PlanInput } from '../plan/input';
import type { ImagePullState } from '../plan/pull-gate';
import type { ImageBuildState } from '../plan/build-gate';
import { readBuildRecord } from '../build/records';
import { resolveImage } from '../observe/images';
import type { NormalizedBuild } from '../spec/types';
import { DesiredStates } from '../plan/desired-for';
import { loadFacts } from './load-facts';
import type { LoadResult, SpecError } from '../spec/types';
import type { AttemptStatus, SpecIssue } from '../status/types';
import { runFloor } from '../plan/results';
import { pinKeyOf } from '../status/pins';
import { keptChildNames, StatusStore } from '../status/store';
import type { Logger } from '../util/log';
import { nextTurn } from '../util/pool';
import type { ImageGcConfig } from '../plan/image-gc';

/**
 * The executor of a pass's or a controller's actions. Its modules (tar-stream, the harvest, the
 * attestation checks) load on the first plan that has an operation: a pass that changes nothing
 * (a CI no-op) never loads them.
 */
export function executorFor(cfg: PassConfig, engine: Engine, store: StatusStore, opts: { concurrency?: number; signal?: AbortSignal } = {}): Executor {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return new (require('../execute/executor') as typeof ExecutorMod).Executor({
    engine,
    store,
    instance: cfg.instance,
    concurrency: opts.concurrency ?? cfg.concurrency,
    log: cfg.log,
    env: cfg.env,
    resultsRoot: cfg.resultsRoot,
    ...(cfg.now ? { now: cfg.now } : {}),
    ...(cfg.harvest ? { harvest: cfg.harvest } : {}),
    fixtureCache: { dir: path.join(cfg.stateDir, DEFAULTS.fixtureCacheDir), maxBytes: cfg.fixtureCacheBytes ?? DEFAULTS.fixtureCacheBytes },
    ...(opts.signal ? { signal: opts.signal } : {}),
  });
}

export interface PassConfig {
  specsDir: string;
  stateDir: string;
  resultsRoot: string;
  instance: string;
  maxRunning: number;
  concurrency: number;
  attestIntervalMs: number;
  /** The flags' decisions for every run (src/policy.ts). */
  policy: RunPolicy;
  /** `--allow-empty`: a specs source with no attempt at all may remove the instance's attempts. */
  allowEmpty?: boolean;
  /** `--disk-pressure-*`: new runs wait while a file system is below them (none: no check). */
  disk?: DiskThresholds;
  /** `--disk-interval` (ms): how often a controller measures the running attempts with a disk limit. */
  diskIntervalMs?: number;
  env: NodeJS.ProcessEnv;
  log: Logger;
  now?: () => number;
  /** The harvest's log cap and hashing budget (`--log-max-bytes`, `--hash-max-bytes`, `--hash-max-seconds`). */
  harvest?: HarvestLimits;
  /** Bytes of packed fixture layers kept under `<state>/cache/fixtures` (`--fixture-cache-size`; default DEFAULTS.fixtureCacheBytes; 0: none kept). */
  fixtureCacheBytes?: number;
  /** Specs from git: the commit `specsDir` holds. */
  revision?: string;
  /**
   * Pulls (docs/CONTRACT.md "Images from registries"): an image berth may pull is gated on the
   * puller's state (`states`, from whoever runs a puller: a controller, `reconcile --once`), not
   * Blocked. Absent: nothing is pulled (Blocked/ImageMissing, as in version 3).
   */
  pull?: PullConfig;
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
   * Builds (docs/CONTRACT.md "Images built from a Dockerfile"): `--max-builds`, `--build-timeout`,
   * and what the builder knows of a build hash (`state`, from whoever runs a builder: a controller,
   * `reconcile --once`). Without a builder, a failure recorded in the state folder is still seen.
   */
  build?: BuildConfig;
  /** Image GC (`--image-gc-high`, `--image-gc-low`, `--image-gc-min-age`); none: images are never collected. */
  imageGc?: ImageGcConfig;
  /** The sets' last good expansions (spec/last-good.ts); without it, one over the state folder. */
  lastGood?: LastGoodSets;
}

/** The last good expansions of `cfg`'s sets. */
export function lastGoodOf(cfg: PassConfig): LastGoodSets {
  return (cfg.lastGood ??= new LastGoodSets(cfg.stateDir, cfg.instance));
}

export type { ImageGcConfig } from '../plan/image-gc';

export interface BuildConfig {
  maxBuilds: number;
  timeoutMs: number;
  /** The builder's state of a build hash (controller/builder.ts `stateOf`); none: only the failures recorded in the state folder. */
  state?: (hash: string) => ImageBuildState | undefined;
}

/**
 * The plan input's builds: the state of each build hash whose image the engine does not hold
 * (the builder's, or a failure recorded in `<state>/builds/`); nothing read for an image that is there.
 */
export function buildInput(cfg: PassConfig, load: LoadResult, snapshot: Snapshot): Pick<PlanInput, 'builds'> {
  const index = snapshot.images;
  const states = new Map<string, ImageBuildState>();
  const look = (b: NormalizedBuild | undefined) => {
    if (!b || states.has(b.hash)) return;
    if (index && resolveImage(index, buildTag(b.hash))?.build === b.hash) return;
    const st = cfg.build?.state?.(b.hash) ?? recordedState(cfg.stateDir, b.hash);
    if (st) states.set(b.hash, st);
  };
  const builds = loadFacts(load).builds;
  for (const b of builds) look(b);
  return builds.length ? { builds: { states, maxBuilds: cfg.build?.maxBuilds ?? DEFAULTS.maxBuilds } } : {};
}

/** A failure of `hash` recorded in the state folder (by any berth), as the gate reads it. */
function recordedState(stateDir: string, hash: string): ImageBuildState | undefined {
  const rec = readBuildRecord(stateDir, hash);
  return rec?.state === 'failed' ? { failed: { at: Date.parse(rec.at), message: rec.message ?? '' } } : undefined;
}

export interface PullConfig {
  /** `--max-pulls`. */
  maxPulls: number;
  /** `--prefetch`. */
  prefetch: number;
  /** `--pull-retries` (settles only in a finite run). */
  retries: number;
  /** The registry config file (registry/credentials.ts registryConfigPath). */
  registryConfig: string;
  /** What the puller knows now; none: no puller (nothing is gated on pulls; `plan` gives an empty one). */
  states?: () => ReadonlyMap<string, ImagePullState>;
  /** A finite run (`--once --wait`, `--once`): failed pulls settle after `retries`. */
  finite?: boolean;
}

/** The plan input's pulls for `cfg` (none without a pull configuration). */
export function pullInput(cfg: PassConfig): Pick<PlanInput, 'pulls'> {
  const p = cfg.pull;
  // no puller (rerun's and delete's passes): nothing gated on pulls that nobody runs
  if (!p?.states) return {};
  return { pulls: { states: p.states(), prefetch: p.prefetch, ...(p.finite ? { retries: p.retries } : {}) } };
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
  extra: Pick<PlanInput, 'only' | 'reservedSlots' | 'reservedBySet' | 'runFloors' | 'pins' | 'disk' | 'diskUsage' | 'diskQuota' | 'volumeQuota'> = {},
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
    policy: cfg.policy,
    ...pullInput(cfg),
    ...buildInput(cfg, load, snapshot),
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
async function loadPassSpecs(cfg: PassConfig): Promise<LoadReport> {
  const kept = keptChildNames(cfg.stateDir, cfg.instance);
  const load = await loadSpecs({
    specsDir: cfg.specsDir,
    resultsRoot: cfg.resultsRoot,
    cacheIn: cfg.stateDir,
    ...(cfg.revision !== undefined ? { revision: cfg.revision } : {}),
    ...(kept.size ? { keptNames: kept } : {}),
  });
  // a set whose file is broken: its last good expansion (spec/last-good.ts)
  return lastGoodOf(cfg).apply(load, cfg.specsDir);
}

/** One observer per engine (the engine's data root is asked once), for passes that share it. */
const diskObservers = new WeakMap<Engine, DiskObserver>();

/**
 * The disk readings and thresholds for a plan (plan/disk-pressure.ts decides): the file systems
 * of the engine's data root and the results root, read now; none without thresholds.
 */
export async function readDisk(cfg: PassConfig, engine: Engine): Promise<DiskInput | undefined> {
  if (!cfg.disk) return undefined;
  let o = diskObservers.get(engine);
  if (!o) {
    o = new DiskObserver(cfg.resultsRoot, engine.local?.dataRoot.bind(engine.local));
    diskObservers.set(engine, o);
  }
  return { readings: await o.read(), thresholds: cfg.disk };
}

/**
 * What the engine caps itself (observe/storage.ts), as the plan input takes it: writable layers
 * (`diskQuota`) and volumes' sizes (`volumeQuota`). Asked only when some attempt has a disk limit
 * or a sized volume (so a pass without one makes no extra call); an engine that cannot say counts
 * as one that cannot (berth measures).
 */
export async function quotasFor(cfg: PassConfig, load: LoadResult, engine: Engine): Promise<Pick<PlanInput, 'diskQuota' | 'volumeQuota'>> {
  const facts = loadFacts(load);
  const limited = cfg.policy.defaultDiskBytes !== undefined || facts.diskLimited;
  const sized = facts.sizedVolumes;
  if (!limited && !sized) return {};
  const caps = await engineCaps(engine).catch(() => ({ layer: false, volumes: false }));
  return { ...(limited && caps.layer ? { diskQuota: true } : {}), ...(sized && caps.volumes ? { volumeQuota: true } : {}) };
}

/** What one observation holds, and the plan made from it. */
export interface Observed<L extends LoadResult = LoadResult> {
  load: L;
  statuses: ReadonlyMap<string, AttemptStatus>;
  snapshot: Snapshot;
  disk: DiskInput | undefined;
  plan: Plan;
}

/**
 * Observe, then plan: the one sequence of a pass and of a controller batch. The engine's lists
 * go out first; specs and records load while the engine answers. They start a turn of the event
 * loop later: dockerode sends each request from a promise callback, which synchronous reads
 * started now would hold back. `observe` takes the lists (a pass: all of them; a controller: its
 * kept snapshot, refreshed), `load` reads the specs (a pass: the folder; a controller: what it holds).
 */
export async function observeAndPlan<L extends LoadResult>(
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  how: {
    load: () => Promise<L>;
    observe: (known: Promise<RecordedContainers>) => Promise<Snapshot>;
    now: () => number;
    extra?: Pick<PlanInput, 'only' | 'reservedSlots' | 'reservedBySet' | 'diskUsage'>;
    /** The attempts to plan, told once the observation is made (a controller's resync: quiet.ts); undefined: `extra.only`. */
    only?: (load: L, statuses: ReadonlyMap<string, AttemptStatus>, snapshot: Snapshot) => ReadonlySet<string> | undefined;
  },
): Promise<Observed<L>> {
  const listsOut = nextTurn();
  const statusesP = listsOut.then(() => store.loadAll());
  // the store keeps the ids its records name between batches (status/container-index.ts)
  const snapshotP = how.observe(statusesP.then(async () => recordIndex(await store.byContainer())));
  const loadP = listsOut.then(how.load);
  const diskP = readDisk(cfg, engine);
  const [load, statuses, snapshot, disk] = await Promise.all([loadP, statusesP, snapshotP, diskP]);
  const quotas = await quotasFor(cfg, load, engine);
  const only = how.only?.(load, statuses, snapshot);
  const plan = planWithRunFloors(
    planInput(cfg, load, snapshot, statuses, how.now(), {
      ...how.extra,
      ...(only ? { only } : {}),
      pins: store.pins.loadAll(),
      ...(disk ? { disk } : {}),
      ...quotas,
    }),
  );
  return { load, statuses, snapshot, disk, plan };
}

/** Observe and plan, changing nothing. */
export async function planPass(cfg: PassConfig, engine: Engine, store: StatusStore): Promise<Omit<PassResult, 'results'>> {
  const now = cfg.now ?? Date.now;
  const { load, snapshot, plan } = await observeAndPlan(cfg, engine, store, {
    load: () => loadPassSpecs(cfg),
    observe: (known) => observe(engine, cfg.instance, known, now()),
    now,
    ...(cfg.only ? { extra: { only: cfg.only } } : {}),
  });
  return { load, snapshot, plan };
}

/**
 * A writer's: the sets' pins files made before pin keys, given their set's key where they still
 * hold (status/pins.ts upgrade), so an edit that re-runs no child keeps them from then on. The
 * plan made before does not change (such a file holds by its template hash meanwhile).
 */
export async function upgradePins(store: StatusStore, load: LoadResult): Promise<void> {
  for (const s of load.sets?.values() ?? []) if (s.valid) await store.pins.upgrade(s.policy.name, pinKeyOf(s.policy));
}

/** Observe, plan, execute. */
export async function reconcilePass(cfg: PassConfig, engine: Engine, store: StatusStore): Promise<PassResult> {
  const planning = planPass(cfg, engine, store);
  // A writer's start-up (damaged records set aside, temp files of interrupted writes removed)
  // while the engine answers: the lists are out, and it shares the plan's load of the records.
  const recovering = store.recover();
  recovering.catch(() => undefined); // awaited below, once the plan is made
  const planned = await planning;
  await recovering;
  await upgradePins(store, planned.load);
  // a writer keeps the expansion of every set that loaded whole, for the day its file breaks
  await lastGoodOf(cfg).keep(planned.load as LoadReport);
  // Nothing to do: no executor (Executor.run of a plan without operations does nothing either).
  if (!planned.plan.actions.some((a) => a.ops.length > 0)) return { ...planned, results: [] };
  return { ...planned, results: await executorFor(cfg, engine, store).run(planned.plan) };
}

/**
 * `reconcile --once` with pulls: a pass, then the pulls it asked for (awaited, --max-pulls at a
 * time), then a pass again, so the attempts whose images arrived are provisioned by the same
 * command; until a pass asks for no pull (what failed waits out its back-off: Blocked). The pulls
 * are this command's own, cancelled if it is stopped.
 */
export async function reconcilePassPulling(cfg: PassConfig, engine: Engine, store: StatusStore): Promise<PassResult> {
  if (!cfg.pull || !engine.images.pull) return reconcilePass(cfg, engine, store);
  const pullCfg = cfg.pull;
  // a backend whose nodes pull for themselves (a swarm) gets the credentials first
  if (engine.useCredentials) {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const creds = new (require('../registry/credentials') as typeof CredentialsMod).RegistryCredentials({ file: pullCfg.registryConfig, env: cfg.env });
    engine.useCredentials((ref) => creds.forImage(ref));
  }
  const held: { puller?: PullerMod.Puller } = {};
  const none = new Map<string, ImagePullState>();
  const c: PassConfig = { ...cfg, pull: { ...cfg.pull, states: () => held.puller?.view() ?? none, finite: true } };
  let res = await reconcilePass(c, engine, store);
  if (!res.plan.pulls?.length) return res;
  // loaded only when a pass asks for a pull (a no-op CLI pass loads none of it)
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { Puller, pullsFile } = require('./puller') as typeof PullerMod;
  const { RegistryCredentials } = require('../registry/credentials') as typeof CredentialsMod;
  const { systemClock } = require('../util/clock') as typeof ClockMod;
  /* eslint-enable @typescript-eslint/no-require-imports */
  const p = new Puller({
    engine,
    credentials: new RegistryCredentials({ file: cfg.pull.registryConfig, env: cfg.env }),
    maxPulls: cfg.pull.maxPulls,
    clock: systemClock,
    log: cfg.log,
    stateFile: pullsFile(cfg.stateDir, cfg.instance),
    onSettled: () => undefined,
  });
  held.puller = p;
  try {
    const results = [...res.results];
    // each round pulls at least one image or ends: a bounded number of rounds
    const asked = new Set<string>();
    for (let round = 0; round < 1000 && res.plan.pulls?.length; round++) {
      // a reference asked for again after its pull (an image the engine still does not show by that name): no loop
      if (res.plan.pulls.every((r) => asked.has(r.ref))) break;
      for (const r of res.plan.pulls) asked.add(r.ref);
      p.want(res.plan.pulls);
      await p.drained();
      res = await reconcilePass(c, engine, store);
      results.push(...res.results);
    }
    return { ...res, results };
  } finally {
    await p.close();
  }
}

/**
 * `reconcile --once` with builds: a pass, then the builds it asked for (awaited, --max-builds at a
 * time), then a pass again, so the attempts whose images were built are provisioned by the same
 * command; until a pass asks for no build it has not asked for already (a failed one is then
 * Blocked/BuildFailed). The builds are this command's own, stopped if it is stopped. `pass`: the
 * pass to repeat (reconcilePass, or one that also pulls).
 */
export async function reconcilePassBuilding(
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  pass: (cfg: PassConfig, engine: Engine, store: StatusStore) => Promise<PassResult> = reconcilePass,
): Promise<PassResult> {
  let res = await pass(cfg, engine, store);
  if (!res.plan.builds?.length || !engine.builds) return res;
  // loaded only when a pass asks for a build (a no-op CLI pass loads none of it)
  /* eslint-disable @typescript-eslint/no-require-imports */
  const { Builder } = require('./builder') as typeof BuilderMod;
  const { systemClock } = require('../util/clock') as typeof ClockMod;
  const { RegistryCredentials, buildRegistryConfig } = require('../registry/credentials') as typeof CredentialsMod;
  /* eslint-enable @typescript-eslint/no-require-imports */
  // the FROM images' credentials (X-Registry-Config), for a FROM the builder must fetch itself
  const creds = cfg.pull ? new RegistryCredentials({ file: cfg.pull.registryConfig, env: cfg.env }) : undefined;
  const builder = new Builder({
    engine,
    stateDir: cfg.stateDir,
    instance: cfg.instance,
    maxBuilds: cfg.build?.maxBuilds ?? DEFAULTS.maxBuilds,
    timeoutMs: cfg.build?.timeoutMs ?? DEFAULTS.buildTimeoutMs,
    clock: systemClock,
    log: cfg.log,
    ...(cfg.disk ? { pressure: cfg.disk } : {}),
    ...(engine.local ? { dataRoot: localDataRoot(engine) } : {}),
    ...(creds ? { registryConfig: (refs: readonly string[]) => buildRegistryConfig(creds, refs) } : {}),
    onSettled: () => undefined,
  });
  const c: PassConfig = {
    ...cfg,
    build: { maxBuilds: builder.maxBuilds, timeoutMs: cfg.build?.timeoutMs ?? DEFAULTS.buildTimeoutMs, state: (h) => builder.stateOf(h) },
  };
  try {
    const results = [...res.results];
    const asked = new Set<string>();
    // each round builds at least one image or ends: a bounded number of rounds
    for (let round = 0; round < 1000 && res.plan.builds?.length; round++) {
      if (res.plan.builds.every((r) => asked.has(r.hash))) break;
      for (const r of res.plan.builds) asked.add(r.hash);
      builder.want(res.plan.builds);
      await builder.drained();
      res = await pass(c, engine, store);
      results.push(...res.results);
    }
    return { ...res, results };
  } finally {
    await builder.close();
  }
}

/**
 * The engine's data root, when this host can read it (the engine on a socket here): where a build's
 * disk pressure is read. Asked of the engine once (as observe/disk.ts's DiskObserver does): the
 * answer is `docker info`, which the engine makes slowly (it runs its runtimes to say their
 * versions), and a build's disk watch reads the data root every second; a failed ask is asked again.
 */
export function localDataRoot(engine: Engine): () => Promise<string | undefined> {
  let known: Promise<string | undefined> | undefined;
  return () => {
    if (!known) {
      const asked = (async () => {
        const r = await engine.local?.dataRoot();
        return r?.local ? r.path : undefined;
      })();
      known = asked;
      asked.catch(() => {
        if (known === asked) known = undefined;
      });
    }
    return known;
  };
}

/**
 * The planner: pure `(PlanInput) → Plan`. No I/O, no clock of its own: the same input gives
 * the same plan, in a fixed order (attempts by name; an AttemptSet's children at the set's name, by
 * their coordinates). Every operation records its cause.
 */
import { COMPONENTS, DEFAULTS, FINISHED_PHASES, LABELS, LEGACY_NAMING, REASONS, RUNNING_STATES } from '../constants';
import { hasEgressProxy } from '../desired/attempt';
import { namesOf } from '../desired/lazy';
import type { DesiredAttempt } from '../desired/types';
import type { ContainerSummary } from '../engine/types';
import { isImageId, resolveImage, type HeldImage, type ImageIndex } from '../observe/images';
import type { ObservedAttempt } from '../observe/types';
import { NOT_ADMITTED } from '../sets/outcome';
import { formatIssue } from '../spec/issue';
import type { LoadedSpec } from '../spec/types';
import { pinOf } from '../status/pins';
import type { AttemptStatus, SpecIssue } from '../status/types';
import { attestListed, failedCause, mainWant, sidecarWant } from '../attest/checks';
import { diskExceeded } from './disk';
import { isInfraFailure } from './exit-outcome';
import { retryBackoffMs, type PlanInput } from './input';
import { desiredFor } from './desired-for';
import {
  cmp,
  dropRenamed,
  duplicateNetworks,
  finishOp,
  harvestList,
  hasAny,
  isMain,
  provisionOps,
  recordOp,
  removeContainerOp,
  removeOps,
  startOps,
  scrubOps,
  secretHolders,
  sidecarOps,
  stopOp,
  stopSidecars,
  withHarvestCaps,
} from './ops';
import { admissionOrder, setStates, type SetState } from './set-admission';
import { diskPressure } from './disk-pressure';
import { isGrader, planGrade } from './grade';
import type { AttemptAction, ImageChoice, Operation, Plan, RunCounters, RunEnd, RunStart } from './types';

const EMPTY: ObservedAttempt = { name: '', containers: [], networks: [], volumes: [] };
/** How long a Blocked attempt waits before berth tries it again. */
export const BLOCKED_RETRY_MS = 15_000;
/** How long an attempt whose create failed (the engine refused) waits before berth tries again. */
export const CREATE_RETRY_MS = 5_000;
/** How long an attempt whose harvest failed waits before berth tries the harvest again. */
export const HARVEST_RETRY_MS = 5_000;
/** Failure reasons a spec's `retries` re-run (also read by `berth wait`, which waits through a pending retry). */
export const RETRYABLE_REASONS = new Set<string>([REASONS.error, REASONS.oomKilled, REASONS.lost]);

/**
 * A run that ended (its outcome is recorded as `ended`) and whose harvest is not done: it failed,
 * or berth stopped during it. The harvest comes before anything else of the attempt (a retry, a
 * replacement, a removal): the next plan decides those on the final phase. A failed harvest is
 * tried again once HARVEST_RETRY_MS have passed.
 */
function planHarvest(inp: PlanInput, base: { attempt: string; status?: AttemptStatus }, rec: AttemptStatus, obs: ObservedAttempt): AttemptAction {
  const ofRun = obs.containers.filter((c) => c.labels[LABELS.run] === String(rec.run));
  const main = obs.containers.find((c) => c.id === rec.containerId) ?? ofRun.find(isMain);
  const sidecars = ofRun
    .filter((c) => !isMain(c) && c.labels[LABELS.sidecar])
    .map((c) => ({
      alias: c.labels[LABELS.sidecar] as string,
      role: c.labels[LABELS.component] === COMPONENTS.proxy ? ('egress-proxy' as const) : ('sidecar' as const),
      id: c.id,
    }));
  if (rec.reason === REASONS.harvestFailed) {
    const again = Date.parse(rec.updatedAt) + HARVEST_RETRY_MS - inp.now;
    if (again > 0) return { ...base, kind: 'block', summary: `the harvest of run ${rec.run} failed: ${rec.message ?? ''}`, ops: [], requeueAfterMs: again };
  }
  const cause = rec.reason === REASONS.harvestFailed ? 'the harvest failed; trying again' : 'the run ended and its harvest was not done';
  return {
    ...base,
    kind: 'finish',
    summary: `${cause}: run ${rec.run} ended ${rec.ended?.phase ?? ''}`,
    requeueAfterMs: 0,
    ops: [
      ...stopSidecars(ofRun, 'the attempt finished'),
      {
        type: 'harvest',
        resource: `attempt:${rec.name}`,
        ...(main ? { id: main.id } : {}),
        ...(rec.resultsDir ? { resultsDir: rec.resultsDir } : {}),
        ...(sidecars.length ? { sidecars } : {}),
        cause,
      },
    ],
  };
}

interface Ctx {
  inp: PlanInput;
  /** Running slots still free for new runs. */
  slots: number;
  /** AttemptSets: their children running and whether they admit more (set-admission.ts). */
  sets: Map<string, SetState>;
  /** Images found missing by this plan's preflight → the attempts that wait for them. */
  missing: Map<string, string[]>;
  /** References looked up in the snapshot's images, once per plan. */
  resolved: Map<string, HeldImage | undefined>;
  /** Why new runs wait for disk space (disk-pressure.ts), decided once per plan; undefined: no pressure. */
  pressure?: string;
}

function resolveOnce(ctx: Ctx, index: ImageIndex, ref: string): HeldImage | undefined {
  if (ctx.resolved.has(ref)) return ctx.resolved.get(ref);
  const h = resolveImage(index, ref);
  ctx.resolved.set(ref, h);
  return h;
}

/** Whether the snapshot's images hold `ref` (true when the snapshot did not list them). */
function held(ctx: Ctx, ref: string): boolean {
  const index = ctx.inp.snapshot.images;
  return !index || resolveOnce(ctx, index, ref) !== undefined;
}

/**
 * The preflight of a new run: the images it needs that the engine lacks (its own, or for a set's
 * child the id its set pinned; its sidecars'; the egress proxy's), each with a message, and the
 * image a set's child is made from (ImageChoice). Nothing is checked when the snapshot did not
 * list the images; a pin is used all the same.
 */
function imagePreflight(ctx: Ctx, d: DesiredAttempt): { missing: { image: string; message: string }[]; image?: ImageChoice } {
  const { inp } = ctx;
  const index = inp.snapshot.images;
  const ref = d.loaded.spec.image;
  const member = d.loaded.set;
  const templateHash = member?.set.templateHash;
  const pinned = member ? pinOf(inp.pins?.get(member.set.name), templateHash, ref) : undefined;
  const missing: { image: string; message: string }[] = [];
  let image: ImageChoice | undefined;
  if (pinned) {
    image = { id: pinned.id };
    if (index && !index.byId.has(pinned.id))
      missing.push({ image: ref, message: `image ${ref} is pinned for set ${member?.set.name ?? ''} to ${pinned.id}, which is not on the engine` });
  } else if (index) {
    const held = resolveOnce(ctx, index, ref);
    if (!held) missing.push({ image: ref, message: `image ${ref} is not on the engine (pull, load or tag it)` });
    else if (member && templateHash !== undefined && !isImageId(ref))
      image = { id: held.id, pin: { set: member.set.name, templateHash, repoDigests: held.repoDigests } };
  }
  if (index) {
    // from the spec, not the desired state: a child waiting for a slot is never built (desired/lazy.ts)
    const s = d.loaded.spec;
    const proxy = hasEgressProxy(s) ? (inp.egress?.proxyImage ?? DEFAULTS.egressProxyImage) : undefined;
    if (proxy !== undefined && !held(ctx, proxy))
      missing.push({
        image: proxy,
        message: `the egress proxy image ${proxy} is not on the engine (build it: make images, or name another with --egress-proxy-image)`,
      });
    for (const sc of s.sidecars) {
      if (!held(ctx, sc.image))
        missing.push({ image: sc.image, message: `image ${sc.image} of sidecar ${sc.name} is not on the engine (pull, load or tag it)` });
    }
  }
  return { missing, ...(image ? { image } : {}) };
}

/**
 * After a finish whose outcome the engine decides: look again at once when a budget could still
 * give a new run (the next plan decides on the recorded outcome); nothing else would wake a
 * controller before its resync.
 */
function mayRunAgain(inp: PlanInput, loaded: LoadedSpec, rec: AttemptStatus | undefined): { requeueAfterMs?: number } {
  const retries = loaded.spec.retries > (rec?.retriesUsed ?? 0);
  const infra = (inp.infraRetries ?? DEFAULTS.infraRetries) > (rec?.infraRetriesUsed ?? 0);
  return retries || infra ? { requeueAfterMs: 0 } : {};
}

/**
 * The retry counters run `d` begins with after the record `rec`. A record that holds this very
 * run already (an interrupted or refused provisioning, a wait for a slot) keeps its own.
 * Otherwise a failed run re-run counts a retry, an infrastructure death an infra retry instead
 * (never the spec's retries); `berth rerun` and a new spec hash start both afresh.
 */
function runCounters(rec: AttemptStatus | undefined, d: DesiredAttempt): RunCounters {
  if (!rec || rec.specHash !== d.hash) return { retriesUsed: 0 };
  if (rec.run === d.run) {
    const { retriesUsed, infraRetriesUsed } = rec;
    return { retriesUsed, ...(infraRetriesUsed !== undefined ? { infraRetriesUsed } : {}) };
  }
  if (rec.rerunRequested?.run === rec.run) return { retriesUsed: 0 };
  const failed = rec.phase === 'Failed';
  const infra = failed && isInfraFailure(rec.reason);
  const infraRetriesUsed = (rec.infraRetriesUsed ?? 0) + (infra ? 1 : 0);
  return { retriesUsed: rec.retriesUsed + (failed && !infra ? 1 : 0), ...(infraRetriesUsed ? { infraRetriesUsed } : {}) };
}

/**
 * Whether run `d`'s results folder is already its own: the record holds this very run with that
 * folder (an interrupted or refused provisioning made it). The executor then finds it rather than
 * refusing it, and the run floors (controller/pass.ts) leave it out.
 */
function ownsFolder(rec: AttemptStatus | undefined, d: DesiredAttempt): boolean {
  return rec !== undefined && rec.run === d.run && rec.specHash === d.hash && rec.resultsDir === d.resultsDir;
}

/** A new run: provisioned now if a slot is free, else it waits in Pending. */
function startRun(
  ctx: Ctx,
  base: { attempt: string; status?: AttemptStatus },
  d: DesiredAttempt,
  have: ObservedAttempt,
  pre: Operation[],
  kind: 'provision' | 'replace' | 'retry',
  why: string,
): AttemptAction {
  // A results folder is never reused: a new run gets a number above every run folder on disk.
  const floor = ctx.inp.runFloors?.get(d.name) ?? 0;
  if (floor >= d.run) {
    d = desiredFor(ctx.inp, d.loaded, floor + 1);
    have = { ...have, containers: [] };
  }
  const counters = runCounters(base.status, d);
  const start: RunStart = { counters, ownFolder: ownsFolder(base.status, d) };
  const set = d.loaded.set ? ctx.sets.get(d.loaded.set.set.name) : undefined;
  if (set?.stop) {
    // Not admitted, for good unless the set's settings change: a final phase that says why.
    const { reason, message } = set.stop;
    const rec = base.status;
    const already = rec?.phase === 'Failed' && rec.reason === reason && rec.run === d.run && rec.specHash === d.hash && pre.length === 0;
    return {
      ...base,
      kind: already ? 'leave' : 'skip',
      summary: message,
      desired: d,
      ops: already ? [] : [...pre, recordOp(d.name, reason, { phase: 'Failed', reason, message, run: d.run, specHash: d.hash }, counters)],
    };
  }
  const preflight = imagePreflight(ctx, d);
  if (preflight.missing.length) {
    for (const m of preflight.missing) ctx.missing.set(m.image, [...(ctx.missing.get(m.image) ?? []), d.name]);
    const message = preflight.missing.map((m) => m.message).join('; ');
    const rec = base.status;
    const already =
      rec?.phase === 'Blocked' &&
      rec.reason === REASONS.imageMissing &&
      rec.message === message &&
      rec.run === d.run &&
      rec.specHash === d.hash &&
      pre.length === 0;
    return {
      ...base,
      kind: 'block',
      summary: `${why}: run ${d.run} blocked: ${message}`,
      desired: d,
      ops: already
        ? []
        : [...pre, recordOp(d.name, 'image missing', { phase: 'Blocked', reason: REASONS.imageMissing, message, run: d.run, specHash: d.hash }, counters)],
    };
  }
  if (ctx.pressure) {
    // An infrastructure hold, never a failure: looked at again (the disk read anew) until space is back.
    const message = ctx.pressure;
    const rec = base.status;
    const waiting = rec?.phase === 'Pending' && rec.reason === REASONS.diskPressure && rec.message === message && rec.run === d.run && pre.length === 0;
    return {
      ...base,
      kind: 'wait',
      summary: `${why}: run ${d.run} waits: ${message}`,
      desired: d,
      requeueAfterMs: DEFAULTS.diskPressureRecheckMs,
      ops: waiting
        ? []
        : [...pre, recordOp(d.name, 'disk pressure', { phase: 'Pending', reason: REASONS.diskPressure, message, run: d.run, specHash: d.hash }, counters)],
    };
  }
  const max = set?.policy.maxParallel ?? null;
  if (set && max !== null && set.running >= max) {
    const waiting = base.status?.phase === 'Pending' && base.status.reason === REASONS.waitingForSet && base.status.run === d.run && pre.length === 0;
    const cause = `set ${set.policy.name} runs maxParallel ${max}`;
    return {
      ...base,
      kind: 'wait',
      summary: `${why}: run ${d.run} waits: ${cause}`,
      desired: d,
      ops: waiting ? [] : [...pre, recordOp(d.name, cause, { phase: 'Pending', reason: REASONS.waitingForSet, run: d.run, specHash: d.hash }, counters)],
    };
  }
  if (ctx.slots > 0) {
    ctx.slots--;
    if (set) set.running++;
    return {
      ...base,
      kind,
      summary: `${why}: run ${d.run}`,
      desired: d,
      ops: [...pre, ...provisionOps(d, have, start, ctx.inp.snapshot.boot, preflight.image)],
    };
  }
  const waiting = base.status?.phase === 'Pending' && base.status.reason === REASONS.waitingForSlot && base.status.run === d.run && pre.length === 0;
  return {
    ...base,
    kind: 'wait',
    summary: `${why}: run ${d.run} waits for a slot (--max-running ${ctx.inp.maxRunning})`,
    desired: d,
    ops: waiting
      ? []
      : [
          ...pre,
          recordOp(
            d.name,
            `no free slot (--max-running ${ctx.inp.maxRunning})`,
            { phase: 'Pending', reason: REASONS.waitingForSlot, run: d.run, specHash: d.hash },
            counters,
          ),
        ],
  };
}

/** What one pass knows about an attempt with a spec: the pieces every step of planDesired reads. */
interface RunView {
  ctx: Ctx;
  inp: PlanInput;
  loaded: LoadedSpec;
  rec: AttemptStatus | undefined;
  base: { attempt: string; status?: AttemptStatus };
  name: string;
  hash: string;
  specChanged: boolean;
  /** The run the plan works toward, and its desired state. */
  run: number;
  d: DesiredAttempt;
  /** The main containers of every spec hash (the replaced run's is stopped). */
  mainsAll: ContainerSummary[];
  /** The current spec hash's resources, reduced to the run's main container and sidecars. */
  current: ObservedAttempt;
  main: ContainerSummary | undefined;
  sidecarsObs: ContainerSummary[];
  /** Operations that come first whatever follows: the end of a replaced run, stale resources removed. */
  pre: Operation[];
  /** The grader containers of the finished run the record holds (plan/grade.ts); any other grader is in `pre`'s removals. */
  graders: ContainerSummary[];
}

/**
 * Sorts what the engine shows of the attempt: resources of another spec hash, containers of
 * another run, duplicates and networks named twice are stale (removed by `pre`); the rest is
 * the current run's.
 */
function viewRun(ctx: Ctx, loaded: LoadedSpec, rec: AttemptStatus | undefined, obsAll: ObservedAttempt): RunView {
  const { inp } = ctx;
  const name = loaded.spec.name;
  const hash = loaded.hash;
  const base = { attempt: name, ...(rec ? { status: rec } : {}) };
  const specChanged = rec !== undefined && rec.specHash !== hash;
  // One look at each observed resource: made for this spec hash (current), or for another (stale).
  // Loops rather than a filter for each list: a pass makes this view for every attempt it knows.
  const mainsAll: ContainerSummary[] = [];
  const staleSpec: ObservedAttempt = { name, containers: [], networks: [], volumes: [] };
  const current: ObservedAttempt = { name, containers: [], networks: [], volumes: [] };
  let labeledMain: ContainerSummary | undefined;
  // Graders are the finished run's (plan/grade.ts): of the record's run and spec, while it is finished; any other goes.
  const graders: ContainerSummary[] = [];
  const staleGraders: ContainerSummary[] = [];
  const finished = rec !== undefined && !specChanged && FINISHED_PHASES.has(rec.phase) && !rec.ended;
  for (const c of obsAll.containers) {
    if (isGrader(c)) {
      (finished && c.labels[LABELS.run] === String(rec.run) && c.labels[LABELS.specHash] === hash ? graders : staleGraders).push(c);
      continue;
    }
    const main = isMain(c);
    if (main) mainsAll.push(c);
    if (c.labels[LABELS.specHash] !== hash) staleSpec.containers.push(c);
    else {
      current.containers.push(c);
      if (main) labeledMain ??= c;
    }
  }
  for (const n of obsAll.networks) (n.labels[LABELS.specHash] === hash ? current : staleSpec).networks.push(n);
  for (const v of obsAll.volumes) (v.labels[LABELS.specHash] === hash ? current : staleSpec).volumes.push(v);
  const labeledRun = Number(labeledMain?.labels[LABELS.run] ?? 0);
  const run = specChanged ? rec.run + 1 : Math.max(rec?.run ?? 0, labeledRun, 1);

  // A run that began under berth 0.1's names keeps them until it ends (found by its labels).
  const runLabel = String(run);
  const legacyName = LEGACY_NAMING.container(inp.instance, name);
  const legacy = current.containers.some((c) => c.name === legacyName && c.labels[LABELS.run] === runLabel && isMain(c));
  const d = desiredFor(inp, loaded, run, legacy);
  // This hash's containers of an earlier run are stale too.
  const staleRun: ContainerSummary[] = [];
  const runContainers: ContainerSummary[] = [];
  for (const c of current.containers) (c.labels[LABELS.run] === runLabel ? runContainers : staleRun).push(c);
  // By name only (namesOf): a finished run's desired state is not built unless an operation needs it.
  const names = namesOf(d);
  const main = runContainers.find((c) => isMain(c) && c.name === names.container);
  const sidecarsObs: ContainerSummary[] = [];
  const dupes: ContainerSummary[] = [];
  // Most runs have their main container only: sidecars and duplicates need looking for otherwise.
  if (runContainers.length > (main ? 1 : 0)) {
    const sidecarNames = new Set(names.sidecars.map((sc) => sc.name));
    for (const c of runContainers) {
      if (c === main) continue;
      if (!isMain(c) && sidecarNames.has(c.name) && !sidecarsObs.some((x) => x.name === c.name)) sidecarsObs.push(c);
      else dupes.push(c);
    }
  }
  current.containers = main ? [main, ...sidecarsObs] : [...sidecarsObs];
  const extraNetworks = duplicateNetworks(current.networks, current.containers);
  if (extraNetworks.length) current.networks = current.networks.filter((n) => !extraNetworks.includes(n));

  const v: RunView = { ctx, inp, loaded, rec, base, name, hash, specChanged, run, d, mainsAll, current, main, sidecarsObs, pre: [], graders };
  if (staleGraders.length) v.pre.push(...removeOps({ containers: staleGraders, networks: [], volumes: [] }, 'a grader of no finished run'));
  // Each only where there is something of its kind (most attempts of a pass: nothing at all).
  if (specChanged) v.pre.push(...endReplacedRun(v));
  if (hasAny(staleSpec)) v.pre.push(...removeOps(staleSpec, 'spec hash changed'));
  if (staleRun.length || dupes.length) v.pre.push(...removeOps({ containers: [...staleRun, ...dupes], networks: [], volumes: [] }, 'not the current run'));
  if (extraNetworks.length) v.pre.push(...removeOps({ containers: [], networks: extraNetworks, volumes: [] }, 'another network has the same name'));
  if (current.networks.length || current.volumes.length) v.pre.push(...dropRenamed(d, current));
  return v;
}

/** The spec changed while a run was going: that run is stopped and ends Failed/Replaced. */
function endReplacedRun({ rec, specChanged, mainsAll, name }: RunView): Operation[] {
  if (!(specChanged && rec && !FINISHED_PHASES.has(rec.phase) && rec.phase !== 'Invalid' && rec.phase !== 'Blocked' && rec.startedAt)) return [];
  const old = mainsAll.find((c) => c.labels[LABELS.specHash] === rec.specHash);
  return [
    ...(old && RUNNING_STATES.has(old.state) ? [stopOp(old, 'spec hash changed')] : []),
    finishOp(`attempt:${name}`, 'spec hash changed', {
      id: old?.id,
      resultsDir: rec.resultsDir,
      outcome: { phase: 'Failed', reason: REASONS.replaced, message: 'the spec changed while the run was going' },
    }),
  ];
}

/** Blocked by a container that carries our labels only through its image. */
function planSquatter({ inp, d, rec, base, name, run, hash }: RunView): AttemptAction | undefined {
  const container = namesOf(d).container;
  const squatter = inp.snapshot.foreign.find((c) => c.name === container);
  if (!squatter) return undefined;
  const reason = `container name ${container} is held by container ${squatter.id.slice(0, 12)} that berth did not create (its labels come from image ${squatter.image}); it is left alone`;
  const already = rec?.phase === 'Blocked' && rec.message === reason;
  return {
    ...base,
    kind: 'block',
    summary: reason,
    ops: already
      ? []
      : [recordOp(name, 'name held by a foreign container', { phase: 'Blocked', reason: REASONS.nameConflict, message: reason, run, specHash: hash })],
  };
}

/** Blocked at execution (a name held by someone else, a secret missing), or a create failed: look again after a while. */
function planBlockedWait({ inp, rec, base, main, specChanged, pre }: RunView): AttemptAction | undefined {
  if (specChanged || !rec || main || (rec.phase !== 'Blocked' && rec.reason !== REASONS.createFailed)) return undefined;
  // a missing image is looked for at every pass (the snapshot lists the images): no wait
  if (rec.reason === REASONS.imageMissing) return undefined;
  const blocked = rec.phase === 'Blocked';
  const again = Date.parse(rec.updatedAt) + (blocked ? BLOCKED_RETRY_MS : CREATE_RETRY_MS) - inp.now;
  if (again <= 0) return undefined;
  return {
    ...base,
    kind: blocked ? 'block' : 'wait',
    summary: `${blocked ? 'blocked' : 'create failed'}: ${rec.message ?? rec.reason ?? ''}`,
    ops: pre,
    requeueAfterMs: again,
  };
}

/** No run is underway (new, replaced, Blocked, Pending, or a set's child not admitted before): a new one starts. */
function planNewRun({ ctx, rec, base, d, current, main, specChanged, pre, run }: RunView): AttemptAction | undefined {
  // A set's child that was not admitted (failFast, maxFailed) is tried again: admission decides anew.
  const skipped = rec?.phase === 'Failed' && NOT_ADMITTED.has(rec.reason ?? '') && rec.run === run;
  if (main || !(specChanged || !rec || rec.phase === 'Invalid' || rec.phase === 'Blocked' || rec.phase === 'Pending' || skipped)) return undefined;
  return startRun(
    ctx,
    base,
    d,
    current,
    pre,
    specChanged && rec?.phase !== 'Invalid' ? 'replace' : 'provision',
    specChanged ? 'spec hash changed' : rec?.phase === 'Blocked' ? 'blocked before; trying again' : 'not found',
  );
}

/** A finished run of this spec: rerun, retry, expire (TTL), or nothing. */
function planFinished(v: RunView, rec: AttemptStatus): AttemptAction {
  const { ctx, inp, loaded, base, d, current, sidecarsObs, pre, name } = v;
  pre.push(...stopSidecars(sidecarsObs, 'the attempt finished'));
  const holders = secretHolders(d, current.containers);
  pre.push(...scrubOps(d, holders));
  current.containers = current.containers.filter((c) => !holders.includes(c));
  const finishedAt = rec.finishedAt ? Date.parse(rec.finishedAt) : inp.now;
  // An infrastructure death is re-run under its own budget (--infra-retries), never the spec's retries.
  const infra = isInfraFailure(rec.reason);
  const used = infra ? (rec.infraRetriesUsed ?? 0) : rec.retriesUsed;
  const budget = infra ? (inp.infraRetries ?? DEFAULTS.infraRetries) : loaded.spec.retries;
  const retryable = rec.phase === 'Failed' && (infra || RETRYABLE_REASONS.has(rec.reason ?? '')) && used < budget;
  if (rec.rerunRequested?.run === rec.run) {
    const next = desiredFor(inp, loaded, rec.run + 1);
    const oldRun = removeOps({ containers: [...current.containers, ...v.graders], networks: [], volumes: [] }, 'rerun requested');
    const have: ObservedAttempt = { ...current, containers: [] };
    return startRun(
      ctx,
      base,
      next,
      have,
      [...pre, ...oldRun, ...dropRenamed(next, have)],
      'retry',
      `run ${rec.run} ${rec.phase}; rerun requested (berth rerun)`,
    );
  }
  if (retryable) {
    const which = `${infra ? 'infra retry' : 'retry'} ${used + 1}/${budget}`;
    const at = finishedAt + retryBackoffMs(used + 1, inp.retryBaseMs);
    if (at > inp.now) return { ...base, kind: 'wait', summary: `${which} after back-off`, ops: pre, requeueAfterMs: at - inp.now };
    const next = desiredFor(inp, loaded, rec.run + 1);
    const oldRun = removeOps({ containers: [...current.containers, ...v.graders], networks: [], volumes: [] }, which);
    const have: ObservedAttempt = { ...current, containers: [] };
    return startRun(ctx, base, next, have, [...pre, ...oldRun, ...dropRenamed(next, have)], 'retry', `run ${rec.run} ${rec.reason ?? 'failed'}; ${which}`);
  }
  // spec.grade: the run's grade before anything else of a finished run (plan/grade.ts)
  const score = loaded.set?.set.score ?? undefined;
  const graded = planGrade({ inp, loaded, rec, base, graders: v.graders, pre, ...(score ? { score } : {}) });
  if (graded) return graded;
  const ttl = loaded.spec.ttlSecondsAfterFinished;
  if (ttl !== null && hasAny(current)) {
    const at = finishedAt + ttl * 1000;
    if (at <= inp.now) {
      return {
        ...base,
        kind: 'expire',
        summary: `finished ${rec.phase}; ttlSecondsAfterFinished ${ttl} passed`,
        ops: [...pre, ...removeOps(current, 'ttl expired'), recordOp(name, 'ttl expired', { phase: rec.phase, collectedAt: new Date(inp.now).toISOString() })],
      };
    }
    return { ...base, kind: pre.length ? 'collect' : 'leave', summary: `finished ${rec.phase}; kept until its TTL`, ops: pre, requeueAfterMs: at - inp.now };
  }
  return { ...base, kind: pre.length ? 'collect' : 'leave', summary: `finished ${rec.phase}`, ops: pre };
}

/** The run's main container runs: attest it from the list (networks, sidecars), restart a sidecar, stop at the deadline, adopt, or attest deeply. */
function planRunning(v: RunView, main: ContainerSummary): AttemptAction {
  const { inp, loaded, rec, base, d, current, sidecarsObs, pre, run } = v;
  const checks = attestListed(main, mainWant(d, rec?.run === run && rec.containerId === main.id ? rec.image?.id : undefined));
  for (const n of [d.network, d.egressNetwork]) {
    if (!n) continue;
    const net = current.networks.find((x) => x.name === n.name);
    const ok = !!net && net.internal === n.internal;
    checks.push({
      name: `network ${n.name}`,
      ok,
      detail: net
        ? `${net.name} is ${net.internal ? 'internal' : 'routed'}${ok ? '' : ` (must be ${n.internal ? 'internal' : 'routed'})`}`
        : `${n.name} is missing`,
    });
  }
  // Volumes: the driver and options berth made them with, not only their labels (from the list, no extra call).
  for (const want of d.volumes) {
    const vol = current.volumes.find((x) => x.name === want.name);
    if (!vol || want.driver === undefined) continue;
    const show = (o: Record<string, string>) =>
      Object.entries(o)
        .sort(([a], [b]) => (a < b ? -1 : 1))
        .map(([k, val]) => `${k}=${val}`)
        .join(',') || 'no options';
    const opts = vol.options === undefined ? undefined : show(vol.options);
    const ok = vol.driver === want.driver && (opts === undefined || opts === show(want.options ?? {}));
    checks.push({
      name: `volume ${want.name}`,
      ok,
      detail: `${want.name}: driver ${vol.driver}, ${opts ?? 'options not reported'}${ok ? '' : ` (berth made it ${want.driver}, ${show(want.options ?? {})})`}`,
    });
  }
  // Sidecars: each must attest too; one that is not running is started again.
  const restart: Operation[] = [];
  for (const [i, sc] of d.sidecars.entries()) {
    const o = sidecarsObs.find((c) => c.name === sc.name);
    if (o && RUNNING_STATES.has(o.state)) {
      checks.push(...attestListed(o, sidecarWant(sc)).map((c) => ({ ...c, name: `${sc.alias}: ${c.name}`, detail: `${sc.alias}: ${c.detail}` })));
      continue;
    }
    const why = `${sc.alias} ${o ? o.state : 'missing'} while the attempt runs`;
    if (o) restart.push(removeContainerOp(o, why));
    restart.push(...sidecarOps(d, i, why, true));
  }
  const bad = failedCause(checks);
  const id = main.id;
  const resultsDir = rec?.resultsDir ?? d.resultsDir;
  const sidecars = harvestList(d, sidecarsObs);
  const stopAndEnd = (why: string, outcome: RunEnd): AttemptAction => ({
    ...base,
    kind: 'stop',
    summary: why,
    desired: d,
    ops: [
      ...pre,
      stopOp(main, why),
      ...stopSidecars(sidecarsObs, why),
      finishOp(`container:${main.name}`, why, { id, resultsDir, sidecars, outcome }),
      ...scrubOps(d, current.containers),
    ],
  });
  if (bad) return stopAndEnd(bad, { phase: 'Failed', reason: REASONS.attestationFailed, message: bad });
  if (restart.length) return { ...base, kind: 'restart', summary: 'a sidecar is not running', desired: d, ops: [...pre, ...restart] };
  // Its start was asked of an engine that has restarted since (the boot recorded before the start
  // is not the engine's now) and never recorded Running: an engine crash cut the start short. The
  // engine may then show the half-made task as running (started at the zero time) although its
  // process never goes on, and had it run, it ran across the crash. As for a created one
  // (planCreated): never taken for this run, the run ends EngineRestarted; --infra-retries decide.
  const boot = inp.snapshot.boot;
  if (
    rec &&
    rec.phase !== 'Running' &&
    rec.intent?.copied &&
    rec.containerId === id &&
    rec.run === run &&
    rec.engineBoot &&
    boot &&
    rec.engineBoot.id !== boot.id
  ) {
    const why = 'the engine restarted during the start';
    return {
      ...stopAndEnd(why, {
        phase: 'Failed',
        reason: REASONS.engineRestarted,
        message: `the engine restarted (it came back at ${boot.at}) while the container was being started; what it shows running is not taken for this run, and it is not started again`,
      }),
      ...mayRunAgain(inp, loaded, rec),
    };
  }
  const deadline = rec?.deadlineAt ? Date.parse(rec.deadlineAt) : undefined;
  if (deadline !== undefined && deadline <= inp.now) {
    const why =
      rec?.deadlineSource === 'default' && rec.startedAt
        ? `default deadline ${Math.round((deadline - Date.parse(rec.startedAt)) / 1000)}s (--default-deadline) exceeded`
        : `deadlineSeconds ${loaded.spec.deadlineSeconds} exceeded`;
    return stopAndEnd(why, { phase: 'TimedOut', reason: REASONS.deadlineExceeded, message: why });
  }
  const overDisk = diskExceeded(rec, inp.diskUsage?.get(loaded.spec.name), id);
  if (overDisk) return stopAndEnd(overDisk, { phase: 'Failed', reason: REASONS.diskLimitExceeded, message: overDisk });
  const requeue = deadline !== undefined ? { requeueAfterMs: deadline - inp.now } : {};
  if (!rec || rec.phase !== 'Running' || rec.containerId !== id || rec.run !== run) {
    return {
      ...base,
      kind: 'adopt',
      summary: 'running container found; recording it',
      desired: d,
      ops: [
        ...pre,
        {
          type: 'adopt',
          resource: `container:${main.name}`,
          id,
          desired: d,
          counters: runCounters(rec, d),
          cause: rec ? `status says ${rec.phase}` : 'no status record',
        },
      ],
      ...requeue,
    };
  }
  const last = rec.lastAttestation?.depth === 'inspect' ? Date.parse(rec.lastAttestation.at) : 0;
  if (inp.now - last >= inp.attestIntervalMs) {
    return {
      ...base,
      kind: 'attest',
      summary: 'running; deep attestation due',
      desired: d,
      ops: [
        ...pre,
        {
          type: 'attest',
          resource: `container:${main.name}`,
          id,
          desired: d,
          cause: last ? 'attestation older than the interval' : 'never attested by inspect',
        },
      ],
      ...requeue,
    };
  }
  return { ...base, kind: pre.length ? 'collect' : 'leave', summary: 'running', ops: pre, ...requeue };
}

/** The run's main container exited (or died): the finish reads its end from the engine. */
function planExited(v: RunView, main: ContainerSummary): AttemptAction {
  const { inp, loaded, rec, base, d, current, sidecarsObs, pre } = v;
  const sidecars = harvestList(d, sidecarsObs);
  return {
    ...base,
    kind: 'finish',
    summary: `container ${main.state}`,
    desired: d,
    ...mayRunAgain(inp, loaded, rec),
    ops: [
      ...pre,
      ...stopSidecars(sidecarsObs, 'the attempt finished'),
      finishOp(`container:${main.name}`, `container ${main.state}`, {
        id: main.id,
        resultsDir: rec?.resultsDir ?? d.resultsDir,
        sidecars,
        // an AttemptSet child's score file; with spec.grade, the score comes only from the grader
        score: loaded.spec.grade ? undefined : loaded.set?.set.score?.file,
      }),
      ...scrubOps(d, current.containers),
    ],
  };
}

/**
 * The run's main container was created and never started: provisioning was interrupted. Once
 * the copy is recorded done, a start may already be on its way in the engine: only (re)start,
 * which is idempotent. Before that, no start was ever asked for, and the copy may be partial:
 * start over, nothing ran.
 */
function planCreated(v: RunView, main: ContainerSummary): AttemptAction {
  const { ctx, inp, loaded, rec, base, d, current, sidecarsObs, pre, name, run } = v;
  if (rec?.intent?.copied && rec.containerId === main.id && rec.run === run) {
    // The engine refused to start this very container: starting it again is refused again
    // (after an engine crash cut a start short, the engine keeps a half-made task under the
    // container's id for good), and its process may have begun. The run ends StartFailed
    // (nothing of it is reused: a retry is a new run with a new container and results
    // folder), and --infra-retries decides whether a new run follows.
    const refused = rec.startFailure;
    const end = (why: string, outcome: RunEnd): AttemptAction => ({
      ...base,
      kind: 'finish',
      summary: why,
      desired: d,
      ...mayRunAgain(inp, loaded, rec),
      ops: [
        ...pre,
        ...stopSidecars(sidecarsObs, 'the main container could not start'),
        finishOp(`attempt:${name}`, why, { resultsDir: rec.resultsDir ?? d.resultsDir, sidecars: harvestList(d, sidecarsObs), outcome }),
        ...scrubOps(d, current.containers),
      ],
    });
    if (refused && refused.run === run && refused.containerId === main.id) {
      return end('start refused by the engine', {
        phase: 'Failed',
        reason: REASONS.startFailed,
        message: `the engine refused to start the container: ${refused.message}`,
      });
    }
    // The engine restarted since the boot recorded before the start was asked for: a start
    // that reached the old engine may have run the process although the engine now calls the
    // container never started, and a start now would run it a second time (seen: the engine
    // clears its stale task and starts the process again). Never twice: the run ends.
    const now = inp.snapshot.boot;
    if (rec.engineBoot && now && rec.engineBoot.id !== now.id) {
      return end('the engine restarted during the start', {
        phase: 'Failed',
        reason: REASONS.engineRestarted,
        message: `the engine restarted (it came back at ${now.at}) while the container was being started; its process may have run, so it is not started again`,
      });
    }
    return {
      ...base,
      kind: 'provision',
      summary: 'provisioning was interrupted after the copy',
      desired: d,
      ops: [...pre, ...startOps(d, 'created; fixture and secrets already copied')],
    };
  }
  const again = removeOps({ containers: [main], networks: [], volumes: [] }, 'created but never started: provisioning was interrupted');
  return startRun(ctx, base, d, { ...current, containers: [] }, [...pre, ...again], 'provision', 'provisioning was interrupted');
}

/** No container for the current run: a run that had started vanished (Failed/Lost, never re-run silently); else provision. */
function planNoContainer({ ctx, rec, base, d, current, pre, name, run }: RunView): AttemptAction {
  if (rec && rec.run === run && (rec.phase === 'Running' || rec.startedAt)) {
    return {
      ...base,
      kind: 'finish',
      summary: 'container vanished',
      ops: [
        ...pre,
        finishOp(`attempt:${name}`, 'container vanished', {
          resultsDir: rec.resultsDir,
          outcome: { phase: 'Failed', reason: REASONS.lost, message: 'the container vanished from the engine while the attempt was running' },
        }),
      ],
    };
  }
  return startRun(ctx, base, d, current, pre, 'provision', rec?.intent ? 'provisioning was interrupted' : 'not found');
}

/**
 * An attempt with a spec, in named steps: a harvest due or a `berth delete` first; then what
 * the engine shows sorted (viewRun); a foreign squatter, a Blocked wait, a new run, a finished
 * run; else the run underway by its main container's state.
 */
function planDesired(ctx: Ctx, loaded: LoadedSpec, rec: AttemptStatus | undefined, obsAll: ObservedAttempt): AttemptAction {
  const base = { attempt: loaded.spec.name, ...(rec ? { status: rec } : {}) };
  if (rec?.ended) return planHarvest(ctx.inp, base, rec, obsAll);
  if (rec?.deleted && rec.deleted.specHash === loaded.hash) return planDeleted(base, rec, obsAll);
  const v = viewRun(ctx, loaded, rec, obsAll);
  const early = planSquatter(v) ?? planBlockedWait(v) ?? planNewRun(v);
  if (early) return early;
  if (rec && !v.specChanged && FINISHED_PHASES.has(rec.phase)) return planFinished(v, rec);
  // The run is underway (or its record was lost): look at its container.
  const main = v.main;
  if (!main) return planNoContainer(v);
  if (RUNNING_STATES.has(main.state)) return planRunning(v, main);
  if (main.state === 'exited' || main.state === 'dead') return planExited(v, main);
  if (main.state === 'created') return planCreated(v, main);
  return { ...base, kind: v.pre.length ? 'collect' : 'leave', summary: `container ${main.state}`, ops: v.pre };
}

function sameIssues(a: readonly SpecIssue[] | undefined, b: readonly SpecIssue[]): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b);
}

/** Whether a spec file (relative to the specs folder) lies in a file or folder that could not be read. */
function unreadable(inp: PlanInput, source: string): boolean {
  if (inp.unreadableFiles.has(source)) return true;
  for (const dir of inp.unreadableFolders) if (source.startsWith(`${dir}/`)) return true;
  return false;
}

function planUndesired(inp: PlanInput, name: string, rec: AttemptStatus | undefined, obs: ObservedAttempt): AttemptAction | undefined {
  const base = { attempt: name, ...(rec ? { status: rec } : {}) };
  if (rec?.ended) return planHarvest(inp, base, rec, obs);
  if (inp.protectedNames.has(name)) {
    const errors = inp.invalid.get(name) ?? [];
    const first = errors[0];
    const msg = first ? `${formatIssue(first)}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}` : 'the spec is invalid';
    if (!rec || (rec.phase === 'Invalid' && !sameIssues(rec.specErrors, errors))) {
      const reason = errors.some((e) => e.code === 'duplicate-name') ? REASONS.duplicateName : REASONS.invalidSpec;
      return {
        ...base,
        kind: 'invalid',
        summary: msg,
        ops: [
          recordOp(name, 'spec invalid', {
            phase: 'Invalid',
            reason,
            message: msg,
            specErrors: [...errors],
            run: rec?.run ?? 0,
            specHash: rec?.specHash ?? '',
          }),
        ],
      };
    }
    return { ...base, kind: 'leave', summary: `spec invalid, left as it is: ${msg}`, ops: [] };
  }
  const sources = new Set([...obs.containers, ...obs.networks, ...obs.volumes].map((r) => r.labels[LABELS.source] ?? ''));
  if ((rec?.source && unreadable(inp, rec.source)) || [...sources].some((s) => unreadable(inp, s))) {
    return { ...base, kind: 'leave', summary: 'its spec file cannot be read; left as it is', ops: [] };
  }
  if (inp.specs.length === 0 && inp.protectedNames.size === 0 && !inp.allowEmpty) {
    return { ...base, kind: 'leave', summary: 'the specs source yields no attempts; left as it is (--allow-empty lets reconcile remove it)', ops: [] };
  }
  if (!hasAny(obs))
    return rec ? { ...base, kind: 'forget', summary: 'no spec', ops: [{ type: 'forget', resource: `attempt:${name}`, cause: 'no spec' }] } : undefined;
  const ops: Operation[] = [];
  const main = obs.containers.find(isMain);
  if (main && (!rec || !FINISHED_PHASES.has(rec.phase))) {
    if (RUNNING_STATES.has(main.state)) ops.push(stopOp(main, 'no spec'));
    ops.push(
      finishOp(`container:${main.name}`, 'no spec', {
        id: main.id,
        resultsDir: rec?.resultsDir,
        outcome: { phase: 'Failed', reason: REASONS.deleted, message: 'the spec was deleted' },
      }),
    );
  }
  ops.push(...removeOps(obs, 'no spec'));
  ops.push({ type: 'forget', resource: `attempt:${name}`, cause: 'no spec' });
  return { ...base, kind: 'collect', summary: 'no spec', ops };
}

/**
 * An attempt `berth delete` marked (for its current spec hash): its run is stopped and ends
 * Failed (Deleted), every resource goes, the record and the results stay; nothing more is planned
 * for it until its spec changes or `berth rerun` clears the mark.
 */
function planDeleted(base: { attempt: string; status?: AttemptStatus }, rec: AttemptStatus, obs: ObservedAttempt): AttemptAction {
  const name = rec.name;
  const cause = 'deleted (berth delete)';
  const ops: Operation[] = [];
  const main = obs.containers.find(isMain);
  const finished = FINISHED_PHASES.has(rec.phase);
  if (main && !finished) {
    if (RUNNING_STATES.has(main.state)) ops.push(stopOp(main, cause));
    ops.push(
      finishOp(`container:${main.name}`, cause, {
        id: main.id,
        resultsDir: rec.resultsDir,
        outcome: { phase: 'Failed', reason: REASONS.deleted, message: 'berth delete stopped the run' },
      }),
    );
  } else if (!finished) {
    ops.push(recordOp(name, cause, { phase: 'Failed', reason: REASONS.deleted, message: 'berth delete removed it before it ran' }));
  }
  ops.push(...removeOps(obs, cause));
  return { ...base, kind: ops.length ? 'collect' : 'leave', summary: `${cause}; not run again until its spec changes or berth rerun`, ops };
}

export function plan(inp: PlanInput): Plan {
  const only = inp.only;
  const desiredNames = new Set(inp.specs.map((s) => s.spec.name));
  // Only the attempts planned need sorting: their admission order among themselves is the same
  // (a controller's batch of a few attempts among 10,000 sorts a few).
  const specs = (only ? inp.specs.filter((s) => only.has(s.spec.name)) : [...inp.specs]).sort(admissionOrder);
  const running = [...inp.snapshot.attempts.values()].filter((a) => a.containers.some((c) => isMain(c) && RUNNING_STATES.has(c.state))).length;
  const ctx: Ctx = {
    inp,
    slots: Math.max(0, inp.maxRunning - running - (inp.reservedSlots ?? 0)),
    sets: setStates(inp, RUNNING_STATES),
    missing: new Map(),
    resolved: new Map(),
  };
  const pressure = diskPressure(inp.disk);
  if (pressure) ctx.pressure = pressure;
  const actions: AttemptAction[] = [];
  const unchanged = new Map<string, AttemptStatus['phase']>();

  // Attempts already running keep their slot; stopping ones free theirs only on the next pass.
  for (const loaded of specs) {
    const name = loaded.spec.name;
    const planned = withHarvestCaps(planDesired(ctx, loaded, inp.statuses.get(name), inp.snapshot.attempts.get(name) ?? EMPTY), loaded.spec.harvest);
    const a = loaded.set ? { ...planned, set: loaded.set.set.name } : planned;
    if (a.ops.length === 0 && (a.kind === 'leave' || a.kind === 'wait' || a.kind === 'block')) {
      unchanged.set(name, a.status?.phase ?? 'Pending');
      if (a.kind === 'leave' && a.requeueAfterMs === undefined) continue;
    }
    actions.push(a);
  }
  const known = (n: string) => inp.snapshot.attempts.has(n) || inp.statuses.has(n) || inp.protectedNames.has(n);
  const others = only ? [...only].filter(known) : [...new Set([...inp.snapshot.attempts.keys(), ...inp.statuses.keys(), ...inp.protectedNames])];
  for (const name of others.filter((n) => !desiredNames.has(n)).sort(cmp)) {
    const a = planUndesired(inp, name, inp.statuses.get(name), inp.snapshot.attempts.get(name) ?? EMPTY);
    if (!a) continue;
    if (a.ops.length === 0) unchanged.set(name, a.status?.phase ?? 'Invalid');
    else actions.push(a);
  }
  const emptySource = inp.specs.length === 0 && inp.protectedNames.size === 0 && (inp.snapshot.attempts.size > 0 || inp.statuses.size > 0);
  const missingImages = [...ctx.missing].sort(([a], [b]) => cmp(a, b)).map(([image, attempts]) => ({ image, attempts: [...attempts].sort(cmp) }));
  return {
    at: inp.now,
    actions,
    unchanged,
    ...(emptySource ? { emptySource: inp.allowEmpty ? 'allowed' : 'held' } : {}),
    ...(missingImages.length ? { missingImages } : {}),
  };
}

/**
 * The gate of a new run (pure): whether a run the planner wants to start may start now, and if
 * not, what it waits for or why it is blocked. In order: a set that admits no more (failFast,
 * maxFailed: skipped), the image preflight (missing: Blocked/ImageMissing), a failed build
 * (Blocked/BuildFailed), disk pressure (Pending/DiskPressure), a build to make (Pending/Building,
 * asked of the builder: build-gate.ts), the set's maxParallel (Pending/WaitingForSet), a free slot
 * (--max-running: provisioned now, else Pending/WaitingForSlot). The run's counters and whether
 * its results folder is already its own are decided here too, as the run begins.
 */
import { buildTag, DEFAULTS, REASONS } from '../constants';
import type { NormalizedBuild, PullPolicy } from '../spec/types';
import { buildBases } from './build-from';
import { askBuild, builtHeld, gateBuild, type BuildLimits, type BuildRequest, type BuildVerdict } from './build-gate';
import { hasEgressProxy } from '../desired/attempt';
import type { DesiredAttempt } from '../desired/types';
import { isImageId, resolveImage, type HeldImage, type ImageIndex } from '../observe/images';
import type { ObservedAttempt } from '../observe/types';
import { pinKeyOf, pinOf } from '../status/pins';
import type { AttemptStatus } from '../status/types';
import { desiredFor } from './desired-for';
import { heldRun } from './held';
import { isInfraFailure } from './exit-outcome';
import type { PlanInput } from './input';
import { provisionOps, recordOp } from './ops';
import type { SetState } from './set-admission';
import type { AttemptAction, ImageChoice, Operation, RunCounters, RunStart } from './types';
import { askPull, gateRun, runKey, type GatedImage, type PullRequest } from './pull-gate';
import { pinnedPullRef, pullWindow, type PullTurn } from './pull-window';

/** What one plan shares across its attempts: its input, and what admitting them uses up. */
export interface PlanCtx {
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
  /** Pulls this plan asks for (plan/pull-gate.ts), by reference, in admission order. */
  pulls: Map<string, PullRequest>;
  /** Free slots when the plan began: with --prefetch, how far ahead images are pulled (pull-window.ts). */
  freeAtStart: number;
  /** Each waiting attempt's turn to pull (pull-window.ts), computed once, when a run first needs a pull. */
  turns?: ReadonlyMap<string, PullTurn>;
  /** Builds this plan asks for (plan/build-gate.ts), by build hash, in admission order. */
  builds: Map<string, BuildRequest>;
  /** (issue 55) One copy of each line many waiting attempts share (a pass may hold 100,000 of them). */
  texts?: Map<string, string>;
}

/** `make()`'s text, made once per plan for all the attempts that say the same. */
function shared(ctx: PlanCtx, key: string, make: () => string): string {
  const texts = (ctx.texts ??= new Map());
  let t = texts.get(key);
  if (t === undefined) texts.set(key, (t = make()));
  return t;
}

function resolveOnce(ctx: PlanCtx, index: ImageIndex, ref: string): HeldImage | undefined {
  if (ctx.resolved.has(ref)) return ctx.resolved.get(ref);
  const h = resolveImage(index, ref);
  ctx.resolved.set(ref, h);
  return h;
}

/** Whether the snapshot's images hold `ref` (true when the snapshot did not list them). */
function held(ctx: PlanCtx, ref: string): boolean {
  const index = ctx.inp.snapshot.images;
  return !index || resolveOnce(ctx, index, ref) !== undefined;
}

/**
 * The preflight of a new run: the images it needs that the engine lacks (its own, or for a set's
 * child the id its set pinned; its sidecars'; the egress proxy's), each with a message, and the
 * image a set's child is made from (ImageChoice). Nothing is checked when the snapshot did not
 * list the images; a pin is used all the same.
 */
function imagePreflight(ctx: PlanCtx, d: DesiredAttempt): { missing: { image: string; message: string }[]; gated: GatedImage[]; image?: ImageChoice } {
  const { inp } = ctx;
  const index = inp.snapshot.images;
  const ref = d.loaded.spec.image;
  const member = d.loaded.set;
  // a built image is named by its content (its build hash): never pinned, and gated by the build gate (builds below), not here
  const built = d.loaded.spec.build !== undefined;
  const key = member && !built ? pinKeyOf(member.set) : undefined;
  const pinned = member && key ? pinOf(inp.pins?.get(member.set.name), key, ref) : undefined;
  const missing: { image: string; message: string }[] = [];
  // pulls (plan/pull-gate.ts): an image berth may pull is gated, not missing; with no puller, as before
  const policies = d.loaded.spec.pullPolicies;
  const pulls = inp.pulls !== undefined && !isImageId(ref);
  const gated: GatedImage[] = [];
  let image: ImageChoice | undefined;
  if (pinned) {
    image = { id: pinned.id };
    const digestRef = pulls && policies.main !== 'Never' ? pinnedPullRef(ref, pinned.repoDigests) : undefined;
    if (index && !index.byId.has(pinned.id) && digestRef) gated.push({ ref: digestRef, shown: ref, policy: 'IfNotPresent', held: false, of: '' });
    else if (index && !index.byId.has(pinned.id))
      missing.push({ image: ref, message: `image ${ref} is pinned for set ${member?.set.name ?? ''} to ${pinned.id}, which is not on the engine` });
  } else if (index && !built) {
    const held = resolveOnce(ctx, index, ref);
    if (pulls && policies.main !== 'Never' && (!held || policies.main === 'Always'))
      gated.push({ ref, shown: ref, policy: policies.main, held: !!held, of: '' });
    else if (!held) missing.push({ image: ref, message: `image ${ref} is not on the engine (pull, load or tag it)` });
    if (held && member && key && (key.pinKey !== undefined || key.templateHash !== undefined) && !isImageId(ref))
      image = { id: held.id, pin: { set: member.set.name, key, repoDigests: held.repoDigests } };
  }
  if (index) {
    // from the spec, not the desired state: a child waiting for a slot is never built (desired/lazy.ts)
    const s = d.loaded.spec;
    const proxy = hasEgressProxy(s) ? (inp.policy.egress?.proxyImage ?? DEFAULTS.egressProxyImage) : undefined;
    if (proxy !== undefined && !held(ctx, proxy))
      missing.push({
        image: proxy,
        message: `the egress proxy image ${proxy} is not on the engine (build it: make images, or name another with --egress-proxy-image)`,
      });
    for (const sc of s.sidecars) {
      const policy = policies.sidecars[sc.name] ?? DEFAULTS.imagePullPolicy;
      const has = held(ctx, sc.image);
      if (inp.pulls !== undefined && policy !== 'Never' && (!has || policy === 'Always') && !isImageId(sc.image))
        gated.push({ ref: sc.image, shown: sc.image, policy, held: has, of: `sidecar ${sc.name}` });
      else if (!has) missing.push({ image: sc.image, message: `image ${sc.image} of sidecar ${sc.name} is not on the engine (pull, load or tag it)` });
    }
    // a build's FROM images (plan/build-from.ts): pulled by berth before the build, when it is to be built
    const builds: [NormalizedBuild | undefined, PullPolicy, string][] = [
      [s.build, policies.main, 'the build'],
      [s.grade?.build, policies.grade, "the grader's build"],
    ];
    for (const [b, policy, of] of builds) {
      if (!b || !b.from.length || builtHeld(resolveOnce(ctx, index, buildTag(b.hash)), b)) continue;
      const bases = buildBases(b, policy, of, (r) => held(ctx, r), inp.pulls !== undefined);
      gated.push(...bases.gated);
      missing.push(...bases.missing);
    }
  }
  return { missing, gated, ...(image ? { image } : {}) };
}

/** The counters of a run with none spent yet, shared (never changed). */
const FRESH_COUNTERS: RunCounters = Object.freeze({ retriesUsed: 0 });

/** The builds run `d` needs (its own image's, its grader's), each with the gate's verdict; none for an attempt that builds nothing. */
function buildsOf(ctx: PlanCtx, d: DesiredAttempt, rec: AttemptStatus | undefined): { build: NormalizedBuild; verdict: BuildVerdict }[] {
  const s = d.loaded.spec;
  const wanted: [NormalizedBuild, '' | 'grader'][] = [];
  if (s.build) wanted.push([s.build, '']);
  if (s.grade?.build) wanted.push([s.grade.build, 'grader']);
  const index = ctx.inp.snapshot.images;
  // the snapshot did not list the images (it always does): nothing is gated
  if (!wanted.length || !index) return [];
  return wanted.map(([build, of]) => ({ build, verdict: gateBuild(build, resolveOnce(ctx, index, buildTag(build.hash)), ctx.inp.builds, rerunAt(rec), of) }));
}

/** When `berth rerun` last asked for a new run of the attempt (ms), if it did. */
function rerunAt(rec: AttemptStatus | undefined): number | undefined {
  const at = rec?.rerunRequested?.at;
  return at ? Date.parse(at) : undefined;
}

/** What a build for `d` may use: its resources (resources.disk, else --default-disk). */
function buildLimits(ctx: PlanCtx, d: DesiredAttempt): BuildLimits {
  const r = d.loaded.spec.resources;
  return { diskBytes: r.diskBytes ?? ctx.inp.policy.defaultDiskBytes ?? null, memoryBytes: r.memoryBytes, cpus: r.cpus };
}

/**
 * The retry counters run `d` begins with after the record `rec`. A record that holds this very
 * run already (an interrupted or refused provisioning, a wait for a slot) keeps its own.
 * Otherwise a failed run re-run counts a retry, an infrastructure death an infra retry instead
 * (never the spec's retries); `berth rerun` and a new spec hash start both afresh.
 */
export function runCounters(rec: AttemptStatus | undefined, d: DesiredAttempt): RunCounters {
  if (!rec || rec.specHash !== d.hash) return FRESH_COUNTERS;
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

/**
 * A new run that cannot start, settled (kind `block`): Blocked with `reason` and `message`,
 * recorded once (nothing to do when the record says so already for this run and spec).
 */
function blockedRun(
  base: { attempt: string; status?: AttemptStatus },
  d: DesiredAttempt,
  pre: Operation[],
  counters: RunCounters,
  why: string,
  reason: typeof REASONS.imageMissing | typeof REASONS.buildFailed,
  what: string,
  message: string,
): AttemptAction {
  const rec = base.status;
  const already =
    rec?.phase === 'Blocked' && rec.reason === reason && rec.message === message && rec.run === d.run && rec.specHash === d.hash && pre.length === 0;
  return {
    ...base,
    kind: 'block',
    summary: `${why}: run ${d.run} blocked: ${message}`,
    desired: d,
    ops: already ? [] : [...pre, recordOp(d.name, what, { phase: 'Blocked', reason, message, run: d.run, specHash: d.hash }, counters)],
  };
}

/** A new run: provisioned now if a slot is free, else it waits in Pending. */
export function startRun(
  ctx: PlanCtx,
  base: { attempt: string; status?: AttemptStatus },
  d: DesiredAttempt,
  have: ObservedAttempt,
  pre: Operation[],
  kind: 'provision' | 'replace' | 'retry',
  why: string,
): AttemptAction {
  // its spec is broken now and this is its last good one: what runs goes on, nothing new starts
  if (d.loaded.held) return heldRun(base, d.loaded, why);
  // A results folder is never reused: a new run gets a number above every run folder on disk.
  const floor = ctx.inp.runFloors?.get(d.name) ?? 0;
  if (floor >= d.run) {
    d = desiredFor(ctx.inp, d.loaded, floor + 1);
    have = { ...have, containers: [] };
  }
  const counters = runCounters(base.status, d);
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
    // pushed, not copied: a set of 100,000 children may all miss one image
    for (const m of preflight.missing) {
      const names = ctx.missing.get(m.image);
      if (names) names.push(d.name);
      else ctx.missing.set(m.image, [d.name]);
    }
    return blockedRun(base, d, pre, counters, why, REASONS.imageMissing, 'image missing', preflight.missing.map((m) => m.message).join('; '));
  }
  // ---- builds (plan/build-gate.ts): images built from a Dockerfile before the run ----
  const builds = buildsOf(ctx, d, base.status);
  const failedBuild = builds.find((b) => b.verdict.type === 'failed');
  if (failedBuild) {
    // tried again only when the build hash changes (a new spec hash) or on berth rerun: no wait, settled
    const message = failedBuild.verdict.type === 'failed' ? failedBuild.verdict.message : '';
    return blockedRun(base, d, pre, counters, why, REASONS.buildFailed, 'build failed', message);
  }
  // ---- end builds (failed) ----
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
  // ---- pulls (plan/pull-gate.ts): images pulled before the run, prefetched within the window ----
  const turn = preflight.gated.length ? pullWindow(ctx, d.name) : 'now';
  const gate = preflight.gated.length ? gateRun(preflight.gated, runKey(d.name, d.run), ctx.inp.now, ctx.inp.pulls, turn !== 'later') : undefined;
  if (gate) {
    if (gate.type === 'pull')
      for (const r of gate.refs)
        askPull(ctx.pulls, r, d.name, runKey(d.name, d.run), preflight.gated.find((g) => g.ref === r && g.platform)?.platform, turn === 'ahead');
    const rec = base.status;
    const record =
      gate.type === 'backoff'
        ? { phase: 'Blocked' as const, reason: REASONS.imagePullBackOff, message: gate.message }
        : { phase: 'Pending' as const, reason: gate.type === 'pull' ? REASONS.pulling : REASONS.waitingForSlot, message: gate.message };
    const same = rec?.phase === record.phase && rec.reason === record.reason && rec.message === record.message && rec.run === d.run && rec.specHash === d.hash;
    return {
      ...base,
      kind: gate.type === 'backoff' && gate.settled ? 'block' : 'wait',
      ...(gate.type === 'later' ? { waitsForSlot: true } : {}),
      summary: `${why}: run ${d.run} ${gate.type === 'backoff' ? 'blocked' : 'waits'}: ${gate.message}`,
      desired: d,
      ...(gate.type === 'backoff' && !gate.settled ? { requeueAfterMs: Math.max(0, gate.retryAt - ctx.inp.now) } : {}),
      ops: same && pre.length === 0 ? [] : [...pre, recordOp(d.name, record.reason, { ...record, run: d.run, specHash: d.hash }, counters)],
    };
  }
  // ---- end pulls ----
  // ---- builds (plan/build-gate.ts): a build under way or to run holds the run Pending/Building ----
  const building = builds.filter((b) => b.verdict.type === 'build');
  if (building.length) {
    for (const b of building) askBuild(ctx.builds, b.build, d.name, buildLimits(ctx, d), rerunAt(base.status));
    const message = building.map((b) => (b.verdict.type === 'build' ? b.verdict.message : '')).join('; ');
    const rec = base.status;
    const waiting =
      rec?.phase === 'Pending' &&
      rec.reason === REASONS.building &&
      rec.message === message &&
      rec.run === d.run &&
      rec.specHash === d.hash &&
      pre.length === 0;
    return {
      ...base,
      kind: 'wait',
      summary: `${why}: run ${d.run} waits: ${message}`,
      desired: d,
      ops: waiting
        ? []
        : [...pre, recordOp(d.name, 'building', { phase: 'Pending', reason: REASONS.building, message, run: d.run, specHash: d.hash }, counters)],
    };
  }
  // ---- end builds ----
  const full = takeSlot(ctx, set);
  if (!full) {
    const start: RunStart = { counters, ownFolder: ownsFolder(base.status, d) };
    return {
      ...base,
      kind,
      summary: `${why}: run ${d.run}`,
      desired: d,
      ops: [...pre, ...provisionOps(d, have, start, ctx.inp.snapshot.boot, preflight.image)],
    };
  }
  const waiting = base.status?.phase === 'Pending' && base.status.reason === full.reason && base.status.run === d.run && pre.length === 0;
  return {
    ...base,
    kind: 'wait',
    waitsForSlot: true,
    summary: shared(ctx, `${full.reason}\0${why}\0${d.run}\0${full.cause}`, () =>
      full.reason === REASONS.waitingForSet
        ? `${why}: run ${d.run} waits: ${full.cause}`
        : `${why}: run ${d.run} waits for a slot (--max-running ${ctx.inp.maxRunning})`,
    ),
    desired: d,
    ops: waiting ? [] : [...pre, recordOp(d.name, full.cause, { phase: 'Pending', reason: full.reason, run: d.run, specHash: d.hash }, counters)],
  };
}

/** Why a container that holds a slot waits: its set's maxParallel (WaitingForSet) or --max-running (WaitingForSlot). */
export interface SlotWait {
  reason: typeof REASONS.waitingForSet | typeof REASONS.waitingForSlot;
  cause: string;
}

/**
 * Takes a running slot, and a room of the set `set` when it is one's, for a container that
 * holds one (an attempt's run, a grader: CONTRACT.md's berth section, "Graders take slots"):
 * undefined when taken, else what it waits for. A set's maxParallel first, then --max-running.
 */
export function takeSlot(ctx: PlanCtx, set: SetState | undefined): SlotWait | undefined {
  const max = set?.policy.maxParallel ?? null;
  // the texts shared by every waiting cell (a set of 100,000 keeps one copy of each)
  if (set && max !== null && set.running >= max)
    return { reason: REASONS.waitingForSet, cause: shared(ctx, `set\0${set.policy.name}`, () => `set ${set.policy.name} runs maxParallel ${max}`) };
  if (ctx.slots <= 0) return { reason: REASONS.waitingForSlot, cause: shared(ctx, 'slot', () => `no free slot (--max-running ${ctx.inp.maxRunning})`) };
  ctx.slots--;
  if (set) set.running++;
  return undefined;
}

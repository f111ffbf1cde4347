/**
 * The planner: pure `(PlanInput) → Plan`. No I/O, no clock of its own: the same input gives
 * the same plan, in a fixed order (attempts by name; an AttemptSet's children at the set's name, by
 * their coordinates). Every operation records its cause.
 */
import { DEFAULTS, FINISHED_PHASES, REASONS, RUNNING_STATES } from '../constants';
import type { ContainerSummary } from '../engine/types';
import type { ObservedAttempt } from '../observe/types';
import { NOT_ADMITTED } from '../sets/outcome';
import type { LoadedSpec } from '../spec/types';
import type { AttemptStatus } from '../status/types';
import { attestListed, failedCause, mainWant, sidecarWant } from '../attest/checks';
import { diskExceeded } from './disk';
import { releasedEnd } from './release';
import { isInfraFailure } from './exit-outcome';
import { retryBackoffMs, type PlanInput } from './input';
import { desiredFor } from './desired-for';
import { namesOf } from '../desired/lazy';
import {
  adoptKeep,
  cmp,
  dropRenamed,
  endRunOps,
  finishOp,
  hasAny,
  isMain,
  recordOp,
  removeContainerOp,
  removeOps,
  startOps,
  scrubOps,
  secretHolders,
  sidecarOps,
  stopSidecars,
  withHarvestCaps,
} from './ops';
import { runCounters, startRun, takeSlot, type PlanCtx } from './new-run';
import { viewRun, type RunView } from './run-view';
import { withLane } from './lanes';
import { RETRYABLE_REASONS } from './settled';
import { admissionOrder, setStates } from './set-admission';
import { diskPressure } from './disk-pressure';
import { isGrader, planGrade } from './grade';
import { heldRun } from './held';
import { specIndex, specsNamed } from '../spec/spec-index';
import { planDeleted, planHarvest, planUndesired } from './undesired';
import type { AttemptAction, Operation, Plan, RunEnd } from './types';

export { HARVEST_RETRY_MS } from './undesired';

const EMPTY: ObservedAttempt = { name: '', containers: [], networks: [], volumes: [] };
/** How long a Blocked attempt waits before berth tries it again. */
export const BLOCKED_RETRY_MS = 15_000;
/** How long an attempt whose create failed (the engine refused) waits before berth tries again. */
export const CREATE_RETRY_MS = 5_000;

/**
 * After a finish whose outcome the engine decides: look again at once when a budget could still
 * give a new run (the next plan decides on the recorded outcome); nothing else would wake a
 * controller before its resync.
 */
function mayRunAgain(inp: PlanInput, loaded: LoadedSpec, rec: AttemptStatus | undefined): { requeueAfterMs?: number } {
  const retries = loaded.spec.retries > (rec?.retriesUsed ?? 0);
  const infra = (inp.policy.infraRetries ?? DEFAULTS.infraRetries) > (rec?.infraRetriesUsed ?? 0);
  return retries || infra ? { requeueAfterMs: 0 } : {};
}

/** Blocked by a container that carries our labels only through its image. */
function planSquatter({ inp, d, rec, base, name, run, hash }: RunView): AttemptAction | undefined {
  if (!inp.snapshot.foreign.length) return undefined;
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
  // a failed pull waits on its image's back-off clock (pull-gate.ts), not this one
  if (rec.reason === REASONS.imagePullBackOff) return undefined;
  // a failed build waits for its build hash to change or a rerun (build-gate.ts), not this clock
  if (rec.reason === REASONS.buildFailed) return undefined;
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
  const budget = infra ? (inp.policy.infraRetries ?? DEFAULTS.infraRetries) : loaded.spec.retries;
  const retryable = rec.phase === 'Failed' && (infra || RETRYABLE_REASONS.has(rec.reason ?? '')) && used < budget;
  // A run after this one: the old run's containers (and graders) go, its networks and volumes stay where they are still wanted.
  const runAgain = (cause: string, why: string): AttemptAction => {
    // held at its last good spec (a broken file): the finished run's cleanup, no new run
    if (loaded.held) return heldRun(base, loaded, why, pre);
    const next = desiredFor(inp, loaded, rec.run + 1);
    const oldRun = removeOps({ containers: [...current.containers, ...v.graders], networks: [], volumes: [] }, cause);
    const have: ObservedAttempt = { ...current, containers: [] };
    return startRun(ctx, base, next, have, [...pre, ...oldRun, ...dropRenamed(next, have)], 'retry', why);
  };
  if (rec.rerunRequested?.run === rec.run) return runAgain('rerun requested', `run ${rec.run} ${rec.phase}; rerun requested (berth rerun)`);
  if (retryable) {
    const which = `${infra ? 'infra retry' : 'retry'} ${used + 1}/${budget}`;
    const at = finishedAt + retryBackoffMs(used + 1, inp.policy.retryBaseMs);
    if (at > inp.now) return { ...base, kind: 'wait', summary: `${which} after back-off`, ops: pre, requeueAfterMs: at - inp.now };
    return runAgain(which, `run ${rec.run} ${rec.reason ?? 'failed'}; ${which}`);
  }
  // spec.grade: the run's grade before anything else of a finished run (plan/grade.ts)
  const score = loaded.set?.set.score ?? undefined;
  const set = loaded.set ? ctx.sets.get(loaded.set.set.name) : undefined;
  const graded = planGrade({
    inp,
    loaded,
    rec,
    base,
    graders: v.graders,
    pre,
    ...(score ? { score } : {}),
    pulls: v.ctx.pulls,
    builds: v.ctx.builds,
    takeSlot: () => takeSlot(ctx, set),
  });
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
  const stopAndEnd = (why: string, outcome: RunEnd): AttemptAction => ({
    ...base,
    kind: 'stop',
    summary: why,
    desired: d,
    ops: [...pre, ...endRunOps(d, { current: current.containers, sidecars: sidecarsObs }, { why, main, stop: true, resultsDir, outcome })],
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
  // a sandbox released (before its deadline): its run ends with the release's exit code
  const released = rec?.containerId === id ? releasedEnd(rec, run) : undefined;
  if (released) return stopAndEnd(released.message ?? 'released', released);
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
          keep: adoptKeep(rec, run, v.hash, id),
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
  // an AttemptSet child's score file; with spec.grade, the score comes only from the grader
  const score = loaded.spec.grade ? undefined : loaded.set?.set.score?.file;
  // a sandbox released before its container ended (berth stopped it, and the finish did not follow): the release decides
  const released = rec?.containerId === main.id ? releasedEnd(rec, v.run) : undefined;
  return {
    ...base,
    kind: 'finish',
    summary: `container ${main.state}`,
    desired: d,
    ...mayRunAgain(inp, loaded, rec),
    ops: [
      ...pre,
      ...endRunOps(
        d,
        { current: current.containers, sidecars: sidecarsObs },
        {
          why: `container ${main.state}`,
          main,
          sidecarsWhy: 'the attempt finished',
          resultsDir: rec?.resultsDir ?? d.resultsDir,
          ...(score ? { score } : {}),
          ...(released ? { outcome: released } : {}),
        },
      ),
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
  const { ctx, inp, loaded, rec, base, d, current, sidecarsObs, pre, run } = v;
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
        ...endRunOps(
          d,
          { current: current.containers, sidecars: sidecarsObs },
          { why, sidecarsWhy: 'the main container could not start', resultsDir: rec.resultsDir ?? d.resultsDir, outcome },
        ),
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
function planDesired(ctx: PlanCtx, loaded: LoadedSpec, rec: AttemptStatus | undefined, obsAll: ObservedAttempt): AttemptAction {
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

export function plan(inp: PlanInput): Plan {
  const only = inp.only;
  // kept per load (spec-index.ts): a controller's batch of a few attempts among 100,000 finds them without a walk
  const desiredNames = specIndex(inp.specs).byName;
  // Only the attempts planned need sorting: their admission order among themselves is the same
  // (a controller's batch of a few attempts among 10,000 sorts a few).
  const specs = (only ? specsNamed(inp.specs, only) : [...inp.specs]).sort(admissionOrder);
  // What holds a slot: a run's main container, and a grader (CONTRACT.md's berth section, "Graders take slots").
  let running = 0;
  for (const a of inp.snapshot.attempts.values()) {
    if (a.containers.some((c) => isMain(c) && RUNNING_STATES.has(c.state))) running++;
    running += a.containers.filter((c) => isGrader(c) && RUNNING_STATES.has(c.state)).length;
  }
  const ctx: PlanCtx = {
    inp,
    slots: Math.max(0, inp.maxRunning - running - (inp.reservedSlots ?? 0)),
    sets: setStates(inp, RUNNING_STATES),
    missing: new Map(),
    resolved: new Map(),
    pulls: new Map(),
    freeAtStart: 0,
    builds: new Map(),
  };
  ctx.freeAtStart = ctx.slots;
  const pressure = diskPressure(inp.disk);
  if (pressure) ctx.pressure = pressure;
  const actions: AttemptAction[] = [];
  const unchanged = new Map<string, AttemptStatus['phase']>();

  // Attempts already running keep their slot; stopping ones free theirs only on the next pass.
  for (const loaded of specs) {
    const name = loaded.spec.name;
    const planned = withHarvestCaps(planDesired(ctx, loaded, inp.statuses.get(name), inp.snapshot.attempts.get(name) ?? EMPTY), loaded.spec.harvest);
    const a = withLane(loaded.set ? { ...planned, set: loaded.set.set.name } : planned);
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
    else actions.push(withLane(a));
  }
  const declaresNothing = inp.specs.length === 0 && inp.protectedNames.size === 0;
  const emptySource = declaresNothing && (inp.snapshot.attempts.size > 0 || inp.statuses.size > 0);
  // nothing declared, nothing on the instance either: a wrong --specs looks like this (refused unless --allow-empty)
  const neverAny = declaresNothing && !emptySource && inp.unreadableFiles.size === 0 && inp.unreadableFolders.size === 0;
  const missingImages = [...ctx.missing].sort(([a], [b]) => cmp(a, b)).map(([image, attempts]) => ({ image, attempts: [...attempts].sort(cmp) }));
  return {
    at: inp.now,
    actions,
    unchanged,
    ...(emptySource ? { emptySource: inp.allowEmpty ? 'allowed' : 'held' } : neverAny ? { emptySource: 'empty' } : {}),
    ...(missingImages.length ? { missingImages } : {}),
    ...(ctx.pulls.size ? { pulls: [...ctx.pulls.values()] } : {}),
    ...(ctx.builds.size ? { builds: [...ctx.builds.values()] } : {}),
  };
}

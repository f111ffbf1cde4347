/**
 * Builders of the planner's operations (pure): removals, the provisioning of a run, the stops
 * and harvest lists of a finish, the secret holders removed after one, and the stale resources
 * (renamed, duplicated) a pass clears first.
 */
import { COMPONENTS, DEFAULTS, LABELS, RUNNING_STATES } from '../constants';
import type { DesiredAttempt } from '../desired/types';
import { namesOf } from '../desired/lazy';
import type { ContainerSummary, NetworkSummary } from '../engine/types';
import type { ObservedAttempt } from '../observe/types';
import type { HarvestCaps } from '../spec/types';
import type { AttemptStatus, EngineBoot } from '../status/types';
import { plural } from '../util/plural';
import type { AdoptKeep, ImageChoice, Operation, RunCounters, RunEnd, RunStart, SidecarOperation, SidecarRef } from './types';

export function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

export function isMain(c: ContainerSummary): boolean {
  return c.labels[LABELS.component] === COMPONENTS.main;
}

/**
 * The containers of a run that were given secret values (files in their writable layer, and the
 * environment in their config for secrets opted into `env` or injected credentials): removed as soon as the run is
 * harvested, whatever the TTL, so no secret value stays in the engine's storage on the host's disk.
 */
export function secretHolders(d: DesiredAttempt, obs: ContainerSummary[]): ContainerSummary[] {
  if (obs.length === 0) return [];
  const names = namesOf(d);
  return obs.filter((c) =>
    isMain(c) ? names.mainSecrets.length > 0 : names.sidecars.some((sc) => sc.name === c.name && (sc.secrets.length > 0 || sc.credentials.length > 0)),
  );
}

/** A status change of `attempt`, with no engine call; with `counters`, it begins the action's run. */
export function recordOp(attempt: string, cause: string, patch: Extract<Operation, { type: 'record' }>['patch'], counters?: RunCounters): Operation {
  return { type: 'record', resource: `attempt:${attempt}`, cause, patch, ...(counters ? { counters } : {}) };
}

/** Container `c` stopped: SIGTERM, then SIGKILL after `graceSeconds`. */
export function stopOp(c: { name: string; id: string }, cause: string, graceSeconds: number = DEFAULTS.stopGraceSeconds): Operation {
  return { type: 'stop', resource: `container:${c.name}`, id: c.id, graceSeconds, cause };
}

export function removeContainerOp(c: { name: string; id: string }, cause: string): Operation {
  return { type: 'remove-container', resource: `container:${c.name}`, id: c.id, cause };
}

/**
 * The end of a run recorded and harvested, on `resource` (its main container, else the attempt):
 * `outcome` when the planner forces one, else read from container `id`. Only the fields given.
 */
export function finishOp(
  resource: string,
  cause: string,
  f: { id?: string; resultsDir?: string; outcome?: RunEnd; sidecars?: SidecarRef[]; score?: string; caps?: HarvestCaps },
): Operation {
  const { id, resultsDir, outcome, sidecars, score, caps } = f;
  return {
    type: 'finish',
    resource,
    ...(id ? { id } : {}),
    ...(resultsDir ? { resultsDir } : {}),
    ...(outcome ? { outcome } : {}),
    ...(sidecars ? { sidecars } : {}),
    ...(score ? { score } : {}),
    ...(caps ? { caps } : {}),
    cause,
  };
}

/** spec.harvest's caps for an operation: none when they are the defaults (the executor's). */
export function capsOp(caps: HarvestCaps | undefined): HarvestCaps | undefined {
  return caps && (caps.maxBytes !== DEFAULTS.harvestMaxBytes || caps.maxFiles !== DEFAULTS.harvestMaxFiles) ? caps : undefined;
}

/** The action with spec.harvest's caps (unless the defaults) on its finish and harvest operations that have none. */
export function withHarvestCaps<A extends { ops: Operation[] }>(a: A, spec: HarvestCaps): A {
  const caps = capsOp(spec);
  if (!caps || !a.ops.some((op) => (op.type === 'finish' || op.type === 'harvest') && !op.caps)) return a;
  return { ...a, ops: a.ops.map((op) => ((op.type === 'finish' || op.type === 'harvest') && !op.caps ? { ...op, caps } : op)) };
}

/** Removal of the secret holders among `obs`, after a finish (see secretHolders). */
export function scrubOps(d: DesiredAttempt, obs: ContainerSummary[]): Operation[] {
  return removeOps({ containers: secretHolders(d, obs), networks: [], volumes: [] }, 'the run is harvested; its secrets leave the engine');
}

/** Remove operations for the given resources: containers first, then networks, then volumes. */
export function removeOps(obs: Pick<ObservedAttempt, 'containers' | 'networks' | 'volumes'>, cause: string): Operation[] {
  // most attempts a pass looks at have nothing to remove (a thousand finished ones in a no-op pass)
  if (!hasAny(obs)) return [];
  return [
    ...obs.containers.map((c) => removeContainerOp(c, cause)),
    ...obs.networks.map((n): Operation => ({ type: 'remove-network', resource: `network:${n.name}`, id: n.id, cause })),
    ...obs.volumes.map((v): Operation => ({ type: 'remove-volume', resource: `volume:${v.name}`, id: v.name, cause })),
  ];
}

export function hasAny(obs: Pick<ObservedAttempt, 'containers' | 'networks' | 'volumes'>): boolean {
  return obs.containers.length + obs.networks.length + obs.volumes.length > 0;
}

/**
 * Networks and volumes of the spec under names the run `d` does not use (an older naming's):
 * removal operations for them, and `have` without them.
 */
export function dropRenamed(d: DesiredAttempt, have: ObservedAttempt): Operation[] {
  if (have.networks.length === 0 && have.volumes.length === 0) return [];
  const netNames = new Set([d.network?.name, d.egressNetwork?.name]);
  const volNames = new Set(d.volumes.map((v) => v.name));
  const renamed = { containers: [], networks: have.networks.filter((n) => !netNames.has(n.name)), volumes: have.volumes.filter((v) => !volNames.has(v.name)) };
  have.networks = have.networks.filter((n) => netNames.has(n.name));
  have.volumes = have.volumes.filter((v) => volNames.has(v.name));
  return removeOps(renamed, 'named under an older naming');
}

/**
 * Networks that repeat another's name (the engine's duplicate check is not atomic: two writers
 * racing can each make one, and every later use of the name is then refused as ambiguous). Of
 * each name one is kept: the one the attempt's containers are attached to, else the oldest, then
 * the lowest id; the rest are returned to be removed. Volumes need no such rule: the engine keeps
 * one volume per name.
 */
export function duplicateNetworks(networks: NetworkSummary[], containers: ContainerSummary[]): NetworkSummary[] {
  // One network or none (most attempts: network none, or their one network) repeats no name.
  if (networks.length < 2) return [];
  const attached = new Set(containers.flatMap((c) => c.networkIds ?? []));
  const created = (n: NetworkSummary) => {
    const t = Date.parse(n.created ?? '');
    return Number.isNaN(t) ? Infinity : t;
  };
  const rank = (a: NetworkSummary, b: NetworkSummary) => Number(attached.has(b.id)) - Number(attached.has(a.id)) || created(a) - created(b) || cmp(a.id, b.id);
  const seen = new Set<string>();
  return [...networks].sort((a, b) => cmp(a.name, b.name) || rank(a, b)).filter((n) => seen.has(n.name) || (seen.add(n.name), false));
}

/** The beginning of run `d` as `start` says (its folder, its counters, the intent), before any container of it. */
export function beginRunOp(d: DesiredAttempt, start: RunStart): Operation {
  return { type: 'begin-run', resource: `attempt:${d.name}`, desired: d, ...start, cause: `run ${d.run}: results folder made, intent recorded` };
}

/**
 * Operations that bring a run up from whatever of it already exists: networks, volumes, the
 * run's beginning (`start`), sidecars (proxy first), main. `boot`: the engine's boot as the plan
 * saw it, recorded before the start.
 */
export function provisionOps(d: DesiredAttempt, have: ObservedAttempt, start: RunStart, boot?: EngineBoot, image?: ImageChoice): Operation[] {
  const ops: Operation[] = [];
  for (const v of d.volumes) {
    if (!have.volumes.some((x) => x.name === v.name)) ops.push({ type: 'create-volume', resource: `volume:${v.name}`, volume: v, cause: 'not found' });
  }
  for (const n of [d.network, d.egressNetwork]) {
    if (n && !have.networks.some((x) => x.name === n.name)) ops.push({ type: 'create-network', resource: `network:${n.name}`, network: n, cause: 'not found' });
  }
  ops.push(beginRunOp(d, start));
  for (const [i, sc] of d.sidecars.entries()) {
    const o = have.containers.find((c) => c.name === sc.name);
    if (o && RUNNING_STATES.has(o.state)) continue;
    if (o) ops.push(removeContainerOp(o, `${sc.alias} ${o.state} before the attempt started`));
    ops.push(...sidecarOps(d, i, o ? 'not running' : 'not found'));
  }
  return [...ops, ...mainOps(d, boot, image)];
}

const SIDECAR_OPS: ReadonlySet<Operation['type']> = new Set(['create-sidecar', 'connect-sidecar', 'copy-in-sidecar', 'start-sidecar', 'ready-sidecar']);

export function isSidecarOp(op: Operation): op is SidecarOperation {
  return SIDECAR_OPS.has(op.type);
}

/**
 * The sidecar `index` of `d` made, filled and started, one operation per change to the engine:
 * its create (`cause`), a connect per network besides the one it is created on, its secrets'
 * files (when it has secrets), its start, and the wait until it is ready, with its attestation.
 * `restart`: made again while the attempt runs.
 */
export function sidecarOps(d: DesiredAttempt, index: number, cause: string, restart = false): SidecarOperation[] {
  const sc = d.sidecars[index];
  if (!sc) return [];
  const base = { resource: `container:${sc.name}`, desired: d, index, ...(restart ? { restart } : {}) };
  const n = sc.secrets.length;
  return [
    { ...base, type: 'create-sidecar', cause },
    ...sc.expectedNetworks
      .filter((net) => net !== sc.create.host.networkMode)
      .map((network): SidecarOperation => ({ ...base, type: 'connect-sidecar', network, cause: `${sc.alias} joins network ${network} too` })),
    ...(n ? [{ ...base, type: 'copy-in-sidecar' as const, cause: `${plural(n, 'secret')} for ${DEFAULTS.secretsDir}` }] : []),
    { ...base, type: 'start-sidecar', cause: 'created' },
    { ...base, type: 'ready-sidecar', cause: readyCause(sc.ready) },
  ];
}

/** What a ready-sidecar operation waits for, in words. */
function readyCause(r: DesiredAttempt['sidecars'][number]['ready']): string {
  if (r === 'listening') return 'until it says it is listening';
  if (r === 'running') return 'until it has stayed up a moment';
  const what = 'tcp' in r ? `port ${r.tcp} accepts` : 'log' in r ? `its output says ${JSON.stringify(r.log)}` : 'its ready command exits 0';
  return `until ${what} (at most ${r.deadlineSeconds} s)`;
}

/**
 * The archives copied into the main container before its start: the fixture (with spec.user,
 * the working folder is sent even without one, so it is that user's; not into a read-only root
 * filesystem, where the engine copies nothing) and the secrets' files.
 */
export function copiesIn(d: DesiredAttempt): ('helper' | 'fixture' | 'secrets')[] {
  const spec = d.loaded.spec;
  const fixture = spec.fixture !== null || (spec.user !== null && !spec.readOnlyRootFilesystem);
  // a sandbox: berth's helper, its main process
  return [...(spec.sandbox ? (['helper'] as const) : []), ...(fixture ? (['fixture'] as const) : []), ...(d.mainSecrets.length ? (['secrets'] as const) : [])];
}

/** The main container made, filled and started: one operation per change to the engine, the copy recorded done before the start. */
export function mainOps(d: DesiredAttempt, boot?: EngineBoot, image?: ImageChoice): Operation[] {
  const resource = `container:${d.container.name}`;
  const n = d.mainSecrets.length;
  const from = image ? `; from ${image.id.slice(0, 19)}, ${image.pin ? `pinned now for set ${image.pin.set}` : "its set's pinned image"}` : '';
  return [
    { type: 'create-container', resource, desired: d, ...(image ? { image } : {}), cause: `not found${from}` },
    ...copiesIn(d).map((archive): Operation => ({
      type: 'copy-in',
      resource,
      desired: d,
      archive,
      cause:
        archive === 'secrets'
          ? `${plural(n, 'secret')} for ${DEFAULTS.secretsDir}`
          : archive === 'helper'
            ? "berth's own process, a sandbox's"
            : d.loaded.spec.fixture !== null
              ? 'the fixture'
              : "the working folder, the user's",
    })),
    { type: 'record-copied', resource: `attempt:${d.name}`, desired: d, ...(boot ? { boot } : {}), cause: 'a start may follow from here on' },
    ...startOps(d, 'created'),
  ];
}

/** The main container's start, then its attestation and the Running record. */
export function startOps(d: DesiredAttempt, cause: string): Operation[] {
  const resource = `container:${d.container.name}`;
  return [
    { type: 'start', resource, desired: d, cause },
    { type: 'attest-start', resource, desired: d, cause: 'started' },
  ];
}

/** The attempt's sidecars as the finish operation harvests them. */
export function harvestList(d: DesiredAttempt, obs: ContainerSummary[]): SidecarRef[] {
  return d.sidecars.flatMap((sc) => {
    const o = obs.find((c) => c.name === sc.name);
    return o ? [{ alias: sc.alias, role: sc.role, id: o.id }] : [];
  });
}

/** Stop operations for the running sidecars (after the main container, before the harvest). */
export function stopSidecars(obs: ContainerSummary[], cause: string): Operation[] {
  return obs.filter((c) => !isMain(c) && RUNNING_STATES.has(c.state)).map((c) => stopOp(c, cause, 5));
}

/**
 * The end of a run, in the one order every end takes: its main container stopped (`stop`: when it
 * runs), its running sidecars stopped (`sidecarsWhy`, else `why`), the finish (the outcome recorded
 * (`outcome` when the planner forces one, else read from the main container), the harvest with the
 * sidecars' logs), then the containers that were given secrets removed. On the main container's
 * resource when there is one, else the attempt's.
 */
export function endRunOps(
  d: DesiredAttempt,
  obs: { current: ContainerSummary[]; sidecars: ContainerSummary[] },
  e: { why: string; main?: ContainerSummary; stop?: boolean; sidecarsWhy?: string; resultsDir: string | undefined; outcome?: RunEnd; score?: string },
): Operation[] {
  const { main } = e;
  return [
    ...(main && e.stop ? [stopOp(main, e.why)] : []),
    ...stopSidecars(obs.sidecars, e.sidecarsWhy ?? e.why),
    finishOp(main ? `container:${main.name}` : `attempt:${d.name}`, e.why, {
      ...(main ? { id: main.id } : {}),
      ...(e.resultsDir ? { resultsDir: e.resultsDir } : {}),
      sidecars: harvestList(d, obs.sidecars),
      ...(e.outcome ? { outcome: e.outcome } : {}),
      ...(e.score ? { score: e.score } : {}),
    }),
    ...scrubOps(d, obs.current),
  ];
}

/** What adopting container `id` as run `run` (of spec hash `hash`) keeps of the record (AdoptKeep). */
export function adoptKeep(rec: AttemptStatus | undefined, run: number, hash: string, id: string): AdoptKeep {
  if (!rec || rec.run !== run) return {};
  const again = rec.specHash === hash && rec.deadlineAt !== undefined && rec.startedAt !== undefined;
  return {
    ...(rec.containerId === id && rec.image ? { image: rec.image } : {}),
    ...(again ? { deadline: { deadlineAt: rec.deadlineAt, ...(rec.deadlineSource ? { deadlineSource: rec.deadlineSource } : {}) } } : {}),
    ...(again && (rec.disk || rec.volumeSizes)
      ? { disk: { ...(rec.disk ? { disk: rec.disk } : {}), ...(rec.volumeSizes ? { volumeSizes: rec.volumeSizes } : {}) } }
      : {}),
  };
}

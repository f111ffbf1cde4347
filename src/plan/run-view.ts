/**
 * What one pass knows about an attempt with a spec (pure): the engine's resources of the attempt
 * sorted into the current run's (its main container, its sidecars) and the stale ones (another
 * spec hash, another run, duplicates, a network named twice), whose removal comes first (`pre`),
 * with the end of a run the spec replaced.
 */
import { FINISHED_PHASES, LABELS, LEGACY_NAMING, REASONS, RUNNING_STATES } from '../constants';
import { namesOf } from '../desired/lazy';
import type { DesiredAttempt } from '../desired/types';
import type { ContainerSummary } from '../engine/types';
import type { ObservedAttempt } from '../observe/types';
import type { LoadedSpec } from '../spec/types';
import type { AttemptStatus } from '../status/types';
import { desiredFor } from './desired-for';
import { isGrader } from './grade';
import type { PlanInput } from './input';
import type { PlanCtx } from './new-run';
import { dropRenamed, duplicateNetworks, finishOp, hasAny, isMain, removeOps, stopOp } from './ops';
import type { Operation } from './types';

/** What one pass knows about an attempt with a spec: the pieces every step of planDesired reads. */
export interface RunView {
  ctx: PlanCtx;
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
export function viewRun(ctx: PlanCtx, loaded: LoadedSpec, rec: AttemptStatus | undefined, obsAll: ObservedAttempt): RunView {
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
  // (issue 55) Names are made only when there is a container to compare them with: most
  // attempts of a large pass (new, waiting, collected) have none.
  const legacyName = current.containers.length ? LEGACY_NAMING.container(inp.instance, name) : '';
  const legacy = current.containers.some((c) => c.name === legacyName && c.labels[LABELS.run] === runLabel && isMain(c));
  const d = desiredFor(inp, loaded, run, legacy);
  // This hash's containers of an earlier run are stale too.
  const staleRun: ContainerSummary[] = [];
  const runContainers: ContainerSummary[] = [];
  for (const c of current.containers) (c.labels[LABELS.run] === runLabel ? runContainers : staleRun).push(c);
  // By name only (namesOf): a finished run's desired state is not built unless an operation needs it.
  const names = runContainers.length ? namesOf(d) : undefined;
  const main = names && runContainers.find((c) => isMain(c) && c.name === names.container);
  const sidecarsObs: ContainerSummary[] = [];
  const dupes: ContainerSummary[] = [];
  // Most runs have their main container only: sidecars and duplicates need looking for otherwise.
  if (names && runContainers.length > (main ? 1 : 0)) {
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

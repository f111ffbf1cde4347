/**
 * observe(): one snapshot per pass from label-filtered lists: containers, networks and
 * volumes of this instance, plus the images that carry berth labels (to tell inherited labels
 * from ours). Four engine calls, whatever the number of attempts; no inspects.
 */
import { LABELS } from '../constants';
import type { ContainerSummary, Engine, NetworkSummary, VolumeSummary } from '../engine/types';
import type { ObservedAttempt, Snapshot } from './types';

export function instanceFilters(instance: string): string[] {
  return [`${LABELS.managed}=true`, `${LABELS.instance}=${instance}`];
}

function byCreatedThenId(a: ContainerSummary, b: ContainerSummary): number {
  return a.created - b.created || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

function byName<T extends { name: string }>(a: T, b: T): number {
  return a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
}

/**
 * The lists go out at once; the known ids may still be loading meanwhile (a pass reads its
 * status records while the engine answers).
 *
 * @param knownContainerIds ids berth recorded creating (status records): a container whose
 *        image carries berth labels is ours only if berth recorded its id.
 */
export async function observe(
  engine: Engine,
  instance: string,
  knownContainerIds: ReadonlySet<string> | Promise<ReadonlySet<string>>,
  now = Date.now(),
): Promise<Snapshot> {
  const filters = instanceFilters(instance);
  const [containers, networks, volumes, labeledImages, known] = await Promise.all([
    engine.containers.list(filters),
    engine.networks.list(filters),
    engine.volumes.list(filters),
    engine.images.list([LABELS.managed]),
    knownContainerIds,
  ]);
  return group(instance, containers, networks, volumes, new Set(labeledImages.map((i) => i.id)), known, now);
}

/** Pure part of observe(), exported for tests. */
export function group(
  instance: string,
  containers: ContainerSummary[],
  networks: NetworkSummary[],
  volumes: VolumeSummary[],
  labeledImageIds: ReadonlySet<string>,
  knownContainerIds: ReadonlySet<string>,
  now: number,
): Snapshot {
  const attempts = new Map<string, ObservedAttempt>();
  const foreign: ContainerSummary[] = [];
  const slot = (name: string): ObservedAttempt => {
    let a = attempts.get(name);
    if (!a) {
      a = { name, containers: [], networks: [], volumes: [] };
      attempts.set(name, a);
    }
    return a;
  };
  const owned = (labels: Record<string, string>) =>
    labels[LABELS.managed] === 'true' && labels[LABELS.instance] === instance && !!labels[LABELS.attempt];

  for (const c of containers) {
    if (!owned(c.labels)) continue;
    if (labeledImageIds.has(c.imageId) && !knownContainerIds.has(c.id)) {
      foreign.push(c);
      continue;
    }
    slot(c.labels[LABELS.attempt] as string).containers.push(c);
  }
  for (const n of networks) if (owned(n.labels)) slot(n.labels[LABELS.attempt] as string).networks.push(n);
  for (const v of volumes) if (owned(v.labels)) slot(v.labels[LABELS.attempt] as string).volumes.push(v);
  for (const a of attempts.values()) {
    a.containers.sort(byCreatedThenId);
    a.networks.sort(byName);
    a.volumes.sort(byName);
  }
  foreign.sort(byCreatedThenId);
  return { at: now, attempts, foreign, calls: 4 };
}

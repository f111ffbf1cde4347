/**
 * observe(): one snapshot per pass from label-filtered lists: containers, networks and
 * volumes of this instance, plus every image the engine holds (those that carry berth labels
 * tell inherited labels from ours: src/ownership.ts decides; all of them tell the planner which
 * images are missing: observe/images.ts). Four engine calls, whatever the number of attempts;
 * no inspects. The controller also lists named attempts only (`observeAttempts`) and merges
 * them into its kept snapshot.
 */
import { LABELS } from '../constants';
import type { ContainerSummary, Engine, ImageSummary, Labels, NetworkSummary, VolumeSummary } from '../engine/types';
import { containerOwnership, imageLabels, labelOwnership, type RecordedContainers } from '../ownership';
import { imageIndex } from './images';
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
 * The lists go out at once; the recorded ids may still be loading meanwhile (a pass reads its
 * status records while the engine answers).
 *
 * @param recorded the container ids the status records name (src/ownership.ts): they decide
 *        for containers made before berth stamped a nonce, and must agree with the labels.
 */
export async function observe(
  engine: Engine,
  instance: string,
  recorded: RecordedContainers | Promise<RecordedContainers>,
  now = Date.now(),
  engineWide: EngineWide = engineWideOf(engine),
): Promise<Snapshot> {
  const filters = instanceFilters(instance);
  const [containers, networks, volumes, images, known, boot] = await Promise.all([
    engine.containers.list(filters),
    engine.networks.list(filters),
    engine.volumes.list(filters),
    engineWide.images(),
    recorded,
    engineWide.boot(),
  ]);
  const calls = 3 + engineWide.calls();
  return withImages(withBoot(group(instance, containers, networks, volumes, imageLabels(labeled(images)), known, now, calls), boot), images);
}

/**
 * What a snapshot asks of the engine beyond the instance's lists: every image it holds and its
 * boot. By default asked each time; the controller's cache hands in the ones it kept while nothing
 * could have changed them (controller/informer.ts). `calls`, once both answered: whether the image
 * list went to the engine (1) or was kept (0); the boot, a reading, is not counted in a snapshot's calls.
 */
export interface EngineWide {
  images(): Promise<readonly ImageSummary[]>;
  boot(): Promise<Snapshot['boot']>;
  calls(): number;
}

/** Both asked of the engine. */
export function engineWideOf(engine: Engine): EngineWide {
  return { images: () => engine.images.list([]), boot: () => bootOf(engine), calls: () => 1 };
}

/** The images that carry berth's labels: the ownership check's (an unfiltered list holds them). */
function labeled(images: readonly ImageSummary[]): ImageSummary[] {
  return images.filter((i) => i.labels[LABELS.managed] !== undefined);
}

function withImages(s: Snapshot, images: readonly ImageSummary[]): Snapshot {
  return { ...s, images: imageIndex(images) };
}

/** The engine's boot for the planner; unknown (never an error) when the engine cannot say. */
function bootOf(engine: Engine): Promise<Snapshot['boot']> {
  return engine.boot().catch(() => undefined);
}

function withBoot(s: Snapshot, boot: Snapshot['boot']): Snapshot {
  return boot ? { ...s, boot } : s;
}

/**
 * The same snapshot, of the named attempts only: their containers, networks and volumes (the
 * attempt label added to the filters: three calls a name) and the engine's images. The engine
 * answers these in a fraction of a full list's time (10 ms against 70 ms at 1,000 attempts
 * here): the controller refreshes the attempts a batch is about, see `mergeSnapshot`.
 */
export async function observeAttempts(
  engine: Engine,
  instance: string,
  names: readonly string[],
  recorded: RecordedContainers | Promise<RecordedContainers>,
  now = Date.now(),
  engineWide: EngineWide = engineWideOf(engine),
): Promise<Snapshot> {
  const base = instanceFilters(instance);
  const per = names.map((n) => {
    const f = [...base, `${LABELS.attempt}=${n}`];
    return Promise.all([engine.containers.list(f), engine.networks.list(f), engine.volumes.list(f)]);
  });
  const [lists, images, known, boot] = await Promise.all([Promise.all(per), engineWide.images(), recorded, engineWide.boot()]);
  const s = group(
    instance,
    lists.flatMap((l) => l[0]),
    lists.flatMap((l) => l[1]),
    lists.flatMap((l) => l[2]),
    imageLabels(labeled(images)),
    known,
    now,
    3 * names.length + engineWide.calls(),
  );
  return withImages(withBoot(s, boot), images);
}

/** `base` with the attempts `names` as `fresh` shows them (gone from it: gone). */
export function mergeSnapshot(base: Snapshot, fresh: Snapshot, names: ReadonlySet<string>): Snapshot {
  const attempts = new Map(base.attempts);
  for (const n of names) {
    const a = fresh.attempts.get(n);
    if (a) attempts.set(n, a);
    else attempts.delete(n);
  }
  const foreign = [...base.foreign.filter((c) => !names.has(c.labels[LABELS.attempt] ?? '')), ...fresh.foreign].sort(byCreatedThenId);
  // the boot as the fresh lists saw it (an older one could hide a restart since)
  return {
    at: fresh.at,
    attempts,
    foreign,
    calls: fresh.calls,
    ...(fresh.boot ? { boot: fresh.boot } : {}),
    ...((fresh.images ?? base.images) ? { images: fresh.images ?? base.images } : {}),
  };
}

/** Pure part of observe(), exported for tests. */
export function group(
  instance: string,
  containers: ContainerSummary[],
  networks: NetworkSummary[],
  volumes: VolumeSummary[],
  labeledImages: ReadonlyMap<string, Labels>,
  recorded: RecordedContainers,
  now: number,
  calls = 4,
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
  const ctx = { instance, labeledImages, recorded };
  for (const c of containers) {
    if (!labelOwnership(c.labels, instance).owned) continue; // not this instance's at all
    const o = containerOwnership(c, ctx);
    if (o.owned) slot(o.attempt).containers.push(c);
    else foreign.push(c); // this instance's labels, but berth did not put them there: never touched
  }
  for (const n of networks) {
    const o = labelOwnership(n.labels, instance);
    if (o.owned) slot(o.attempt).networks.push(n);
  }
  for (const v of volumes) {
    const o = labelOwnership(v.labels, instance);
    if (o.owned) slot(o.attempt).volumes.push(v);
  }
  for (const a of attempts.values()) {
    a.containers.sort(byCreatedThenId);
    a.networks.sort(byName);
    a.volumes.sort(byName);
  }
  foreign.sort(byCreatedThenId);
  return { at: now, attempts, foreign, calls };
}

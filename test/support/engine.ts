/**
 * Real-engine test support. Every resource a test makes carries labels that name this test
 * run: berth-made ones through an instance name that starts with TEST_RUN, hand-made
 * ("foreign") ones through the TEST_LABEL, engine-side instance locks (volumes) and their takeover
 * claims through the instance they name; images berth built through the build records of this
 * run's state folders (an image carries only its build hash). After the run, test/hooks.ts removes exactly those, by
 * label, and fails the run if any survive. No engine → the test fails loudly.
 */
import Dockerode from 'dockerode';
import { readBuildRecords } from '../../src/build/records';
import { BINDING_LABELS, BUILD_LOCK_LABELS, LABELS, LOCK_LABELS } from '../../src/constants';
import { createDockerEngine, imageStore } from '../../src/engine/docker';
import type { Engine } from '../../src/engine/types';
import { recordEvents } from './events';

export const TEST_RUN = process.env.BERTH_TEST_RUN ?? `t${process.pid.toString(36)}`;
/** Label on every resource a test makes by hand, outside berth. */
export const TEST_LABEL = 'dev.berth.test-run';
export const TEST_IMAGE = 'berth/busybox:local';

/** The engine the tests use: DOCKER_HOST's (read by docker-modem when given no options; the matrix's turns, scripts/test-engines.ts), else the machine's. */
export const docker = process.env.DOCKER_HOST ? new Dockerode() : new Dockerode({ socketPath: '/var/run/docker.sock' });

/** The engine's image store (src/engine/docker: the containerd snapshotter, or the classic graph drivers). */
export async function testImageStore(): Promise<'classic' | 'containerd'> {
  return imageStore(((await docker.info()) as { DriverStatus?: [string, string][] | null }).DriverStatus);
}

/**
 * The repo digests an engine lists for an image loaded or built on it, named by `refs`: none on
 * the classic store; on the containerd store, `<repository>@<its id>` for each repository.
 */
export async function localRepoDigests(id: string, refs: string[]): Promise<string[]> {
  if ((await testImageStore()) === 'classic') return [];
  return [...new Set(refs.map((r) => `${r.slice(0, r.lastIndexOf(':'))}@${id}`))].sort();
}

let counter = 0;
/** A fresh berth instance name for one test: its resources are this test's alone. */
export function newInstance(tag: string): string {
  counter++;
  return `${TEST_RUN}-${tag}-${counter}`.replace(/[^a-zA-Z0-9_.-]/g, '-').toLowerCase();
}

let engineChecked: Promise<void> | undefined;
/** Resolves when the engine answers and the test image exists; rejects loudly otherwise. */
export function requireEngine(): Promise<void> {
  engineChecked ??= (async () => {
    try {
      await docker.ping();
    } catch (err) {
      throw new Error(`no Docker engine answers (${(err as Error).message}); the engine tests need one: run ./scripts/engine-up.sh (make test does)`);
    }
    try {
      await docker.getImage(TEST_IMAGE).inspect();
    } catch {
      throw new Error(`test image ${TEST_IMAGE} is missing: run ./scripts/images.sh (make test does)`);
    }
    // the run's container events, as they come (test/support/events.ts: the engine replays only its last 256)
    await recordEvents();
  })();
  return engineChecked;
}

export function testEngine(): Engine {
  return createDockerEngine(docker);
}

/** The state folders of this run's sandboxes still there (their build records read when asked), and the builds recorded in those gone (by instance). */
const buildStateDirs = new Set<string>();
const builtBefore = new Map<string, Set<string>>();

/** A sandbox's state folder: what berth builds for an instance of this run is recorded there (build/records.ts). */
export function watchBuilds(stateDir: string): void {
  buildStateDirs.add(stateDir);
}

/** The build hashes each instance of this run built, by the records in `stateDir` (into `into`). */
function buildsIn(stateDir: string, into: Map<string, Set<string>>): Map<string, Set<string>> {
  for (const r of readBuildRecords(stateDir)) {
    if (!r.instance.startsWith(`${TEST_RUN}-`)) continue;
    const set = into.get(r.instance) ?? new Set<string>();
    set.add(r.hash);
    into.set(r.instance, set);
  }
  return into;
}

/** Before a state folder goes: the builds recorded there are kept (removeBuilt and the leak check still find their images). */
export function rememberBuilds(stateDir: string): void {
  buildsIn(stateDir, builtBefore);
  buildStateDirs.delete(stateDir);
}

/** The build hashes instances of this run built (the records of its state folders, there or gone), by instance. */
function runBuilds(): Map<string, Set<string>> {
  const out = new Map([...builtBefore].map(([k, v]) => [k, new Set(v)]));
  for (const dir of buildStateDirs) buildsIn(dir, out);
  return out;
}

function ours(labels: Record<string, string> | null | undefined, built?: Map<string, Set<string>>): boolean {
  if (!labels) return false;
  if (labels[TEST_LABEL] === TEST_RUN) return true;
  // an image berth built for an instance of this run (its build record says so: images carry no instance label)
  const hash = labels[LABELS.build];
  if (hash !== undefined && built && [...built.values()].some((h) => h.has(hash))) return true;
  const locked = labels[LOCK_LABELS.lock] ?? labels[LOCK_LABELS.claim] ?? labels[BINDING_LABELS.binding] ?? labels[BUILD_LOCK_LABELS.instance];
  if (typeof locked === 'string' && locked.startsWith(`${TEST_RUN}-`)) return true;
  const inst = labels[LABELS.instance];
  return labels[LABELS.managed] === 'true' && typeof inst === 'string' && inst.startsWith(`${TEST_RUN}-`);
}

/** Removes every resource of this test run (containers, then networks, then volumes); returns counts. */
export async function removeTestResources(): Promise<{ containers: number; networks: number; volumes: number }> {
  const filters = (label: string) => JSON.stringify({ label: [label] });
  const containers = [
    ...(await docker.listContainers({ all: true, filters: filters(LABELS.managed) })),
    ...(await docker.listContainers({ all: true, filters: filters(`${TEST_LABEL}=${TEST_RUN}`) })),
  ].filter((c) => ours(c.Labels));
  await Promise.all(
    [...new Set(containers.map((c) => c.Id))].map((id) =>
      docker
        .getContainer(id)
        .remove({ force: true })
        .catch(() => undefined),
    ),
  );
  const networks = [
    ...(await docker.listNetworks({ filters: filters(LABELS.managed) })),
    ...(await docker.listNetworks({ filters: filters(`${TEST_LABEL}=${TEST_RUN}`) })),
  ].filter((n) => ours(n.Labels));
  await Promise.all(
    [...new Set(networks.map((n) => n.Id))].map((id) =>
      docker
        .getNetwork(id)
        .remove()
        .catch(() => undefined),
    ),
  );
  const vols = [
    ...((await docker.listVolumes({ filters: filters(LABELS.managed) })).Volumes ?? []),
    ...((await docker.listVolumes({ filters: filters(`${TEST_LABEL}=${TEST_RUN}`) })).Volumes ?? []),
    ...(await lockVolumes()),
    ...(await bindingVolumes()),
  ].filter((v) => ours(v.Labels));
  await Promise.all(
    [...new Set(vols.map((v) => v.Name))].map((n) =>
      docker
        .getVolume(n)
        .remove()
        .catch(() => undefined),
    ),
  );
  // images berth built for this run's instances, or a test built by hand (after the containers made of them)
  const images = await builtImages();
  for (const i of images)
    await docker
      .getImage(i.Id)
      .remove({ force: true })
      .catch(() => undefined);
  return { containers: containers.length, networks: networks.length, volumes: vols.length };
}

/** Counts what is left of this test run on the engine. */
export async function countTestResources(): Promise<number> {
  const filters = (label: string) => JSON.stringify({ label: [label] });
  const c = (await docker.listContainers({ all: true, filters: filters(LABELS.managed) })).filter((x) => ours(x.Labels));
  const c2 = await docker.listContainers({ all: true, filters: filters(`${TEST_LABEL}=${TEST_RUN}`) });
  const n = (await docker.listNetworks({ filters: filters(LABELS.managed) })).filter((x) => ours(x.Labels));
  const n2 = await docker.listNetworks({ filters: filters(`${TEST_LABEL}=${TEST_RUN}`) });
  const v = ((await docker.listVolumes({ filters: filters(LABELS.managed) })).Volumes ?? []).filter((x) => ours(x.Labels));
  const v2 = (await docker.listVolumes({ filters: filters(`${TEST_LABEL}=${TEST_RUN}`) })).Volumes ?? [];
  const locks = (await lockVolumes()).filter((x) => ours(x.Labels));
  return c.length + c2.length + n.length + n2.length + v.length + v2.length + locks.length + (await builtImages()).length;
}

/** Images labeled dev.berth.build (berth built them) of this test run: built for one of its instances, or carrying its test label. */
export async function builtImages(): Promise<Dockerode.ImageInfo[]> {
  const built = runBuilds();
  return (await docker.listImages({ all: true, filters: JSON.stringify({ label: [LABELS.build] }) })).filter((i) => ours(i.Labels, built));
}

/** The images on `d` that berth built for an instance, by the build records of its state folder, there or gone (what a test built). */
export async function imagesBuiltFor(sb: { instance: string; stateDir: string }, d: Dockerode = docker): Promise<Dockerode.ImageInfo[]> {
  const hashes = new Set([
    ...readBuildRecords(sb.stateDir).flatMap((r) => (r.instance === sb.instance ? [r.hash] : [])),
    ...(builtBefore.get(sb.instance) ?? []),
  ]);
  if (hashes.size === 0) return [];
  return (await d.listImages({ filters: JSON.stringify({ label: [LABELS.build] }) })).filter((i) => hashes.has(i.Labels?.[LABELS.build] ?? ''));
}

/** Removes the images berth built for an instance (what a test built). */
export async function removeBuilt(sb: { instance: string; stateDir: string }): Promise<number> {
  const images = await imagesBuiltFor(sb);
  for (const i of images) await docker.getImage(i.Id).remove({ force: true });
  return images.length;
}

/**
 * Source bindings (src/status/source-binding.ts) of any instance (filter by `ours`). Removed with
 * the rest, but not counted as a leak: a binding is meant to outlive everything but `clean`, so a
 * test that ends without `berth clean` leaves one by design.
 */
async function bindingVolumes(): Promise<Dockerode.VolumeInspectInfo[]> {
  return (await docker.listVolumes({ filters: JSON.stringify({ label: [BINDING_LABELS.binding] }) })).Volumes ?? [];
}

/** Engine-side instance locks and takeover claims of any instance (filter by `ours`). */
async function lockVolumes(): Promise<Dockerode.VolumeInspectInfo[]> {
  const filters = (label: string) => JSON.stringify({ label: [label] });
  return [
    ...((await docker.listVolumes({ filters: filters(LOCK_LABELS.lock) })).Volumes ?? []),
    ...((await docker.listVolumes({ filters: filters(LOCK_LABELS.claim) })).Volumes ?? []),
    // a build's lock (src/build/lock.ts), by the instance whose berth holds it
    ...((await docker.listVolumes({ filters: filters(BUILD_LOCK_LABELS.lock) })).Volumes ?? []),
  ];
}

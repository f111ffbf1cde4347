/**
 * Image GC, observed and carried out (docs/CONTRACT.md "Images berth brought are collected"): the
 * controller runs it after a full pass, at most once every DEFAULTS.imageGcIntervalMs, one at a
 * time. It reads the engine data root's file system, the engine's images, what this instance
 * brought (an image built by this instance is in the build record of its hash with its id:
 * build/records.ts builtBy; a pulled one is in its pulls file with the id pulled) and what the
 * attempts not yet final need; the
 * decision is plan/image-gc.ts's. Each removal is `docker rmi` of berth's reference without force
 * (an image a container uses, or another tag names, stays as the engine keeps it), logged, and
 * kept in `<state>/<instance>/image-gc.json` (the ImageRemoved events, `berth images`).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { buildTag, DEFAULTS, FINISHED_PHASES, LABELS } from '../constants';
import type { Engine, ImageSummary } from '../engine/types';
import { readFs } from '../observe/disk';
import { imageIndex, resolveImage } from '../observe/images';
import { gcNotDue, planImageGc, type Brought, type ImageGcConfig, type ImageRemoval } from '../plan/image-gc';
import { settled } from '../plan/settled';
import { gradePending } from '../sets/grade-state';
import type { LoadedSpec } from '../spec/types';
import { writeFileAtomic } from '../status/atomic-file';
import type { AttemptStatus } from '../status/types';
import { showBytes } from '../util/bytes';
import { builtBy } from '../build/records';
import { pullsFile, type PullsFile } from './puller';

/** Removals kept in the file (the newest). */
const KEPT = 500;

export interface RemovedImage extends ImageRemoval {
  /** When it was removed (ISO). */
  at: string;
  why: string;
}

export const imageGcFile = (stateDir: string, instance: string): string => path.join(path.resolve(stateDir), instance, 'image-gc.json');

/** The removals recorded for an instance, oldest first (none when the file is missing or damaged). */
export function readRemovedImages(stateDir: string, instance: string): RemovedImage[] {
  try {
    const f = JSON.parse(readFileSync(imageGcFile(stateDir, instance), 'utf8')) as { removed?: RemovedImage[] };
    return Array.isArray(f.removed) ? f.removed.filter((r) => typeof r?.ref === 'string' && typeof r.at === 'string') : [];
  } catch {
    return [];
  }
}

/** The pulls file of an instance (puller.ts), as last written; empty when none was. */
function pulledBy(stateDir: string, instance: string): [string, NonNullable<PullsFile['pulls']>[string]][] {
  try {
    const f = JSON.parse(readFileSync(pullsFile(stateDir, instance), 'utf8')) as PullsFile;
    return Object.entries(f.pulls ?? {});
  } catch {
    return [];
  }
}

/** Whether an attempt is final for GC: its record is of its current spec, finished and settled (no retry, no grade to come). */
export function isFinal(l: LoadedSpec, rec: AttemptStatus | undefined, infraRetries: number | undefined): boolean {
  if (!rec || rec.specHash !== l.hash || !FINISHED_PHASES.has(rec.phase)) return false;
  return settled({ status: rec, retries: l.spec.retries, ...(infraRetries !== undefined ? { infraRetries } : {}), gradePending: gradePending(l, rec) });
}

/** The references an attempt's runs may still use: its image (or build), its sidecars', its grader's, the egress proxy's. */
function refsOf(l: LoadedSpec, proxy: string): string[] {
  const s = l.spec;
  const out = [s.image, ...s.sidecars.map((c) => c.image), proxy];
  if (s.grade?.image) out.push(s.grade.image);
  // a build's FROM images: berth pulled them for a build still to come
  out.push(...(s.build?.from ?? []), ...(s.grade?.build?.from ?? []));
  return out.filter(Boolean);
}

export interface ImageGcDeps {
  engine: Engine;
  stateDir: string;
  instance: string;
  config: ImageGcConfig;
  proxyImage?: string;
  infraRetries?: number;
  log: { debug(m: string): void; info(m: string): void; warn(m: string): void };
  now: () => number;
}

/** One GC round over what this load and these records say; the removals made. */
export async function collectImages(d: ImageGcDeps, specs: readonly LoadedSpec[], statuses: ReadonlyMap<string, AttemptStatus>): Promise<RemovedImage[]> {
  const dataRoot = await d.engine.local?.dataRoot();
  const reading = dataRoot
    ? dataRoot.local
      ? await readFs('engine-data-root', dataRoot.path)
      : { what: 'engine-data-root' as const, path: dataRoot.path, skipped: 'the engine is remote' }
    : undefined;
  if (!reading || reading.skipped) {
    d.log.debug(`image GC: the engine's data root cannot be read${reading?.skipped ? `: ${reading.skipped}` : ''}`);
    return [];
  }
  // not above the high mark: nothing to gather (the decision would remove nothing)
  const notDue = gcNotDue(reading, d.config);
  if (notDue !== undefined) {
    d.log.debug(`image GC: ${notDue}; nothing to remove`);
    return [];
  }
  const images: ImageSummary[] = await d.engine.images.list([]);
  const index = imageIndex(images);
  const proxy = d.proxyImage ?? DEFAULTS.egressProxyImage;
  const needed = new Set<string>();
  const lastUsed = new Map<string, number>();
  for (const l of specs) {
    const rec = statuses.get(l.spec.name);
    const used = rec?.image?.id;
    const t = Date.parse(rec?.finishedAt ?? rec?.startedAt ?? '');
    if (used && Number.isFinite(t)) lastUsed.set(used, Math.max(lastUsed.get(used) ?? 0, t));
    if (isFinal(l, rec, d.infraRetries)) continue;
    if (used) needed.add(used);
    for (const ref of refsOf(l, proxy)) {
      const held = resolveImage(index, ref);
      if (held) needed.add(held.id);
    }
  }
  // an image a container uses (any container: the engine would refuse it anyway) is needed
  for (const c of await d.engine.containers.list([])) if (c.imageId) needed.add(c.imageId);
  const brought: Brought[] = [];
  for (const i of images) {
    const hash = i.labels[LABELS.build];
    if (!hash) continue;
    const rec = builtBy(d.stateDir, hash, i.id, d.instance);
    if (!rec) continue;
    brought.push({ id: i.id, ref: buildTag(hash), how: 'built', at: Date.parse(rec.at) });
  }
  for (const [ref, p] of pulledBy(d.stateDir, d.instance)) if (p.pulled) brought.push({ id: p.pulled.id, ref, how: 'pulled', at: p.pulled.at });
  const decision = planImageGc({
    config: d.config,
    reading,
    images: images.map((i) => ({ id: i.id, tags: i.tags, ...(i.size !== undefined ? { size: i.size } : {}) })),
    brought,
    needed,
    own: new Set([proxy, ...DEFAULTS.ownImages]),
    lastUsed,
    now: d.now(),
  });
  d.log.debug(`image GC: ${decision.why}; ${brought.length} images brought by berth, ${decision.removals.length} to remove`);
  const removed: RemovedImage[] = [];
  for (const r of decision.removals) {
    try {
      if (!(await d.engine.images.remove(r.ref))) continue;
    } catch (err) {
      d.log.warn(`image GC: ${r.ref} kept: ${(err as Error).message}`);
      continue;
    }
    const at = new Date(d.now()).toISOString();
    d.log.info(`image GC: removed ${r.ref} (${r.how} by berth, ${showBytes(r.size)}, last used ${new Date(r.lastUsed).toISOString()}): ${decision.why}`);
    removed.push({ ...r, at, why: decision.why });
  }
  if (removed.length) {
    const all = [...readRemovedImages(d.stateDir, d.instance), ...removed].slice(-KEPT);
    await writeFileAtomic(imageGcFile(d.stateDir, d.instance), `${JSON.stringify({ removed: all }, null, 2)}\n`, { mode: 0o600 });
  }
  return removed;
}

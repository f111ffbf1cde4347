/**
 * The one ownership rule, for every kind of resource and every code path (observe, the
 * executor's name conflicts, clean): berth touches a resource only when it created it.
 *
 * - Its labels attest this instance (`managed=true`, `instance`, an attempt).
 * - The labels are on the resource itself, not inherited from its image. Networks and volumes
 *   have no image. A container inherits its image's labels, so berth stamps every container
 *   it creates with a random `nonce` label: a container whose nonce differs from its image's
 *   (or whose image carries no berth labels at all) was labeled at create, by berth; one whose
 *   nonce equals its image's (a hand-run container of an image committed from a berth
 *   container), or that has none while its image carries berth labels, inherited them.
 *   Containers made before the nonce existed count as berth's when a status record names them.
 *   This needs no status record for any container berth makes now: `clean` decides without them.
 * - The instance's records agree: a record that names the container's id for another attempt
 *   or instance makes it not ours.
 */
import { randomBytes } from 'node:crypto';
import { LABELS } from './constants';
import type { ContainerCreateSpec, ImageSummary, Labels } from './engine/types';
import type { AttemptStatus } from './status/types';

export type Ownership = { owned: true; attempt: string } | { owned: false; why: string };

/** Container ids the status records name: id → the attempt and instance of the record naming it. */
export type RecordedContainers = ReadonlyMap<string, { attempt: string; instance: string }>;

/** What decides a container's ownership besides its own labels. */
export interface OwnershipContext {
  instance: string;
  /** Labels of the images that carry berth labels, by image id (`engine.images.list([LABELS.managed])`). */
  labeledImages: ReadonlyMap<string, Labels>;
  /** Ids named by the instance's status records; empty when there are none (or they cannot be read). */
  recorded: RecordedContainers;
}

/** The ids the records name (`containerId`), each with its record's attempt and instance. */
export function recordedContainers(statuses: Iterable<AttemptStatus>): RecordedContainers {
  // (issue 55) the records themselves by container id, each read as { attempt, instance } when asked:
  // a controller's batch over 100,000 records makes no object per record
  const byId = new Map<string, AttemptStatus>();
  for (const s of statuses) if (s.containerId) byId.set(s.containerId, s);
  return new RecordIndex(byId);
}

/** The records by container id, read as recordedContainers reads them (status/container-index.ts keeps one). */
export function recordIndex(byId: ReadonlyMap<string, AttemptStatus>): RecordedContainers {
  return new RecordIndex(byId);
}

/** Container id → the attempt and instance whose record holds it (a read-only view over the records). */
class RecordIndex implements RecordedContainers {
  constructor(private readonly byId: ReadonlyMap<string, AttemptStatus>) {}
  get size(): number {
    return this.byId.size;
  }
  get(id: string): { attempt: string; instance: string } | undefined {
    const s = this.byId.get(id);
    return s && { attempt: s.name, instance: s.instance };
  }
  has(id: string): boolean {
    return this.byId.has(id);
  }
  *entries(): MapIterator<[string, { attempt: string; instance: string }]> {
    for (const [id, s] of this.byId) yield [id, { attempt: s.name, instance: s.instance }];
  }
  keys(): MapIterator<string> {
    return this.byId.keys();
  }
  *values(): MapIterator<{ attempt: string; instance: string }> {
    for (const s of this.byId.values()) yield { attempt: s.name, instance: s.instance };
  }
  forEach(f: (v: { attempt: string; instance: string }, k: string, m: RecordedContainers) => void): void {
    for (const [k, v] of this.entries()) f(v, k, this);
  }
  [Symbol.iterator](): MapIterator<[string, { attempt: string; instance: string }]> {
    return this.entries();
  }
}

/** The labeled images of an image list, by id. */
export function imageLabels(images: readonly ImageSummary[]): Map<string, Labels> {
  return new Map(images.map((i) => [i.id, i.labels]));
}

/** A fresh nonce for one create. */
export function newNonce(): string {
  return randomBytes(12).toString('hex');
}

/** `spec` with a fresh nonce label: what the executor hands the engine for every container create. */
export function stampNonce(spec: ContainerCreateSpec): ContainerCreateSpec {
  return { ...spec, labels: { ...spec.labels, [LABELS.nonce]: newNonce() } };
}

/** Do `labels` attest `instance`? (Networks and volumes: this is the whole rule.) */
export function labelOwnership(labels: Labels, instance: string): Ownership {
  const attempt = labels[LABELS.attempt];
  if (labels[LABELS.managed] !== 'true') return { owned: false, why: 'it carries no berth labels' };
  if (labels[LABELS.instance] !== instance) return { owned: false, why: `its labels name another instance than ${instance}` };
  if (!attempt) return { owned: false, why: 'its labels name no attempt' };
  return { owned: true, attempt };
}

/** The rule for a container (a list entry or an inspect: its own labels, as the engine reports them, and its image id). */
export function containerOwnership(c: { id: string; labels: Labels; imageId: string }, ctx: OwnershipContext): Ownership {
  const byLabels = labelOwnership(c.labels, ctx.instance);
  if (!byLabels.owned) return byLabels;
  const rec = ctx.recorded.get(c.id);
  if (rec && (rec.attempt !== byLabels.attempt || rec.instance !== ctx.instance)) {
    return { owned: false, why: `the status records name it for attempt ${rec.attempt} of instance ${rec.instance}` };
  }
  const image = ctx.labeledImages.get(c.imageId);
  if (!image || image[LABELS.managed] === undefined) return byLabels;
  const nonce = c.labels[LABELS.nonce];
  if (nonce !== undefined && nonce !== image[LABELS.nonce]) return byLabels;
  if (nonce === undefined && rec) return byLabels;
  return { owned: false, why: 'its berth labels come from its image' };
}

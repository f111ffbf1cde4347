/**
 * Creates that may meet a name already taken: networks and volumes (their whole operation), and
 * the ownership of a container that holds a name (src/ownership.ts, the one rule). What holds a
 * name is reported as a `conflict`; what that means is the planner's (plan/follow-up.ts).
 */
import { LABELS } from '../constants';
import { isConflict } from '../engine/errors';
import type { ContainerDetails, NetworkCreateSpec, VolumeCreateSpec } from '../engine/types';
import { containerOwnership, imageLabels, labelOwnership, recordedContainers } from '../ownership';
import type { OpOutcome } from '../plan/types';
import type { ExecContext } from './context';
import { DONE } from './outcome';

/** Creates a network; a name already taken (409) is reported with its holder's ownership. */
export async function createNetwork(x: ExecContext, spec: NetworkCreateSpec): Promise<OpOutcome> {
  const { engine, instance } = x.deps;
  try {
    await engine.networks.create(spec);
    return DONE;
  } catch (err) {
    if (!isConflict(err)) throw err;
  }
  const held = await engine.networks.inspect(spec.name);
  return { type: 'conflict', kind: 'network', name: spec.name, id: held.id, owner: labelOwnership(held.labels, instance) };
}

/**
 * Creates a volume. The engine answers a create of a volume name that exists with that volume
 * (not 409): its labels tell whose it is, so a volume whose labels are not the ones asked for is
 * reported as a conflict.
 */
export async function createVolume(x: ExecContext, spec: VolumeCreateSpec): Promise<OpOutcome> {
  const { engine, instance } = x.deps;
  await engine.volumes.create(spec).catch((err: unknown) => {
    if (!isConflict(err)) throw err;
  });
  const held = await engine.volumes.inspect(spec.name);
  const asked = spec.labels;
  const same = Object.keys(asked).length === Object.keys(held.labels).length && Object.entries(asked).every(([k, v]) => held.labels[k] === v);
  if (same) return DONE;
  return { type: 'conflict', kind: 'volume', name: spec.name, id: held.name, owner: labelOwnership(held.labels, instance) };
}

/** Whose is the container that holds a name (a container create met 409), by the ownership rule. */
export async function containerHolder(x: ExecContext, existing: ContainerDetails): Promise<ReturnType<typeof containerOwnership>> {
  const [images, records] = await Promise.all([x.deps.engine.images.list([LABELS.managed]), x.records.loadAll()]);
  return containerOwnership(existing, { instance: x.deps.instance, labeledImages: imageLabels(images), recorded: recordedContainers(records.values()) });
}

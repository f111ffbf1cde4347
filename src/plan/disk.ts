/**
 * resources.disk where berth measures: a running attempt whose last measure (observe/disk.ts,
 * taken of this run's container) holds more than its run's limit (fixed at its start, in its
 * record) is over it, and so is one with a volume that holds more than its own size
 * (spec.volumes[].size, where berth measures it). Pure; the planner stops it (TERM, grace, KILL,
 * as at a deadline).
 */
import type { DiskUsage } from '../observe/types';
import type { AttemptStatus } from '../status/types';
import { showBytes } from '../util/bytes';

/** Why the run of container `id` is over its disk limit or a volume over its size, or undefined: it is not (or was not measured). */
export function diskExceeded(rec: AttemptStatus | undefined, usage: DiskUsage | undefined, id: string): string | undefined {
  if (!usage || usage.containerId !== id) return undefined;
  const by = usage.countedBy ? `; counted by ${usage.countedBy}` : '';
  for (const v of rec?.volumeSizes ?? []) {
    const held = usage.sized?.[v.name];
    if (held !== undefined && held > v.bytes) return `volume ${v.name} (${v.mountPath}) holds ${showBytes(held)}, over its size ${showBytes(v.bytes)}${by}`;
  }
  const limit = rec?.disk;
  if (!limit || usage.bytes <= limit.bytes) return undefined;
  const { layer, results, volumes } = usage.parts;
  // a part counted after the limit was passed is not measured, and not named
  const parts = [
    ...(layer !== undefined ? [`writable layer ${showBytes(layer)}`] : []),
    ...(results !== undefined ? [`results ${showBytes(results)}`] : []),
    ...(volumes !== undefined ? [`volumes ${showBytes(volumes)}`] : []),
  ];
  const from = limit.source === 'default' ? '--default-disk' : 'resources.disk';
  return `disk use ${usage.complete ? '' : 'at least '}${showBytes(usage.bytes)} exceeds ${from} ${showBytes(limit.bytes)} (${parts.join(', ')}; ${usage.countedBy ? `counted by ${usage.countedBy}` : `${usage.entries} entries`})`;
}

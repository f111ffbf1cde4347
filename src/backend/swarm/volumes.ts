/**
 * Attempts' volumes (spec.volumes) on a swarm. A Docker volume is node-local, so an attempt's
 * volumes live on one node and every run of the attempt goes there (runs.ts: volumeNode).
 *
 *  - create: the node is the one the attempt's other volumes are on, or the one berth chooses
 *    for it now as for a run (the fewest runs, nodes.ts); the attempt's runs, its egress proxy
 *    and its sidecars then follow it. The volume is made through that node's engine, with
 *    berth's labels and the node's id (SWARM.volumeNodeLabel), after its record: a volume of the
 *    same name and labels on the manager's engine, which holds no data (unless the manager is
 *    that node: then record and volume are one). The records are what observe, GC, TTL and
 *    `clean` list (the manager's volumes, as before: no call more per pass), so a volume on a
 *    node that is down or gone is still seen, and never silently made again elsewhere.
 *  - remove: the volume on its node (waiting while a task's container going away still holds
 *    it), then its record. A node that is down keeps both (the removal fails, naming the node,
 *    and is retried by the next GC or clean once it is back); a node that has left the swarm
 *    took the volume with it, and only the record goes.
 * The node's id is berth's bookkeeping: list and inspect show the labels the attempt asked for.
 */
import { COMPONENTS, LABELS, SWARM } from '../../constants';
import { isConflict, isNotFound } from '../../engine/errors';
import type { Labels, VolumeClient, VolumeCreateSpec, VolumeSummary } from '../../engine/types';
import { nodeName, type NodeHandle, type NodePool } from './nodes';

/** A volume as the attempt asked for it: without the node's id. */
function asAsked(v: VolumeSummary): VolumeSummary {
  const { [SWARM.volumeNodeLabel]: _n, ...labels } = v.labels;
  return { ...v, labels };
}

/** Retries a removal while the engine says the volume is in use (a task's container is going). */
async function whenFree(remove: () => Promise<boolean>): Promise<boolean> {
  for (let i = 0; ; i++) {
    try {
      return await remove();
    } catch (err) {
      if (i >= 100 || !isConflict(err)) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export class SwarmVolumes implements VolumeClient {
  constructor(
    /** The manager's engine's volumes: berth's lock, and the records of attempts' volumes. */
    private readonly manager: VolumeClient,
    private readonly pool: NodePool,
    /** The node an attempt's new volume goes to (runs.ts: placeVolume). */
    private readonly place: (labels: Labels) => Promise<NodeHandle>,
  ) {}

  /** The manager's volumes but a run's own helpers (when the manager is also their node). */
  async list(labelFilters: string[]): Promise<VolumeSummary[]> {
    return (await this.manager.list(labelFilters)).filter((v) => v.labels[SWARM.runLabel] === undefined).map(asAsked);
  }

  async inspect(name: string): Promise<VolumeSummary> {
    return asAsked(await this.manager.inspect(name));
  }

  private async record(name: string): Promise<VolumeSummary | undefined> {
    return this.manager.inspect(name).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
  }

  async create(spec: VolumeCreateSpec): Promise<string> {
    if (spec.labels[LABELS.component] !== COMPONENTS.volume) return this.manager.create(spec);
    // a name that exists is answered with that volume, as an engine does (the executor compares its labels)
    if (await this.record(spec.name)) return spec.name;
    const h = await this.place(spec.labels);
    const labels = { ...spec.labels, [SWARM.volumeNodeLabel]: h.node.id };
    // the record first: a berth killed between the two leaves a record whose volume the run's
    // create makes on that node (runs.ts), never a volume nobody lists
    await this.manager.create({ name: spec.name, labels });
    await h.engine.volumes.create({ name: spec.name, labels });
    return spec.name;
  }

  async remove(name: string): Promise<boolean> {
    const rec = await this.record(name);
    const nodeId = rec?.labels[SWARM.volumeNodeLabel];
    if (!rec || !nodeId) return this.manager.remove(name);
    const n = (await this.pool.all()).find((x) => x.id === nodeId);
    if (n) {
      if (n.state !== 'ready') throw new Error(`volume ${name} is on swarm node ${nodeName(n)}, which is ${n.state}: it is removed once that node is back`);
      const h = this.pool.handle(n);
      if (!h) throw new Error(`volume ${name} is on swarm node ${nodeName(n)}, which names no engine (${SWARM.engineLabel}) berth could remove it through`);
      await whenFree(() => h.engine.volumes.remove(name));
    }
    // (a node that has left the swarm took the volume with it: only its record is left)
    await whenFree(() => this.manager.remove(name));
    return true;
  }
}

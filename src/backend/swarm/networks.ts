/**
 * Networks of attempts on a swarm: overlay networks made through the manager (attachable, with
 * berth's labels, internal as the desired state says), so a run's task on any node can sit on
 * its attempt's network. What a network holds is read from the nodes' own engines (the manager
 * knows only its own containers on an overlay), each task's container named by its run's id,
 * so the executor's topology attestation reads the same thing as on one engine.
 *
 * Where a task's container really sits (taskNetworks): its own networks as its node's engine
 * reports them, plus `ingress` and `docker_gwbridge` when it is on them. `docker_gwbridge` is an
 * overlay's way out of the node: it belongs to a container on a network that is not internal
 * (the egress proxy), and is reported as a network of its own for one on internal ones only, so
 * the attestation refuses it (libnetwork#1858: an internal overlay leaking through them).
 */
import { SWARM } from '../../constants';
import { isConflict, isNotFound, statusOf } from '../../engine/errors';
import type { SwarmEngine } from '../../engine/swarm/types';
import { matchesLabels } from '../../engine/label-filter';
import type { ContainerDetails, NetworkClient, NetworkCreateSpec, NetworkDetails, NetworkSummary } from '../../engine/types';
import { runId, type NodeHandle, type NodePool } from './nodes';

/** The networks swarm puts a task's container on by itself. */
export const SWARM_NETWORKS = { ingress: 'ingress', gateway: 'docker_gwbridge' } as const;

/** The network a run's task attaches to, as its prepared container records it (SWARM.netLabel). */
export interface RunNet {
  network: string;
  aliases: string[];
  dns: string[];
  /** The run's own internal overlay: the swarm's `none` (a service cannot have no network at all). */
  private: boolean;
}

export function parseRunNet(label: string | undefined): RunNet | undefined {
  if (!label) return undefined;
  try {
    const v = JSON.parse(label) as RunNet;
    return typeof v.network === 'string' ? { network: v.network, aliases: v.aliases ?? [], dns: v.dns ?? [], private: v.private === true } : undefined;
  } catch {
    return undefined;
  }
}

/** The name of a run's own internal overlay (network mode `none`). */
export const privateNetwork = (run: string) => `${run}-none`;

/**
 * The networks a running task's container sits on, as its node's engine says: its own, `ingress`
 * if it is on it, and `docker_gwbridge` if it is on it while on internal networks only. A private network
 * of the run's (`none`) is shown as `none` when the container is alone on it.
 */
export async function taskNetworks(h: NodeHandle, inner: ContainerDetails, run: string): Promise<string[]> {
  const on = async (net: string) =>
    h.engine.networks.inspect(net).then(
      (n) => n.containers.includes(inner.id),
      (err: unknown) => {
        if (isNotFound(err)) return false;
        throw err;
      },
    );
  const own = await Promise.all(
    inner.networks.map((n) =>
      h.engine.networks.inspect(n).catch((err: unknown) => {
        // gone from the node meanwhile (its last task ended): shown by its name, as not internal
        if (isNotFound(err)) return { name: n, internal: false, labels: {} as Record<string, string>, containers: [] as string[] };
        throw err;
      }),
    ),
  );
  const out: string[] = [];
  for (const n of own) {
    const others = n.containers.filter((c) => c !== inner.id && c !== `lb-${n.name}`);
    out.push(n.name === privateNetwork(run) && n.internal && n.labels[SWARM.runLabel] === run && others.length === 0 ? 'none' : n.name);
  }
  if (await on(SWARM_NETWORKS.ingress)) out.push(SWARM_NETWORKS.ingress);
  if (own.every((n) => n.internal) && (await on(SWARM_NETWORKS.gateway))) out.push(SWARM_NETWORKS.gateway);
  return [...new Set(out)].sort();
}

/**
 * The manager's networks, listed once for the calls of SWARM.nodesFreshMs (a pass lists the
 * attempts' networks, and the runs' list needs every network by id: one request for both, so a
 * no-op pass stays at a constant number); any filter is applied here, as the engine would. A
 * create or remove through it makes the next list ask again.
 */
export function sharedNetworkList(inner: NetworkClient, clock: () => number = Date.now): NetworkClient {
  let recent: { at: number; list: Promise<NetworkSummary[]> } | undefined;
  const changed = <T>(p: Promise<T>): Promise<T> => {
    recent = undefined;
    return p.finally(() => (recent = undefined));
  };
  return {
    async list(labelFilters) {
      const now = clock();
      if (!recent || now - recent.at > SWARM.nodesFreshMs) {
        const list = inner.list([]);
        const mine = { at: now, list };
        recent = mine;
        list.catch(() => {
          if (recent === mine) recent = undefined;
        });
      }
      return (await recent.list).filter((n) => matchesLabels(n.labels, labelFilters));
    },
    inspect: (idOrName) => inner.inspect(idOrName),
    create: (spec) => changed(inner.create(spec)),
    connect: (network, container) => changed(inner.connect(network, container)),
    remove: (idOrName) => changed(removed(inner, idOrName)),
  };
}

/**
 * Removes an overlay and waits (bounded: 10 s) until the manager no longer lists it: seen here,
 * the manager lists an overlay for a moment after its removal, so a `clean` that lists again
 * right after would find it left; and a second removal then answers 500 ("not found"). A 500 is
 * judged by what the manager shows, not by its text: gone from the list, the overlay was removed;
 * still listed at the bound, the removal failed.
 */
async function removed(inner: NetworkClient, idOrName: string): Promise<boolean> {
  let out = false;
  let failure: { err: unknown } | undefined;
  try {
    out = await inner.remove(idOrName);
  } catch (err) {
    if (statusOf(err) !== 500) throw err;
    failure = { err };
  }
  for (let i = 0; i < 100; i++) {
    const all = await inner.list([]);
    if (!all.some((n) => n.id === idOrName || n.name === idOrName)) return out;
    await new Promise((r) => setTimeout(r, 100));
  }
  if (failure) throw failure.err;
  return out;
}

/** Waits while the manager says a network is still in use (its tasks' containers are going). */
async function whenFree<T>(f: () => Promise<T>): Promise<T> {
  for (let i = 0; ; i++) {
    try {
      return await f();
    } catch (err) {
      const busy = isConflict(err) || /in use|active endpoints/i.test((err as Error).message ?? '');
      if (i >= 100 || !busy) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export class SwarmNetworks implements NetworkClient {
  constructor(
    private readonly swarm: SwarmEngine,
    private readonly pool: NodePool,
    /** Records a network a run's task is to be attached to as well (before its start), durably. */
    private readonly attach: (network: string, run: string) => Promise<void>,
  ) {}

  /** berth's networks of attempts (a run's own `none` network is its run's, not the attempt's). */
  async list(labelFilters: string[]): Promise<NetworkSummary[]> {
    return (await this.swarm.networks.list(labelFilters)).filter((n) => n.labels[SWARM.runLabel] === undefined);
  }

  /** The network, holding the runs whose tasks' containers are on it on any ready node (by run id), and any other container by its id. */
  async inspect(idOrName: string): Promise<NetworkDetails> {
    const n = await this.swarm.networks.inspect(idOrName);
    const members: string[] = [];
    // a node that is down shows nothing (its runs are lost, as runs.ts says); it is not waited for
    for (const h of (await this.pool.reachable()).filter((x) => x.node.state === 'ready')) {
      const local = await h.engine.networks.inspect(n.id).catch((err: unknown) => {
        if (isNotFound(err)) return undefined; // no task on it there
        throw err;
      });
      if (!local) continue;
      const tasks = new Map((await h.engine.containers.list([SWARM.taskLabel])).map((c) => [c.id, c.labels[SWARM.taskLabel] as string]));
      for (const c of local.containers) {
        if (c === `lb-${n.name}`) continue; // the node's own endpoint of the overlay
        const run = tasks.get(c);
        members.push(run ? runId(run, h.node.id) : c);
      }
    }
    return { ...n, containers: members.sort() };
  }

  /** An overlay through the manager: attachable, internal as asked, berth's labels. */
  create(spec: NetworkCreateSpec): Promise<string> {
    return this.swarm.networks.create({ ...spec, driver: 'overlay', attachable: true });
  }

  /** A run is attached before its task starts: the network goes into its service. */
  connect(network: string, container: string): Promise<void> {
    return this.attach(network, container);
  }

  remove(idOrName: string): Promise<boolean> {
    return whenFree(() => this.swarm.networks.remove(idOrName));
  }
}

/**
 * The swarm backend: a Docker Swarm manager (DOCKER_HOST) and the nodes' own engines (each
 * node's SWARM.engineLabel), behind the same Engine interface the single engine implements, so
 * observe, the planner, the executor, status, summaries and the report do not know which runs.
 * Runs are replicated-job services (runs.ts), an attempt's sidecars and egress proxy runs of
 * their own on its node; attempts' networks are overlays (networks.ts); attempts' volumes are
 * node-local volumes on one node, recorded on the manager, and the attempt's runs go there
 * (volumes.ts).
 */
import type Dockerode from 'dockerode';
import { DEFAULTS } from '../../constants';
import { createDockerEngine, dockerFromEnv } from '../../engine/docker';
import { createSwarmEngine } from '../../engine/swarm';
import type { Engine, NetworkClient, VolumeClient } from '../../engine/types';
import { SwarmEvents } from './events';
import { sharedNetworkList, SwarmNetworks } from './networks';
import { NodePool } from './nodes';
import { SwarmRuns } from './runs';
import { SwarmVolumes } from './volumes';
import { NodeImages } from './images';

export interface SwarmBackendOptions {
  /** The manager (default: from DOCKER_HOST). */
  docker?: Dockerode;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /** The image the hardening probe runs (it needs /usr/bin/node): berth's egress proxy image by default. */
  probeImage?: string;
  /** The clock every time the backend reads comes from (caches' ages, deadlines, nodes' time down, events' times). */
  now?: () => number;
}

export function createSwarmBackend(o: SwarmBackendOptions = {}): Engine & { runs: SwarmRuns; pool: NodePool } {
  const env = o.env ?? process.env;
  const d = o.docker ?? dockerFromEnv(env);
  const timeouts = o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {};
  const manager = createDockerEngine(d, { ...timeouts, env });
  const raw = createSwarmEngine(d, { ...timeouts, env });
  // one list of the manager's networks serves a pass's calls (networks.ts)
  const now = o.now ?? Date.now;
  const swarm = { ...raw, networks: sharedNetworkList(raw.networks, now) };
  const pool = new NodePool(swarm, o.probeImage ?? DEFAULTS.egressProxyImage, o.timeoutMs, now);
  const runs = new SwarmRuns(swarm, pool, manager.volumes, now);
  // a run's image on its node before it is prepared there (images.ts)
  runs.images = new NodeImages(manager.images);
  // the manager's own volumes (berth's engine-side instance lock lives there) and the records of
  // attempts' volumes, each on the node its attempt's runs go to (volumes.ts)
  const volumes: VolumeClient = new SwarmVolumes(manager.volumes, pool, (labels) => runs.placeVolume(labels));
  // attempts' networks: overlays through the manager, what they hold read from the nodes (networks.ts)
  const networks: NetworkClient = new SwarmNetworks(swarm, pool, (net, id) => runs.attach(net, id));
  return {
    containers: runs,
    networks,
    volumes,
    images: manager.images,
    // the manager's events merged with each node's (its tasks' ends): events.ts
    events: new SwarmEvents(manager.events, swarm, pool, now),
    ping: () => manager.ping(),
    version: () => manager.version(),
    reach: (id: string) => runs.reach(id),
    // the manager's: each node's engine is checked when it is probed (backend/swarm/nodes.ts)
    isolation: () => manager.isolation(),
    address: swarm.address,
    useCredentials: (credentialFor) => {
      runs.images = new NodeImages(manager.images, credentialFor);
    },
    abandon: (reason: string) => {
      manager.abandon(reason);
      swarm.abandon(reason);
    },
    // a swarm has no one boot (each node's engine has its own; a node's restart reaches berth as its tasks' ends)
    boot: () => Promise.resolve(undefined),
    local: null,
    remote: runs,
    // images are built on the manager (the engine whose images the planner sees); a node gets one as a run there needs it
    builds: manager.builds,
    runs,
    pool,
  };
}

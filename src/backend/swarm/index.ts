/**
 * The swarm backend: a Docker Swarm manager (DOCKER_HOST) and the nodes' own engines (each
 * node's SWARM.engineLabel), behind the same Engine interface the single engine implements, so
 * observe, the planner, the executor, status, summaries and the report do not know which runs.
 * Runs are replicated-job services (runs.ts); attempts' networks are overlays (networks.ts);
 * attempts' volumes and sidecars are refused until the backend provides them (an attempt that
 * needs them ends Blocked, never weakened).
 */
import type Dockerode from 'dockerode';
import { COMPONENTS, DEFAULTS, LABELS, REASONS, SWARM } from '../../constants';
import { BackendRefusedError } from '../../engine/errors';
import { createDockerEngine, dockerFromEnv } from '../../engine/docker';
import { createSwarmEngine } from '../../engine/swarm';
import type { Engine, Labels, NetworkClient, VolumeClient } from '../../engine/types';
import { SwarmEvents } from './events';
import { sharedNetworkList, SwarmNetworks } from './networks';
import { NodePool } from './nodes';
import { SwarmRuns } from './runs';

export interface SwarmBackendOptions {
  /** The manager (default: from DOCKER_HOST). */
  docker?: Dockerode;
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
  /** The image the hardening probe runs (it needs /usr/bin/node): berth's egress proxy image by default. */
  probeImage?: string;
}

/** What the swarm backend does not provide yet: refused, so the attempt never runs without it. */
function notYet(labels: Labels, what: string): BackendRefusedError {
  return new BackendRefusedError(REASONS.nodeRefused, `attempt ${labels[LABELS.attempt] ?? '?'} needs ${what}, which --backend swarm does not provide yet; it is not run without it`);
}

export function createSwarmBackend(o: SwarmBackendOptions = {}): Engine & { runs: SwarmRuns; pool: NodePool } {
  const env = o.env ?? process.env;
  const d = o.docker ?? dockerFromEnv(env);
  const timeouts = o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {};
  const manager = createDockerEngine(d, { ...timeouts, env });
  const raw = createSwarmEngine(d, { ...timeouts, env });
  // one list of the manager's networks serves a pass's calls (networks.ts)
  const swarm = { ...raw, networks: sharedNetworkList(raw.networks) };
  const pool = new NodePool(swarm, o.probeImage ?? DEFAULTS.egressProxyImage, o.timeoutMs);
  const runs = new SwarmRuns(swarm, pool);
  // The manager's own volumes (berth's engine-side instance lock lives there); an attempt's
  // volumes would have to be on its run's node: refused for now.
  const volumes: VolumeClient = {
    // a run's own volumes (when the manager is also its node) are its run's, not the attempt's
    list: async (f) => (await manager.volumes.list(f)).filter((v) => v.labels[SWARM.runLabel] === undefined),
    inspect: (name) => manager.volumes.inspect(name),
    create: (spec) => (spec.labels[LABELS.component] === COMPONENTS.volume ? Promise.reject(notYet(spec.labels, 'volumes')) : manager.volumes.create(spec)),
    remove: (name) => manager.volumes.remove(name),
  };
  // attempts' networks: overlays through the manager, what they hold read from the nodes (networks.ts)
  const networks: NetworkClient = new SwarmNetworks(swarm, pool, (net, id) => runs.attach(net, id));
  return {
    containers: runs,
    networks,
    volumes,
    images: manager.images,
    // the manager's events merged with each node's (its tasks' ends): events.ts
    events: new SwarmEvents(manager.events, swarm, pool),
    ping: () => manager.ping(),
    version: () => manager.version(),
    address: swarm.address,
    abandon: (reason: string) => {
      manager.abandon?.(reason);
      swarm.abandon(reason);
    },
    runs,
    pool,
  };
}

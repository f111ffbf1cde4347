/**
 * A Docker Swarm manager over dockerode, every call under a deadline (the single engine's
 * BoundedCalls: the same budget, the same EngineUnreachableError naming where berth looked).
 */
import type Dockerode from 'dockerode';
import { DEFAULTS } from '../../constants';
import { envAddress, modemAddress } from '../docker/address';
import { BoundedCalls } from '../docker/deadline';
import { dockerFromEnv, negotiateApiOn } from '../docker/index';
import { DockerNetworks } from '../docker/networks';
import { SwarmNodes } from './nodes';
import { SwarmSecrets } from './secrets';
import { SwarmServices } from './services';
import { SwarmTasks } from './tasks';
import type { SwarmEngine } from './types';

export class NotASwarmManagerError extends Error {
  constructor(
    readonly address: string,
    state: string,
  ) {
    super(`the Docker engine at ${address} is no swarm manager (swarm: ${state || 'inactive'}); --backend swarm needs DOCKER_HOST to point at one`);
    this.name = 'NotASwarmManagerError';
  }
}

export function createSwarmEngine(docker?: Dockerode, o: { timeoutMs?: number; env?: NodeJS.ProcessEnv } = {}): SwarmEngine {
  const env = o.env ?? process.env;
  const d = docker ?? dockerFromEnv(env);
  const calls = new BoundedCalls(d, o.timeoutMs ?? DEFAULTS.engineTimeoutMs, docker ? modemAddress(d) : envAddress(env));
  // the API version as the engine's other calls talk it (once per client: the manager's engine may have asked already)
  negotiateApiOn(d, calls);
  return {
    services: new SwarmServices(d, calls),
    tasks: new SwarmTasks(d, calls),
    secrets: new SwarmSecrets(d, calls),
    networks: new DockerNetworks(d, calls),
    nodes: new SwarmNodes(d, calls),
    address: calls.address,
    async manager() {
      const info = (await calls.run('info', () => d.info())) as {
        Swarm?: { NodeID?: string; LocalNodeState?: string; ControlAvailable?: boolean; Cluster?: { ID?: string } };
      };
      const s = info.Swarm ?? {};
      if (!s.ControlAvailable || !s.Cluster?.ID)
        throw new NotASwarmManagerError(calls.address, s.ControlAvailable === false && s.LocalNodeState === 'active' ? 'a worker' : (s.LocalNodeState ?? ''));
      return { swarmId: s.Cluster.ID, nodeId: s.NodeID ?? '' };
    },
    abandon(reason: string) {
      calls.abandon(reason);
    },
  };
}

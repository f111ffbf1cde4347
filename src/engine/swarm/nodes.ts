/** NodeClient over dockerode. */
import type Dockerode from 'dockerode';
import type { BoundedCalls } from '../docker/deadline';
import { DockerEvents } from '../docker/events';
import type { EngineEvent, Labels } from '../types';
import type { NodeClient, NodeSummary } from './types';

interface NodeInfo {
  ID: string;
  Spec: { Role: 'manager' | 'worker'; Availability: string; Labels?: Labels };
  Description?: { Hostname?: string };
  Status: { State: string; Addr?: string };
}

export class SwarmNodes implements NodeClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async list(): Promise<NodeSummary[]> {
    const items = (await this.calls.run('nodes.list', () => this.docker.listNodes())) as NodeInfo[];
    return items
      .map((n) => ({
        id: n.ID,
        hostname: n.Description?.Hostname ?? '',
        role: n.Spec.Role,
        availability: n.Spec.Availability,
        state: n.Status.State,
        addr: n.Status.Addr ?? '',
        labels: n.Spec.Labels ?? {},
      }))
      .sort((a, b) => a.id.localeCompare(b.id));
  }

  /** The manager's `node` events (joined, left, state, availability, labels). */
  events(opts: { signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>> {
    return new DockerEvents(this.docker, this.calls).filtered({ type: ['node'] }, opts);
  }
}

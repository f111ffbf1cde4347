/** NetworkClient over dockerode. */
import type Dockerode from 'dockerode';
import { isNotFound } from '../errors';
import type { NetworkClient, NetworkCreateSpec, NetworkDetails, NetworkSummary } from '../types';
import type { BoundedCalls } from './deadline';
import { labelFilter } from './filters';

function summary(n: Dockerode.NetworkInspectInfo): NetworkSummary {
  return {
    id: n.Id,
    name: n.Name,
    labels: n.Labels ?? {},
    driver: n.Driver,
    internal: n.Internal ?? false,
    attachable: n.Attachable ?? false,
    scope: n.Scope,
    ...(n.Created ? { created: n.Created } : {}),
  };
}

export class DockerNetworks implements NetworkClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async list(labelFilters: string[]): Promise<NetworkSummary[]> {
    const items = await this.calls.run('networks.list', () => this.docker.listNetworks({ filters: labelFilter(labelFilters) }));
    return items.map(summary);
  }

  async inspect(idOrName: string): Promise<NetworkDetails> {
    const n = (await this.calls.run('networks.inspect', () => this.docker.getNetwork(idOrName).inspect())) as Dockerode.NetworkInspectInfo;
    return { ...summary(n), containers: Object.keys(n.Containers ?? {}).sort() };
  }

  async create(spec: NetworkCreateSpec): Promise<string> {
    const n = await this.calls.run('networks.create', () =>
      this.docker.createNetwork({
        Name: spec.name,
        Labels: spec.labels,
        Internal: spec.internal,
        Driver: spec.driver ?? 'bridge',
        Attachable: spec.attachable ?? false,
        CheckDuplicate: true,
      }),
    );
    return n.id;
  }

  async connect(network: string, container: string): Promise<void> {
    await this.calls.run('networks.connect', () => this.docker.getNetwork(network).connect({ Container: container }));
  }

  async remove(idOrName: string): Promise<boolean> {
    try {
      await this.calls.run('networks.remove', () => this.docker.getNetwork(idOrName).remove());
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

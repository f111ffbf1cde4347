/** VolumeClient over dockerode. */
import type Dockerode from 'dockerode';
import { isNotFound } from '../errors';
import type { VolumeClient, VolumeCreateSpec, VolumeSummary } from '../types';
import type { BoundedCalls } from './deadline';
import { labelFilter } from './filters';

interface VolumeInfo {
  Name: string;
  Labels: Record<string, string> | null;
  Driver: string;
  Options?: Record<string, string> | null;
}

function summary(v: VolumeInfo): VolumeSummary {
  return { name: v.Name, labels: v.Labels ?? {}, driver: v.Driver, options: { ...(v.Options ?? {}) } };
}

export class DockerVolumes implements VolumeClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async list(labelFilters: string[]): Promise<VolumeSummary[]> {
    const res = (await this.calls.run('volumes.list', () => this.docker.listVolumes({ filters: labelFilter(labelFilters) }))) as {
      Volumes: VolumeInfo[] | null;
    };
    return (res.Volumes ?? []).map(summary);
  }

  async inspect(name: string): Promise<VolumeSummary> {
    return summary((await this.calls.run('volumes.inspect', () => this.docker.getVolume(name).inspect())) as unknown as VolumeInfo);
  }

  async create(spec: VolumeCreateSpec): Promise<string> {
    const v = (await this.calls.run('volumes.create', () =>
      this.docker.createVolume({ Name: spec.name, Labels: spec.labels, Driver: spec.driver ?? 'local', DriverOpts: { ...(spec.options ?? {}) } }),
    )) as unknown as VolumeInfo | { name: string };
    return 'Name' in v ? v.Name : spec.name;
  }

  async remove(name: string): Promise<boolean> {
    try {
      await this.calls.run('volumes.remove', () => this.docker.getVolume(name).remove({ force: false }));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

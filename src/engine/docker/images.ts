/** ImageClient over dockerode. */
import type Dockerode from 'dockerode';
import type { ImageClient, ImageSummary } from '../types';
import { labelFilter } from './filters';

export class DockerImages implements ImageClient {
  constructor(private readonly docker: Dockerode) {}

  async list(labelFilters: string[]): Promise<ImageSummary[]> {
    const items = await this.docker.listImages({ filters: labelFilter(labelFilters) });
    return items.map((i) => ({ id: i.Id, tags: i.RepoTags ?? [], labels: i.Labels ?? {} }));
  }

  async inspect(ref: string): Promise<ImageSummary & { user: string; workingDir: string }> {
    const i = await this.docker.getImage(ref).inspect();
    return {
      id: i.Id,
      tags: i.RepoTags ?? [],
      labels: i.Config?.Labels ?? {},
      user: i.Config?.User ?? '',
      workingDir: i.Config?.WorkingDir ?? '',
    };
  }
}

/** ImageClient over dockerode. */
import type Dockerode from 'dockerode';
import type { ImageClient, ImageSummary } from '../types';
import type { BoundedCalls } from './deadline';
import { labelFilter } from './filters';

export class DockerImages implements ImageClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async list(labelFilters: string[]): Promise<ImageSummary[]> {
    const items = await this.calls.run('images.list', () => this.docker.listImages({ filters: labelFilter(labelFilters) }));
    return items.map((i) => ({ id: i.Id, tags: realTags(i.RepoTags), labels: i.Labels ?? {}, repoDigests: realTags(i.RepoDigests) }));
  }

  async inspect(ref: string): Promise<ImageSummary & { user: string; workingDir: string }> {
    const i = await this.calls.run('images.inspect', () => this.docker.getImage(ref).inspect());
    return {
      id: i.Id,
      tags: realTags(i.RepoTags),
      labels: i.Config?.Labels ?? {},
      repoDigests: realTags(i.RepoDigests),
      user: i.Config?.User ?? '',
      workingDir: i.Config?.WorkingDir ?? '',
    };
  }
}

/** The engine lists an untagged image's tags (digests) as `<none>:<none>` (`<none>@<none>`) on older versions. */
function realTags(xs: string[] | null | undefined): string[] {
  return (xs ?? []).filter((t) => !t.startsWith('<none>'));
}

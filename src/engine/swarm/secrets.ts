/** SecretClient over dockerode: the data goes in the create call's body, nowhere else. */
import type Dockerode from 'dockerode';
import { isNotFound } from '../errors';
import type { BoundedCalls } from '../docker/deadline';
import { labelFilter } from '../docker/filters';
import type { Labels } from '../types';
import type { SecretClient, SecretSummary } from './types';

interface SecretInfo {
  ID: string;
  Spec: { Name: string; Labels?: Labels };
}

export class SwarmSecrets implements SecretClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async create(name: string, data: Buffer, labels: Labels): Promise<string> {
    const s = (await this.calls.run('secrets.create', () => this.docker.createSecret({ Name: name, Labels: labels, Data: data.toString('base64') }))) as {
      id?: string;
      ID?: string;
    };
    return s.id ?? s.ID ?? '';
  }

  async list(labelFilters: string[]): Promise<SecretSummary[]> {
    const items = (await this.calls.run(
      'secrets.list',
      () => this.docker.listSecrets({ filters: labelFilter(labelFilters) } as object) as Promise<unknown>,
    )) as SecretInfo[];
    return items.map((s) => ({ id: s.ID, name: s.Spec.Name, labels: s.Spec.Labels ?? {} }));
  }

  async remove(idOrName: string): Promise<boolean> {
    try {
      await this.calls.run('secrets.remove', () => this.docker.getSecret(idOrName).remove());
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }
}

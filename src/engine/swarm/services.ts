/**
 * ServiceClient over dockerode: one replicated job per run, restart never, dnsrr, no ports.
 * dnsrr: a run's name resolves, on the overlays its task is on, to its task's own address (no
 * virtual address in front of it), as a container's name does on one engine. The egress proxy
 * serves a sidecar's port only to peers at that address (src/proxy/source-gate.ts).
 */
import type Dockerode from 'dockerode';
import type { Readable } from 'node:stream';
import { isNotFound } from '../errors';
import type { BoundedCalls } from '../docker/deadline';
import { Demux } from '../docker/demux';
import { labelFilter } from '../docker/filters';
import type { ServiceClient, ServiceCreateSpec, ServiceSummary } from './types';

const PIN = /^node\.id\s*==\s*(\S+)$/;

interface ServiceInfo {
  ID: string;
  CreatedAt: string;
  Spec: {
    Name: string;
    Labels?: Record<string, string>;
    TaskTemplate?: {
      ContainerSpec?: { Image?: string; Mounts?: { Source?: string; Target?: string; ReadOnly?: boolean }[] };
      Placement?: { Constraints?: string[] };
      Networks?: { Target: string }[];
    };
  };
}

function summary(s: ServiceInfo): ServiceSummary {
  const pin = (s.Spec.TaskTemplate?.Placement?.Constraints ?? []).map((c) => PIN.exec(c)?.[1]).find((x) => x !== undefined);
  return {
    id: s.ID,
    name: s.Spec.Name,
    labels: s.Spec.Labels ?? {},
    image: s.Spec.TaskTemplate?.ContainerSpec?.Image ?? '',
    networks: (s.Spec.TaskTemplate?.Networks ?? []).map((n) => n.Target),
    mounts: (s.Spec.TaskTemplate?.ContainerSpec?.Mounts ?? []).map((m) => ({ source: m.Source ?? '', target: m.Target ?? '', readOnly: m.ReadOnly === true })),
    createdAt: s.CreatedAt,
    ...(pin ? { nodeId: pin } : {}),
  };
}

/** The API body for a run's service (exported for tests of its shape). */
export function serviceBody(spec: ServiceCreateSpec): Record<string, unknown> {
  const limits: Record<string, number> = {};
  if (spec.nanoCpus) limits.NanoCPUs = spec.nanoCpus;
  if (spec.memory) limits.MemoryBytes = spec.memory;
  if (spec.pidsLimit) limits.Pids = spec.pidsLimit;
  return {
    Name: spec.name,
    Labels: spec.labels,
    TaskTemplate: {
      ContainerSpec: {
        Image: spec.image,
        // a service's Command is docker's Entrypoint, its Args docker's Cmd
        ...(spec.entrypoint ? { Command: spec.entrypoint, ...(spec.cmd ? { Args: spec.cmd } : {}) } : spec.cmd ? { Command: spec.cmd } : {}),
        Env: spec.env,
        Dir: spec.workingDir,
        ...(spec.user ? { User: spec.user } : {}),
        Labels: spec.containerLabels,
        Init: spec.init,
        ReadOnly: spec.readonlyRootfs,
        CapabilityDrop: spec.capDrop,
        CapabilityAdd: spec.capAdd,
        Mounts: spec.mounts.map((m) => ({
          Type: 'volume',
          Source: m.source,
          Target: m.target,
          ReadOnly: m.readOnly,
          ...(m.noCopy ? { VolumeOptions: { NoCopy: true } } : {}),
        })),
        Secrets: spec.secrets.map((s) => ({ SecretID: s.id, SecretName: s.name, File: { Name: s.file, UID: '0', GID: '0', Mode: 0o444 } })),
        ...(spec.stopGraceSeconds !== undefined ? { StopGracePeriod: spec.stopGraceSeconds * 1e9 } : {}),
        ...(spec.dns?.length ? { DNSConfig: { Nameservers: [...spec.dns] } } : {}),
      },
      Resources: { Limits: limits },
      RestartPolicy: { Condition: 'none', MaxAttempts: 0 },
      Placement: { Constraints: [`node.id==${spec.nodeId}`] },
      Networks: spec.networks.map((n) => ({ Target: n.target, ...(n.aliases ? { Aliases: n.aliases } : {}) })),
      ...(spec.logDriver ? { LogDriver: { Name: spec.logDriver.name, Options: { ...spec.logDriver.options } } } : {}),
    },
    Mode: { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } },
    EndpointSpec: { Mode: 'dnsrr' },
  };
}

export class SwarmServices implements ServiceClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async create(spec: ServiceCreateSpec): Promise<string> {
    const body = serviceBody(spec) as never;
    // with the image's credential, the node's agent pulls with it (the CLI's --with-registry-auth)
    const s = (await this.calls.run('services.create', () =>
      spec.auth ? (this.docker.createService(spec.auth as never, body) as unknown as Promise<unknown>) : this.docker.createService(body),
    )) as unknown as { id?: string; ID?: string };
    return s.id ?? s.ID ?? '';
  }

  async list(labelFilters: string[]): Promise<ServiceSummary[]> {
    const items = (await this.calls.run(
      'services.list',
      () => this.docker.listServices({ filters: labelFilter(labelFilters) } as object) as Promise<unknown>,
    )) as ServiceInfo[];
    return items.map(summary);
  }

  async inspect(idOrName: string): Promise<ServiceSummary> {
    return summary((await this.calls.run('services.inspect', () => this.docker.getService(idOrName).inspect())) as ServiceInfo);
  }

  async remove(idOrName: string): Promise<boolean> {
    try {
      await this.calls.run('services.remove', () => this.docker.getService(idOrName).remove());
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      throw err;
    }
  }

  async logs(idOrName: string, opts: { follow: boolean; tail?: number }): Promise<Readable> {
    const raw = (await this.calls.run(
      'services.logs',
      () =>
        this.docker.getService(idOrName).logs({
          stdout: true,
          stderr: true,
          follow: opts.follow,
          ...(opts.tail !== undefined ? { tail: opts.tail } : {}),
        } as never) as unknown as Promise<Readable>,
      { stream: opts.follow },
    )) as Readable | Buffer;
    const demux = new Demux();
    if (Buffer.isBuffer(raw)) demux.end(raw);
    else raw.pipe(demux);
    return demux;
  }
}

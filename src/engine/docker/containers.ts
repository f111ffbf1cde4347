/** ContainerClient over dockerode. */
import type Dockerode from 'dockerode';
import { PassThrough, type Duplex, type Readable } from 'node:stream';
import { isConflict, isNotFound, isNotModified } from '../errors';
import { Demux } from './demux';
import type { ContainerClient, ContainerCreateSpec, ContainerDetails, ContainerSummary, ExecOptions, ExecSession, MountSummary } from '../types';
import { execSession } from './exec-session';
import type { BoundedCalls } from './deadline';
import { withProgress } from './deadline';
import { labelFilter } from './filters';

type ListItem = Dockerode.ContainerInfo;

function stripSlash(name: string): string {
  return name.startsWith('/') ? name.slice(1) : name;
}

function mountsOf(mounts: { Type?: string; Source?: string; Destination?: string; Name?: string; RW?: boolean }[] | undefined): MountSummary[] {
  return (mounts ?? []).map((m) => ({
    type: m.Type ?? '',
    source: m.Source ?? '',
    destination: m.Destination ?? '',
    ...(m.Name ? { name: m.Name } : {}),
    rw: m.RW ?? false,
  }));
}

export function summaryFromList(c: ListItem): ContainerSummary {
  return {
    id: c.Id,
    name: stripSlash(c.Names?.[0] ?? ''),
    labels: c.Labels ?? {},
    image: c.Image,
    imageId: c.ImageID,
    state: c.State,
    status: c.Status,
    networkMode: c.HostConfig?.NetworkMode ?? '',
    networks: Object.keys(c.NetworkSettings?.Networks ?? {}).sort(),
    networkIds: Object.values(c.NetworkSettings?.Networks ?? {})
      .flatMap((n) => (n.NetworkID ? [n.NetworkID] : []))
      .sort(),
    mounts: mountsOf(c.Mounts as never),
    created: c.Created,
  };
}

/** The ImageManifestDescriptor's digest (API 1.48 and later, the containerd image store); none from older engines. */
function manifestOf(i: Dockerode.ContainerInspectInfo): { imageManifest?: string } {
  const d = (i as { ImageManifestDescriptor?: { digest?: unknown } | null }).ImageManifestDescriptor;
  return typeof d?.digest === 'string' ? { imageManifest: d.digest } : {};
}

export function detailsFromInspect(i: Dockerode.ContainerInspectInfo): ContainerDetails {
  const h = i.HostConfig ?? ({} as Dockerode.HostConfig);
  const hx = h as Dockerode.HostConfig & { Init?: boolean | null; CgroupnsMode?: string };
  return {
    id: i.Id,
    name: stripSlash(i.Name),
    labels: i.Config?.Labels ?? {},
    image: i.Config?.Image ?? '',
    imageId: i.Image,
    ...manifestOf(i),
    state: i.State?.Status ?? '',
    status: i.State?.Status ?? '',
    networkMode: h.NetworkMode ?? '',
    networks: Object.keys(i.NetworkSettings?.Networks ?? {}).sort(),
    mounts: mountsOf(i.Mounts as never),
    created: Math.floor(Date.parse(i.Created) / 1000),
    runState: {
      status: i.State?.Status ?? '',
      running: i.State?.Running ?? false,
      oomKilled: i.State?.OOMKilled ?? false,
      exitCode: i.State?.ExitCode ?? 0,
      error: i.State?.Error ?? '',
      startedAt: i.State?.StartedAt ?? '',
      finishedAt: i.State?.FinishedAt ?? '',
      pid: i.State?.Pid ?? 0,
    },
    config: {
      image: i.Config?.Image ?? '',
      cmd: i.Config?.Cmd ?? null,
      entrypoint: (i.Config?.Entrypoint as string[] | null | undefined) ?? null,
      env: i.Config?.Env ?? [],
      workingDir: i.Config?.WorkingDir ?? '',
      user: i.Config?.User ?? '',
      labels: i.Config?.Labels ?? {},
    },
    host: {
      privileged: h.Privileged ?? false,
      capAdd: h.CapAdd ?? [],
      capDrop: h.CapDrop ?? [],
      securityOpt: h.SecurityOpt ?? [],
      readonlyRootfs: h.ReadonlyRootfs ?? false,
      networkMode: h.NetworkMode ?? '',
      pidMode: h.PidMode ?? '',
      ipcMode: h.IpcMode ?? '',
      utsMode: h.UTSMode ?? '',
      usernsMode: h.UsernsMode ?? '',
      cgroupnsMode: hx.CgroupnsMode ?? '',
      init: hx.Init ?? false,
      restartPolicy: h.RestartPolicy?.Name ?? '',
      portBindings: Object.keys(h.PortBindings ?? {}).length,
      publishAllPorts: h.PublishAllPorts ?? false,
      nanoCpus: h.NanoCpus ?? 0,
      memory: h.Memory ?? 0,
      memorySwap: h.MemorySwap ?? 0,
      pidsLimit: h.PidsLimit ?? 0,
      devices: (h.Devices ?? []).length,
      dns: h.Dns ?? [],
      binds: h.Binds ?? [],
      tmpfs: (h as { Tmpfs?: Record<string, string> }).Tmpfs ?? {},
      logConfig: { type: h.LogConfig?.Type ?? '', config: { ...(h.LogConfig?.Config ?? {}) } },
      ...((h as { StorageOpt?: Record<string, string> | null }).StorageOpt
        ? { storageOpt: { ...(h as { StorageOpt: Record<string, string> }).StorageOpt } }
        : {}),
    },
    restartCount: i.RestartCount ?? 0,
    addresses: Object.fromEntries(
      Object.entries(i.NetworkSettings?.Networks ?? {})
        .filter(([, n]) => typeof n?.IPAddress === 'string' && n.IPAddress !== '')
        .map(([name, n]) => [name, n.IPAddress]),
    ),
    ...storageOf(i as { GraphDriver?: { Name?: string; Data?: Record<string, string> | null } }),
  };
}

/** The writable layer's driver and (overlay2) folder, as inspect says. */
function storageOf(i: { GraphDriver?: { Name?: string; Data?: Record<string, string> | null } }): Pick<ContainerDetails, 'storage'> {
  const g = i.GraphDriver;
  if (!g?.Name) return {};
  const upper = g.Data?.UpperDir;
  return { storage: { driver: g.Name, ...(upper ? { upperDir: upper } : {}) } };
}

export function createOptions(spec: ContainerCreateSpec): Dockerode.ContainerCreateOptions {
  const h = spec.host;
  return {
    name: spec.name,
    Image: spec.image,
    ...(spec.cmd ? { Cmd: spec.cmd } : {}),
    ...(spec.entrypoint ? { Entrypoint: spec.entrypoint } : {}),
    Env: spec.env,
    WorkingDir: spec.workingDir,
    Labels: spec.labels,
    ...(spec.user !== undefined ? { User: spec.user } : {}),
    ...(spec.stopSignal ? { StopSignal: spec.stopSignal } : {}),
    ...(spec.stopTimeout !== undefined ? { StopTimeout: spec.stopTimeout } : {}),
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
    OpenStdin: false,
    NetworkDisabled: false,
    ...(spec.aliases?.length ? { NetworkingConfig: { EndpointsConfig: { [h.networkMode]: { Aliases: spec.aliases } } } } : {}),
    HostConfig: {
      NetworkMode: h.networkMode,
      Binds: h.binds,
      Mounts: h.mounts.map((m) => ({ Type: m.type, Source: m.source, Target: m.target, ReadOnly: m.readOnly })),
      CapDrop: h.capDrop,
      CapAdd: h.capAdd,
      SecurityOpt: h.securityOpt,
      Privileged: false,
      Init: h.init,
      ...(h.cgroupnsMode ? { CgroupnsMode: h.cgroupnsMode } : {}),
      ...(h.dns ? { Dns: [...h.dns] } : {}),
      ...(h.nanoCpus !== undefined ? { NanoCpus: h.nanoCpus } : {}),
      ...(h.memory !== undefined ? { Memory: h.memory } : {}),
      ...(h.memorySwap !== undefined ? { MemorySwap: h.memorySwap } : {}),
      PidsLimit: h.pidsLimit,
      ReadonlyRootfs: h.readonlyRootfs,
      ...(h.logConfig ? { LogConfig: { Type: h.logConfig.type, Config: { ...h.logConfig.config } } } : {}),
      ...(h.tmpfs ? { Tmpfs: { ...h.tmpfs } } : {}),
      ...(h.storageOpt ? { StorageOpt: { ...h.storageOpt } } : {}),
      RestartPolicy: { Name: 'no' },
      PublishAllPorts: false,
      PortBindings: {},
    },
  };
}

export class DockerContainers implements ContainerClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async list(labelFilters: string[]): Promise<ContainerSummary[]> {
    const items = await this.calls.run('containers.list', () => this.docker.listContainers({ all: true, filters: labelFilter(labelFilters) }));
    return items.map(summaryFromList);
  }

  async writableBytes(id: string): Promise<number> {
    const i = await this.calls.run('containers.inspect', () => this.docker.getContainer(id).inspect({ size: true } as Dockerode.ContainerInspectOptions));
    return (i as { SizeRw?: number }).SizeRw ?? 0;
  }

  async inspect(idOrName: string): Promise<ContainerDetails> {
    return detailsFromInspect(await this.calls.run('containers.inspect', () => this.docker.getContainer(idOrName).inspect()));
  }

  async create(spec: ContainerCreateSpec): Promise<string> {
    const c = await this.calls.run('containers.create', () => this.docker.createContainer(createOptions(spec)));
    return c.id;
  }

  /** Bounded by progress, not by size: the deadline runs from the last chunk the engine read. */
  async putArchive(id: string, path: string, tar: Buffer | Readable): Promise<void> {
    await this.calls.run(
      'containers.putArchive',
      (progress) => this.docker.getContainer(id).putArchive(withProgress(tar, progress) as never, { path, noOverwriteDirNonDir: 'true' } as never),
      { idle: true },
    );
  }

  /** Bounded until the engine answers; the stream then lasts as long as its reader wants. */
  async getArchive(id: string, path: string): Promise<Readable> {
    const raw = (await this.calls.run('containers.getArchive', () => this.docker.getContainer(id).getArchive({ path }), {
      stream: true,
    })) as unknown as Readable;
    const out = new PassThrough();
    // The engine going away mid-stream is reported as such; a reader that stops early ends the engine's connection too.
    raw.on('error', (err) => out.destroy(this.calls.classified('containers.getArchive', err) as Error));
    out.on('close', () => raw.destroy());
    return raw.pipe(out);
  }

  async exec(id: string, cmd: string[], ms: number): Promise<number> {
    return this.calls.run(
      'containers.exec',
      async () => {
        const ex = await this.docker.getContainer(id).exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Tty: false });
        const stream = await ex.start({ hijack: true, stdin: false });
        await new Promise<void>((resolve, reject) => {
          stream.on('end', () => resolve());
          stream.on('close', () => resolve());
          stream.on('error', reject);
          stream.resume();
        });
        const info = await ex.inspect();
        return info.ExitCode ?? -1;
      },
      { ms },
    );
  }

  /** Bounded until the engine answers the start; the session then lasts as long as its reader wants. */
  async execStart(id: string, o: ExecOptions): Promise<ExecSession> {
    return this.calls.run(
      'containers.execStart',
      async () => {
        const ex = await this.docker.getContainer(id).exec({
          Cmd: o.cmd,
          AttachStdout: true,
          AttachStderr: true,
          AttachStdin: o.stdin === true,
          Tty: o.tty === true,
          ...(o.user !== undefined ? { User: o.user } : {}),
          ...(o.workingDir !== undefined ? { WorkingDir: o.workingDir } : {}),
          ...(o.env?.length ? { Env: o.env } : {}),
        });
        const socket = (await ex.start({ hijack: true, stdin: o.stdin === true, Tty: o.tty === true })) as unknown as Duplex;
        return execSession(ex, socket, o);
      },
      { stream: true },
    );
  }

  async start(id: string): Promise<void> {
    try {
      await this.calls.run('containers.start', () => this.docker.getContainer(id).start());
    } catch (err) {
      if (!isNotModified(err)) throw err; // already started
    }
  }

  /** The engine answers after the grace period at most: the budget is the grace plus the usual. */
  async stop(id: string, graceSeconds: number): Promise<void> {
    try {
      await this.calls.run('containers.stop', () => this.docker.getContainer(id).stop({ t: graceSeconds }), { ms: graceSeconds * 1000 + this.calls.timeoutMs });
    } catch (err) {
      if (!isNotModified(err)) throw err; // already stopped
    }
  }

  async remove(id: string): Promise<boolean> {
    try {
      await this.calls.run('containers.remove', () => this.docker.getContainer(id).remove({ force: true, v: false }));
      return true;
    } catch (err) {
      if (isNotFound(err)) return false;
      // A forced remove answers 409 only when a removal is already in progress: it is going away.
      if (isConflict(err)) return true;
      throw err;
    }
  }

  /**
   * A container's log as a demultiplexed stream, never one buffer: with `follow`, it lasts as long
   * as its reader wants; without, it ends with the log as it is now. Either way it is read as it
   * comes (dockerode reads a non-follow log into one string, which fails past 512 MiB).
   */
  async logs(id: string, opts: { follow: boolean; tail?: number }): Promise<Readable> {
    const base = { stdout: true, stderr: true, timestamps: false, follow: opts.follow, ...(opts.tail !== undefined ? { tail: opts.tail } : {}) };
    const demux = new Demux();
    // Bounded until the engine answers; the stream then lasts as long as its reader wants.
    const raw = (await this.calls.run('containers.logs', () => this.dialLogs(id, base), { stream: true })) as Readable;
    // The engine going away mid-stream is reported as such.
    raw.on('error', (err) => demux.destroy(this.calls.classified('containers.logs', err) as Error));
    // A reader that stops early destroys the demuxed stream: the engine's connection goes too.
    demux.on('close', () => raw.destroy());
    return raw.pipe(demux);
  }

  /** GET /containers/{id}/logs, always as a stream (what dockerode's logs() does with follow). */
  private dialLogs(id: string, options: Record<string, unknown>): Promise<Readable> {
    const modem = this.docker.modem as unknown as { dial(o: unknown, cb: (err: unknown, data: unknown) => void): void };
    return new Promise((resolve, reject) => {
      modem.dial(
        {
          path: `/containers/${encodeURIComponent(id)}/logs?`,
          method: 'GET',
          isStream: true,
          statusCodes: { 200: true, 404: 'no such container', 500: 'server error' },
          options,
        },
        (err, data) => (err ? reject(err) : resolve(data as Readable)),
      );
    });
  }
}

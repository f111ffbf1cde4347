/**
 * An in-memory engine that keeps the contracts of src/engine/types.ts as the Docker adapter
 * (src/engine/docker) keeps them on a real engine; test/contract/engine.contract.ts checks both
 * against the same tests. For pure unit tests (the executor's failure paths) only.
 *
 * - Names are unique per kind: a create of a taken container or network name is 409; a volume
 *   create of a taken name answers with the existing volume (as the engine does), labels untouched.
 * - Missing is 404 (inspect, start, putArchive, connect); remove of a missing one is `false`.
 * - Labels are kept exactly as given; a container's are its image's overlaid with the given
 *   ones (the engine's merge, which src/ownership.ts depends on).
 * - List filters are `key` or `key=value`, all of which must match (as filters.ts sends them).
 * - Containers are created → running → exited (with exit code, StartedAt/FinishedAt from the
 *   injected clock); a start of a running one and a stop of a stopped one succeed (the adapter
 *   turns the engine's 304 into success). remove forces, as the adapter always asks.
 * - Events: container create/start/die/destroy carry the container's labels, `name` and `image`
 *   as attributes (die adds `exitCode`); network and volume events carry `name` (the engine
 *   puts no labels on them).
 * - The lists can be made to lag the exits (`lagLists`), as dockerd's do; inspect never lags.
 * - Builds (`builds.build`): the context's Dockerfile read from the tar, each instruction a step
 *   printed as the classic builder prints it (`Step N/M : ...`, a step per label last); a step
 *   `RUN exit N` (N > 0) fails the build with the engine's words and code N, anything else passes;
 *   a FROM image the fake does not hold fails as the engine's pull would. The image gets the tag
 *   and the labels. `images.remove` of a tag untags it (the image goes when no tag names it).
 * - Failures: `fail(op, failure, when?)` makes the next matching call of `op` (the adapter's
 *   call names, `containers.create`) answer an HTTP status, throw a given error, time out as the
 *   adapter's deadline does, or hang until `releaseHangs()`.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { PassThrough, Readable } from 'node:stream';
import { posix } from 'node:path';
// tar-stream is loaded only when an archive is put or read: a no-op pass loads none (pass-lazy.test.ts)
import type { Header } from 'tar-stream';
import { EngineUnreachableError, ImagePullError } from '../../src/engine/errors';
import type { HostIsolation } from '../../src/engine/isolation';
import { matchesLabels } from '../../src/engine/label-filter';
import { BuildError } from '../../src/engine/types';
import type {
  BuildClient,
  BuildOptions,
  ContainerClient,
  ContainerCreateSpec,
  ContainerDetails,
  ContainerSummary,
  Engine,
  EngineEvent,
  EventClient,
  ExecSession,
  ImageClient,
  ImageSummary,
  Labels,
  NetworkClient,
  NetworkCreateSpec,
  NetworkDetails,
  NetworkSummary,
  Reached,
  VolumeClient,
  VolumeCreateSpec,
  VolumeSummary,
} from '../../src/engine/types';

export type FakeFailure =
  | { status: number; message?: string }
  | { error: Error }
  /** Rejects after `ms` as the adapter's deadline does (EngineUnreachableError, timeout). */
  | { timeoutMs: number }
  /** Never answers until releaseHangs() (then it rejects as unreachable). */
  | { hang: true };

interface Hook {
  op: string;
  failure: FakeFailure;
  when?: (args: unknown[]) => boolean;
  times: number;
}

/**
 * What a task run by the fake (runTasks) does: it writes `files` (absolute paths: their text; one
 * below a bind mount, as /results is, on the host) and `log`, then exits with `code`.
 */
export interface FakeTask {
  code: number;
  log?: string;
  files?: Record<string, string>;
}

/** What a task is told of its container when it starts. */
export interface FakeTaskStart {
  name: string;
  labels: Labels;
  cmd: string[] | null;
  env: string[];
  /** What the container holds as it starts (the fixture, secrets: what putArchive put in). */
  tree: ReadonlyMap<string, FakeTreeEntry>;
}

export interface FakeImage {
  ref: string;
  /** `name@sha256:…`, as an image pulled from a registry has them (none: built or loaded here). */
  repoDigests?: string[];
  labels?: Labels;
  user?: string;
  workingDir?: string;
}

interface FakeContainer {
  id: string;
  name: string;
  spec: ContainerCreateSpec;
  labels: Labels;
  imageId: string;
  state: 'created' | 'running' | 'exited';
  exitCode: number;
  oomKilled: boolean;
  startedAt: string;
  finishedAt: string;
  created: number;
  networks: string[];
  archives: { path: string; bytes: number }[];
  /** What the archives put in hold, by entry name (no leading slash, no trailing slash): getArchive reads them back. */
  tree: Map<string, FakeTreeEntry>;
  logs: string;
}

/** One entry of a fake container's filesystem (what putArchive extracted). */
export interface FakeTreeEntry {
  header: Header;
  body: Buffer;
}

interface FakeNetwork {
  id: string;
  spec: NetworkCreateSpec;
  created: string;
  /** Container ids connected (by create's network mode or connect). */
  members: Set<string>;
}

const ZERO_TIME = '0001-01-01T00:00:00Z';
/** The key prefix of an image no ref names any more (kept by id). */
const UNNAMED = '\0';
const BUILTIN_NETWORKS = ['bridge', 'host', 'none'];

function newId(): string {
  return randomBytes(32).toString('hex');
}

/** An engine error as docker-modem reports one: `statusCode` and the body's `message`. */
export function httpError(status: number, message: string): Error {
  return Object.assign(new Error(`(HTTP code ${status}) ${message}`), { statusCode: status, json: { message } });
}

export class FakeEngine implements Engine {
  readonly address = 'fake://engine';
  /** One engine, its storage not asked about (no data root berth reads), its runs here. */
  readonly local = null;
  readonly remote = null;
  readonly builds: BuildClient;
  /** Every call made, in order, by its adapter name (`containers.create`). */
  readonly calls: { op: string; args: unknown[] }[] = [];
  readonly containers: ContainerClient;
  readonly networks: NetworkClient;
  readonly volumes: VolumeClient;
  readonly images: ImageClient;
  readonly events: EventClient;

  private readonly byId = new Map<string, FakeContainer>();
  private readonly nets = new Map<string, FakeNetwork>();
  private readonly vols = new Map<string, VolumeSummary>();
  private readonly imgs = new Map<string, ImageSummary & { user: string; workingDir: string }>();
  private readonly hooks: Hook[] = [];
  private readonly hung: (() => void)[] = [];
  private readonly log: EngineEvent[] = [];
  private readonly listeners = new Set<(e: EngineEvent) => void>();
  private bootId = newId();
  private readonly bootAt: string;
  private abandoned: string | undefined;
  private readonly onStart: { when: (name: string) => boolean; code: number }[] = [];
  private readonly tasks: ((c: FakeTaskStart) => FakeTask | undefined)[] = [];
  private lagging = false;
  /** Exited containers the lists still show running (lagLists). */
  private readonly lagged = new Set<string>();

  constructor(private readonly clock: { now: () => number } = { now: Date.now }) {
    this.bootAt = new Date(clock.now()).toISOString();
    for (const n of BUILTIN_NETWORKS) {
      this.nets.set(n, {
        id: n === 'bridge' ? this.bootId : newId(),
        spec: { name: n, labels: {}, internal: false, driver: n === 'none' ? 'null' : n },
        created: this.bootAt,
        members: new Set(),
      });
    }
    this.containers = this.containerClient();
    this.networks = this.networkClient();
    this.volumes = this.volumeClient();
    this.images = this.imageClient();
    this.events = this.eventClient();
    this.builds = this.buildClient();
  }

  // ---- test controls ----

  /** Images a registry holds for the fake's pulls: ref → its layers' sizes and the credential it asks for. */
  readonly registry = new Map<string, { layers: number[]; auth?: { username: string; password: string }; labels?: Labels }>();

  /** Adds an image the engine holds (a `load`: an image event, whatever its labels). */
  addImage(img: FakeImage): string {
    const id = `sha256:${newId()}`;
    this.keepUnnamed(img.ref);
    this.imgs.set(img.ref, {
      id,
      tags: [img.ref],
      labels: { ...(img.labels ?? {}) },
      repoDigests: [...(img.repoDigests ?? [])],
      user: img.user ?? '',
      workingDir: img.workingDir ?? '',
    });
    this.emit('image', 'load', id, { name: img.ref, ...(img.labels ?? {}) });
    return id;
  }

  /** `docker tag SOURCE REF`: `ref` names the image `source` (a ref or an id) names, moved off any other. */
  tagImage(ref: string, source: string): string {
    const src = this.imgs.get(source) ?? [...this.imgs.values()].find((x) => x.id === source);
    if (!src) throw httpError(404, `No such image: ${source}`);
    this.keepUnnamed(ref);
    this.imgs.set(ref, { ...structuredClone(src) });
    this.emit('image', 'tag', src.id, { name: ref, ...src.labels });
    return src.id;
  }

  /** `docker rmi REF` of a tag (the fake keeps the image, unnamed, when no other ref names it). */
  untagImage(ref: string): void {
    const i = this.imgs.get(ref);
    if (!i) throw httpError(404, `No such image: ${ref}`);
    this.keepUnnamed(ref);
    this.imgs.delete(ref);
    this.emit('image', 'untag', i.id, { name: ref, ...i.labels });
  }

  /** The refs that name image `id`, sorted. */
  private tagsOf(id: string): string[] {
    return [...this.imgs.entries()]
      .filter(([r, i]) => i.id === id && !r.startsWith(UNNAMED))
      .map(([r]) => r)
      .sort();
  }

  /** A tag moved off an image that no other ref names: the engine keeps the image, unnamed (dangling). */
  private keepUnnamed(ref: string): void {
    const old = this.imgs.get(ref);
    if (old && this.tagsOf(old.id).length === 1) this.imgs.set(`${UNNAMED}${old.id}`, old);
  }

  /** The next `times` calls of `op` (that `when` accepts) fail so. */
  fail(op: string, failure: FakeFailure, opts: { when?: (args: unknown[]) => boolean; times?: number } = {}): void {
    this.hooks.push({ op, failure, times: opts.times ?? 1, ...(opts.when ? { when: opts.when } : {}) });
  }

  /** Calls hung now (until releaseHangs()). */
  get hanging(): number {
    return this.hung.length;
  }

  /** Ends every hung call (each rejects as unreachable). */
  releaseHangs(): void {
    for (const r of this.hung.splice(0)) r();
  }

  /**
   * The task of a running container ends with `code` (as its process exiting would). `oomAfterMs`:
   * OOM-killed, but (as dockerd can) the `die` and an inspect without `OOMKilled` come first, the
   * `oom` event and the flag that many milliseconds later.
   */
  exit(idOrName: string, code: number, opts: { oomKilled?: boolean; oomAfterMs?: number } = {}): void {
    const c = this.find(idOrName);
    if (!c) throw new Error(`fake engine: no container ${idOrName}`);
    if (c.state !== 'running') throw new Error(`fake engine: container ${idOrName} is ${c.state}, not running`);
    if (opts.oomAfterMs === undefined) return this.end(c, code, opts.oomKilled ?? false);
    this.end(c, code, false);
    setTimeout(() => {
      c.oomKilled = true;
      this.containerEvent(c, 'oom');
    }, opts.oomAfterMs);
  }

  /**
   * From now on the container lists lag the exits, as dockerd's do (it sends `die` while it still
   * handles the exit, and its lists show it after): a container that exits is listed running
   * until catchUpLists(). Inspect says what is.
   */
  lagLists(): void {
    this.lagging = true;
  }

  /** The lists show every exit again (and lag no more). */
  catchUpLists(): void {
    this.lagging = false;
    this.lagged.clear();
  }

  /** A container whose name `when` accepts exits with `code` as soon as it starts (a task that ends at once). */
  exitOnStart(when: (name: string) => boolean, code: number): void {
    this.onStart.push({ when, code });
  }

  /**
   * A container whose start `task` answers (the first task that answers) runs it at once: the
   * files it writes are in the container (getArchive reads them), its log in its log, and it
   * exits with its code. As exitOnStart, with what a task leaves behind.
   */
  runTasks(task: (c: FakeTaskStart) => FakeTask | undefined): void {
    this.tasks.push(task);
  }

  /** Appends to a container's log (what logs() returns). */
  writeLog(idOrName: string, text: string): void {
    const c = this.find(idOrName);
    if (!c) throw new Error(`fake engine: no container ${idOrName}`);
    c.logs += text;
  }

  /** What the container holds (as getArchive reads it): a test edits it as the container's process would. */
  treeOf(idOrName: string): Map<string, FakeTreeEntry> {
    const c = this.find(idOrName);
    if (!c) throw new Error(`fake engine: no container ${idOrName}`);
    return c.tree;
  }

  /** The archives put into a container (path and size), in order. */
  archivesOf(idOrName: string): { path: string; bytes: number }[] {
    return [...(this.find(idOrName)?.archives ?? [])];
  }

  /** The engine restarts: a new boot, every running container exits (as a killed one does). */
  restart(): void {
    for (const c of this.byId.values()) if (c.state === 'running') this.end(c, 137, false);
    this.bootId = newId();
  }

  /** The names of the containers the engine holds, sorted. */
  containerNames(): string[] {
    return [...this.byId.values()].map((c) => c.name).sort();
  }

  // ---- Engine ----

  async ping(): Promise<void> {
    await this.call('ping', []);
  }

  async version(): Promise<{ version: string; apiVersion: string; arch: string }> {
    await this.call('version', []);
    return { version: 'fake', apiVersion: '1.44', arch: 'amd64' };
  }

  /** One engine: the container is reached here, as it is. */
  async reach(id: string): Promise<Reached> {
    await this.call('reach', [id]);
    return { engine: this, id, where: 'the fake engine' };
  }

  /** What isolation() answers (tests set a weak engine). */
  hostIsolation: HostIsolation = {
    seccomp: 'default',
    apparmor: false,
    selinux: false,
    userns: false,
    rootless: false,
    cgroupVersion: '2',
    storageDriver: 'overlay2',
    defaultRuntime: 'runc',
  };

  async isolation(): Promise<HostIsolation> {
    await this.call('isolation', []);
    return { ...this.hostIsolation };
  }

  async boot(): Promise<{ id: string; at: string } | undefined> {
    await this.call('boot', []);
    return { id: this.bootId, at: this.bootAt };
  }

  abandon(reason: string): void {
    this.abandoned = reason;
    this.releaseHangs();
  }

  // ---- internals ----

  private iso(): string {
    return new Date(this.clock.now()).toISOString();
  }

  /** Records the call and applies the first matching failure hook. */
  private async call(op: string, args: unknown[]): Promise<void> {
    this.calls.push({ op, args });
    if (this.abandoned !== undefined) throw new Error(`engine call ${op} given up: ${this.abandoned}`);
    const i = this.hooks.findIndex((h) => h.op === op && (!h.when || h.when(args)));
    if (i < 0) return;
    const h = this.hooks[i] as Hook;
    if (--h.times <= 0) this.hooks.splice(i, 1);
    const f = h.failure;
    if ('status' in f) throw httpError(f.status, f.message ?? `fake failure of ${op}`);
    if ('error' in f) throw f.error;
    if ('timeoutMs' in f) {
      await new Promise((r) => setTimeout(r, f.timeoutMs));
      throw new EngineUnreachableError('timeout', this.address, op, { ms: f.timeoutMs });
    }
    await new Promise<void>((r) => this.hung.push(r));
    throw new EngineUnreachableError('unavailable', this.address, op, { cause: new Error('the call was released') });
  }

  private emit(type: string, action: string, id: string, attributes: Labels): void {
    const e: EngineEvent = { type, action, id, attributes, timeNano: BigInt(this.clock.now()) * 1_000_000n };
    this.log.push(e);
    for (const l of this.listeners) l(e);
  }

  private containerEvent(c: FakeContainer, action: string, extra: Labels = {}): void {
    this.emit('container', action, c.id, { ...c.labels, image: c.spec.image, name: c.name, ...extra });
  }

  private find(idOrName: string): FakeContainer | undefined {
    const byId = this.byId.get(idOrName);
    if (byId) return byId;
    for (const c of this.byId.values()) if (c.name === idOrName || c.name === idOrName.replace(/^\//, '')) return c;
    if (idOrName.length >= 12) for (const c of this.byId.values()) if (c.id.startsWith(idOrName)) return c;
    return undefined;
  }

  private mustFind(idOrName: string): FakeContainer {
    const c = this.find(idOrName);
    if (!c) throw httpError(404, `No such container: ${idOrName}`);
    return c;
  }

  private findNet(idOrName: string): FakeNetwork | undefined {
    const byName = this.nets.get(idOrName);
    if (byName) return byName;
    for (const n of this.nets.values()) if (n.id === idOrName || (idOrName.length >= 12 && n.id.startsWith(idOrName))) return n;
    return undefined;
  }

  private end(c: FakeContainer, code: number, oom: boolean): void {
    c.state = 'exited';
    c.exitCode = code;
    c.oomKilled = oom;
    c.finishedAt = this.iso();
    if (this.lagging) this.lagged.add(c.id);
    if (oom) this.containerEvent(c, 'oom');
    this.containerEvent(c, 'die', { exitCode: String(code) });
  }

  private summary(c: FakeContainer): ContainerSummary {
    const nets = [...c.networks].sort();
    return {
      id: c.id,
      name: c.name,
      labels: { ...c.labels },
      image: c.spec.image,
      imageId: c.imageId,
      state: c.state,
      status: c.state === 'running' ? 'Up' : c.state === 'exited' ? `Exited (${c.exitCode})` : 'Created',
      networkMode: c.spec.host.networkMode,
      networks: nets,
      networkIds: nets.flatMap((n) => (this.nets.get(n) ? [(this.nets.get(n) as FakeNetwork).id] : [])).sort(),
      // as the engine lists them: binds (`src:dst[:ro]`), then named volumes by their data folder
      mounts: [
        ...c.spec.host.binds.map((b) => {
          const [source = '', destination = '', mode = ''] = b.split(':');
          return { type: 'bind', source, destination, rw: !mode.split(',').includes('ro') };
        }),
        ...c.spec.host.mounts.map((m) => ({
          type: 'volume',
          source: `/var/lib/docker/volumes/${m.source}/_data`,
          destination: m.target,
          name: m.source,
          rw: !m.readOnly,
        })),
      ],
      created: c.created,
    };
  }

  private details(c: FakeContainer): ContainerDetails {
    const { networkIds: _ids, ...s } = this.summary(c);
    const h = c.spec.host;
    return {
      ...s,
      runState: {
        status: c.state,
        running: c.state === 'running',
        oomKilled: c.oomKilled,
        exitCode: c.exitCode,
        error: '',
        startedAt: c.startedAt,
        finishedAt: c.finishedAt,
        pid: c.state === 'running' ? 4242 : 0,
      },
      config: {
        image: c.spec.image,
        cmd: c.spec.cmd,
        entrypoint: c.spec.entrypoint ?? null,
        env: [...c.spec.env],
        workingDir: c.spec.workingDir,
        user: c.spec.user ?? '',
        labels: { ...c.labels },
      },
      host: {
        privileged: false,
        capAdd: [...h.capAdd],
        capDrop: [...h.capDrop],
        securityOpt: [...h.securityOpt],
        readonlyRootfs: h.readonlyRootfs,
        networkMode: h.networkMode,
        pidMode: '',
        ipcMode: 'private',
        utsMode: '',
        usernsMode: '',
        cgroupnsMode: h.cgroupnsMode ?? 'private',
        init: h.init,
        restartPolicy: 'no',
        portBindings: 0,
        publishAllPorts: false,
        nanoCpus: h.nanoCpus ?? 0,
        memory: h.memory ?? 0,
        memorySwap: h.memorySwap ?? 0,
        pidsLimit: h.pidsLimit,
        devices: 0,
        dns: [...(h.dns ?? [])],
        binds: [...h.binds],
        tmpfs: { ...(h.tmpfs ?? {}) },
        // as the engine answers: its default driver with no options when none was asked
        logConfig: h.logConfig ? { type: h.logConfig.type, config: { ...h.logConfig.config } } : { type: 'json-file', config: {} },
        ...(h.storageOpt ? { storageOpt: { ...h.storageOpt } } : {}),
      },
      restartCount: 0,
    };
  }

  private netSummary(n: FakeNetwork): NetworkSummary {
    return {
      id: n.id,
      name: n.spec.name,
      labels: { ...n.spec.labels },
      driver: n.spec.driver ?? 'bridge',
      internal: n.spec.internal,
      attachable: n.spec.attachable ?? false,
      scope: 'local',
      created: n.created,
    };
  }

  /** Endpoints exist while a container runs: a network lists its running members. */
  private endpoints(n: FakeNetwork): string[] {
    return [...n.members].filter((id) => this.byId.get(id)?.state === 'running').sort();
  }

  private containerClient(): ContainerClient {
    return {
      list: async (labelFilters) => {
        await this.call('containers.list', [labelFilters]);
        return [...this.byId.values()]
          .filter((c) => matchesLabels(c.labels, labelFilters))
          .map((c) => (this.lagged.has(c.id) && c.state === 'exited' ? { ...this.summary(c), state: 'running', status: 'Up' } : this.summary(c)));
      },
      inspect: async (idOrName) => {
        await this.call('containers.inspect', [idOrName]);
        return this.details(this.mustFind(idOrName));
      },
      create: async (spec) => {
        await this.call('containers.create', [spec]);
        const img = this.imgs.get(spec.image) ?? [...this.imgs.values()].find((x) => x.id === spec.image);
        if (!img) throw httpError(404, `No such image: ${spec.image}`);
        if (this.find(spec.name)?.name === spec.name) {
          throw httpError(
            409,
            `Conflict. The container name "/${spec.name}" is already in use by container "${(this.find(spec.name) as FakeContainer).id}". You have to remove (or rename) that container to be able to reuse that name.`,
          );
        }
        const mode = spec.host.networkMode;
        const net = this.nets.get(mode === 'default' ? 'bridge' : mode);
        if (!net) throw httpError(404, `network ${mode} not found`);
        for (const m of spec.host.mounts) {
          if (!this.vols.has(m.source)) this.vols.set(m.source, { name: m.source, labels: {}, driver: 'local' });
        }
        const c: FakeContainer = {
          id: newId(),
          name: spec.name,
          spec: structuredClone(spec),
          labels: { ...img.labels, ...spec.labels },
          imageId: img.id,
          state: 'created',
          exitCode: 0,
          oomKilled: false,
          startedAt: ZERO_TIME,
          finishedAt: ZERO_TIME,
          created: Math.floor(this.clock.now() / 1000),
          networks: [net.spec.name],
          archives: [],
          tree: new Map(),
          logs: '',
        };
        this.byId.set(c.id, c);
        net.members.add(c.id);
        this.containerEvent(c, 'create');
        return c.id;
      },
      putArchive: async (id, path, tar) => {
        await this.call('containers.putArchive', [id, path]);
        const c = this.mustFind(id);
        const chunks: Buffer[] = [];
        if (Buffer.isBuffer(tar)) chunks.push(tar);
        else for await (const chunk of tar) chunks.push(chunk as Buffer);
        const all = Buffer.concat(chunks);
        c.archives.push({ path, bytes: all.length });
        await extractInto(c.tree, path, all);
      },
      exec: async (id, cmd, ms) => {
        await this.call('containers.exec', [id, cmd, ms]);
        const c = this.mustFind(id);
        if (c.state !== 'running') throw httpError(409, `container ${c.id} is not running`);
        // what a shell's `exit N`, `true` and `false` give; anything else exits 0
        const m = cmd[0] === 'sh' && cmd[1] === '-c' ? /^exit (\d+)$/.exec(cmd[2] ?? '') : null;
        return m ? Number(m[1]) : cmd[0] === 'false' ? 1 : 0;
      },
      execStart: async (id, o) => {
        await this.call('containers.execStart', [id, o]);
        const c = this.mustFind(id);
        if (c.state !== 'running') throw httpError(409, `container ${c.id} is not running`);
        return fakeExec(o.cmd, o.stdin === true);
      },
      getArchive: async (id, path) => {
        await this.call('containers.getArchive', [id, path]);
        const c = this.mustFind(id);
        return packFrom(c.tree, path, (await import('tar-stream')).pack);
      },
      start: async (id) => {
        await this.call('containers.start', [id]);
        const c = this.mustFind(id);
        if (c.state === 'running') return; // the engine's 304: the adapter's success
        c.state = 'running';
        c.exitCode = 0;
        c.oomKilled = false;
        c.startedAt = this.iso();
        this.containerEvent(c, 'start');
        const quick = this.onStart.find((o) => o.when(c.name));
        if (quick) return this.end(c, quick.code, false);
        for (const task of this.tasks) {
          const t = task({ name: c.name, labels: c.labels, cmd: c.spec.cmd, env: c.spec.env, tree: c.tree });
          if (!t) continue;
          for (const [file, text] of Object.entries(t.files ?? {})) {
            // a file below a bind mount (/results) is the host's, as the engine binds it
            const bind = c.spec.host.binds.map((b) => b.split(':')).find(([, target]) => target && file.startsWith(`${target}/`));
            if (bind) {
              const host = posix.join(bind[0] as string, file.slice((bind[1] as string).length));
              mkdirSync(posix.dirname(host), { recursive: true });
              writeFileSync(host, text);
            } else writeFile(c.tree, file, Buffer.from(text));
          }
          c.logs += t.log ?? '';
          return this.end(c, t.code, false);
        }
      },
      stop: async (id, graceSeconds) => {
        await this.call('containers.stop', [id, graceSeconds]);
        const c = this.mustFind(id);
        if (c.state !== 'running') return; // 304: already stopped
        this.end(c, 137, false);
      },
      remove: async (id) => {
        await this.call('containers.remove', [id]);
        const c = this.find(id);
        if (!c) return false;
        if (c.state === 'running') this.end(c, 137, false);
        this.byId.delete(c.id);
        for (const n of this.nets.values()) n.members.delete(c.id);
        this.containerEvent(c, 'destroy');
        return true;
      },
      logs: async (id, opts) => {
        await this.call('containers.logs', [id, opts]);
        const c = this.mustFind(id);
        let text = c.logs;
        if (opts.tail !== undefined)
          text = text
            .split('\n')
            .slice(-opts.tail - 1)
            .join('\n');
        if (!opts.follow) return Readable.from([Buffer.from(text)]);
        const out = new PassThrough();
        out.write(text);
        return out;
      },
    };
  }

  private networkClient(): NetworkClient {
    return {
      list: async (labelFilters) => {
        await this.call('networks.list', [labelFilters]);
        return [...this.nets.values()].filter((n) => matchesLabels(n.spec.labels, labelFilters)).map((n) => this.netSummary(n));
      },
      inspect: async (idOrName) => {
        await this.call('networks.inspect', [idOrName]);
        const n = this.findNet(idOrName);
        if (!n) throw httpError(404, `network ${idOrName} not found`);
        return { ...this.netSummary(n), containers: this.endpoints(n) } satisfies NetworkDetails;
      },
      create: async (spec) => {
        await this.call('networks.create', [spec]);
        if (this.nets.has(spec.name)) throw httpError(409, `network with name ${spec.name} already exists`);
        const n: FakeNetwork = { id: newId(), spec: structuredClone(spec), created: this.iso(), members: new Set() };
        this.nets.set(spec.name, n);
        this.emit('network', 'create', n.id, { name: spec.name, type: spec.driver ?? 'bridge' });
        return n.id;
      },
      connect: async (network, container) => {
        await this.call('networks.connect', [network, container]);
        const n = this.findNet(network);
        if (!n) throw httpError(404, `network ${network} not found`);
        const c = this.mustFind(container);
        if (n.members.has(c.id)) throw httpError(403, `endpoint with name ${c.name} already exists in network ${n.spec.name}`);
        n.members.add(c.id);
        c.networks.push(n.spec.name);
        this.emit('network', 'connect', n.id, { name: n.spec.name, type: n.spec.driver ?? 'bridge', container: c.id });
      },
      remove: async (idOrName) => {
        await this.call('networks.remove', [idOrName]);
        const n = this.findNet(idOrName);
        if (!n) return false;
        if (BUILTIN_NETWORKS.includes(n.spec.name)) throw httpError(403, `${n.spec.name} is a pre-defined network and cannot be removed`);
        if (this.endpoints(n).length) throw httpError(403, `error while removing network: network ${n.spec.name} id ${n.id} has active endpoints`);
        for (const id of n.members) {
          const c = this.byId.get(id);
          if (c) c.networks = c.networks.filter((x) => x !== n.spec.name);
        }
        this.nets.delete(n.spec.name);
        this.emit('network', 'destroy', n.id, { name: n.spec.name, type: n.spec.driver ?? 'bridge' });
        return true;
      },
    };
  }

  private volumeClient(): VolumeClient {
    return {
      list: async (labelFilters) => {
        await this.call('volumes.list', [labelFilters]);
        return [...this.vols.values()].filter((v) => matchesLabels(v.labels, labelFilters)).map((v) => structuredClone(v));
      },
      inspect: async (name) => {
        await this.call('volumes.inspect', [name]);
        const v = this.vols.get(name);
        if (!v) throw httpError(404, `get ${name}: no such volume`);
        return structuredClone(v);
      },
      create: async (spec: VolumeCreateSpec) => {
        await this.call('volumes.create', [spec]);
        // The engine answers a create of an existing name with that volume, its labels untouched.
        if (!this.vols.has(spec.name)) {
          this.vols.set(spec.name, { name: spec.name, labels: { ...spec.labels }, driver: 'local' });
          this.emit('volume', 'create', spec.name, { driver: 'local' });
        }
        return spec.name;
      },
      remove: async (name) => {
        await this.call('volumes.remove', [name]);
        if (!this.vols.has(name)) return false;
        const users = [...this.byId.values()].filter((c) => c.spec.host.mounts.some((m) => m.source === name));
        if (users.length) throw httpError(409, `remove ${name}: volume is in use - [${users.map((c) => c.id).join(', ')}]`);
        this.vols.delete(name);
        this.emit('volume', 'destroy', name, { driver: 'local' });
        return true;
      },
    };
  }

  private imageClient(): ImageClient {
    return {
      list: async (labelFilters) => {
        await this.call('images.list', [labelFilters]);
        const byId = new Map([...this.imgs.values()].map((i) => [i.id, i]));
        return [...byId.values()]
          .filter((i) => matchesLabels(i.labels, labelFilters))
          .map(({ id, labels, repoDigests }) => ({ id, tags: this.tagsOf(id), labels: { ...labels }, repoDigests: [...(repoDigests ?? [])] }));
      },
      inspect: async (ref) => {
        await this.call('images.inspect', [ref]);
        const i = this.imgs.get(ref) ?? [...this.imgs.values()].find((x) => x.id === ref);
        if (!i) throw httpError(404, `No such image: ${ref}`);
        return { ...structuredClone(i), tags: this.tagsOf(i.id) };
      },
      pull: async (ref, o = {}) => {
        await this.call('images.pull', [ref]);
        const r = this.registry.get(ref);
        const needs = r?.auth ?? [...this.registry.values()].find((x) => x.auth)?.auth;
        if (needs && (o.auth?.username !== needs.username || o.auth.password !== needs.password))
          throw new ImagePullError('unauthorized', ref, 'unauthorized: authentication required', false);
        if (!r) throw new ImagePullError('not-found', ref, `manifest for ${ref} not found: manifest unknown: manifest unknown`, false);
        const total = r.layers.reduce((a, b) => a + b, 0);
        let done = 0;
        for (const l of r.layers) {
          if (o.signal?.aborted) throw new Error(`pull of ${ref} aborted`);
          done += l;
          o.onProgress?.({ done, total });
        }
        const digest = `sha256:${newId()}`;
        const repo = ref.slice(0, ref.lastIndexOf(':'));
        this.addImage({ ref, repoDigests: [`${repo}@${digest}`], ...(r.labels ? { labels: r.labels } : {}) });
        const id = (this.imgs.get(ref) as { id: string }).id;
        this.emit('image', 'pull', id, { name: ref });
        return { id, digest };
      },
      // `docker save` / `docker load`, as far as berth reads them: the image (its id, labels and the
      // tag saved) goes through a stream and comes back as it was (a JSON document stands for the tar)
      save: async (ref) => {
        await this.call('images.save', [ref]);
        const i = this.imgs.get(ref) ?? [...this.imgs.values()].find((x) => x.id === ref);
        if (!i) throw httpError(404, `reference does not exist: ${ref}`);
        return Readable.from([Buffer.from(JSON.stringify({ tag: this.imgs.has(ref) ? ref : undefined, image: { ...i, repoDigests: [] } }))]);
      },
      load: async (tar) => {
        await this.call('images.load', []);
        const chunks: Buffer[] = [];
        for await (const c of tar) chunks.push(c as Buffer);
        const { tag, image } = JSON.parse(Buffer.concat(chunks).toString()) as { tag?: string; image: ImageSummary & { user: string; workingDir: string } };
        this.imgs.set(tag ?? `${UNNAMED}${image.id}`, image);
        this.emit('image', 'load', image.id, tag ? { name: tag } : {});
      },
      remove: async (ref) => {
        await this.call('images.remove', [ref]);
        const byId = [...this.imgs.entries()].filter(([, x]) => x.id === ref);
        const i = this.imgs.get(ref) ?? byId[0]?.[1];
        if (!i) return false;
        if ([...this.byId.values()].some((c) => c.imageId === i.id))
          throw httpError(409, `conflict: unable to remove repository reference "${ref}" - container is using its referenced image`);
        if (!this.imgs.has(ref) && this.tagsOf(i.id).length > 1)
          throw httpError(409, `conflict: unable to delete ${ref} (must be forced) - image is referenced in multiple repositories`);
        for (const [k, x] of [...this.imgs.entries()])
          if (k === ref || (x.id === i.id && (byId.length > 0 || this.tagsOf(i.id).length === 1))) this.imgs.delete(k);
        this.emit('image', this.tagsOf(i.id).length ? 'untag' : 'delete', i.id, { name: ref, ...i.labels });
        return true;
      },
    };
  }

  private buildClient(): BuildClient {
    return {
      builder: 'classic',
      build: async (context, o: BuildOptions) => {
        await this.call('builds.build', [o]);
        const ex = (await import('tar-stream')).extract();
        const files = new Map<string, string>();
        const read = (async () => {
          for await (const e of ex) {
            const chunks: Buffer[] = [];
            for await (const c of e) chunks.push(c as Buffer);
            files.set(e.header.name.replace(/^\.\//, ''), Buffer.concat(chunks).toString('utf8'));
          }
        })();
        const body: Buffer[] = [];
        for await (const c of context) body.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
        ex.end(Buffer.concat(body));
        await read;
        if (o.signal?.aborted) throw o.signal.reason instanceof Error ? o.signal.reason : new Error('the build was stopped');
        const text = files.get(o.dockerfile);
        if (text === undefined) throw new BuildError(`Cannot locate specified Dockerfile: ${o.dockerfile}`);
        const steps = text
          .split('\n')
          .map((l) => l.trim())
          .filter((l) => l && !l.startsWith('#'));
        const labelSteps = Object.entries(o.labels).map(([k, v]) => `LABEL ${k}=${v}`);
        const total = steps.length + labelSteps.length;
        const say = (stream: string) => o.onMessage?.({ stream });
        for (const [i, step] of steps.entries()) {
          say(`Step ${i + 1}/${total} : ${step}`);
          say('\n');
          const from = /^FROM\s+(\S+)/i.exec(step);
          if (from && !this.imgs.has(from[1] as string) && from[1] !== 'scratch') {
            const message = `pull access denied for ${from[1] as string}, repository does not exist or may require 'docker login'`;
            o.onMessage?.({ errorDetail: { message }, error: message });
            throw new BuildError(message);
          }
          const exit = /^RUN\s+exit\s+(\d+)/i.exec(step);
          if (exit && Number(exit[1]) > 0) {
            const message = `The command '/bin/sh -c exit ${exit[1] as string}' returned a non-zero code: ${exit[1] as string}`;
            o.onMessage?.({ errorDetail: { code: Number(exit[1]), message }, error: message });
            throw new BuildError(message, Number(exit[1]));
          }
        }
        for (const [i, l] of labelSteps.entries()) say(`Step ${steps.length + i + 1}/${total} : ${l}`);
        const id = `sha256:${newId()}`;
        this.keepUnnamed(o.tag);
        this.imgs.set(o.tag, { id, tags: [o.tag], labels: { ...o.labels }, repoDigests: [], user: '', workingDir: '' });
        o.onMessage?.({ aux: { ID: id } });
        say(`Successfully built ${id.slice(7, 19)}\n`);
        this.emit('image', 'tag', id, { name: o.tag, ...o.labels });
        return { id };
      },
    };
  }

  private eventClient(): EventClient {
    return {
      stream: async (labelFilters, opts) => {
        await this.call('events.stream', [labelFilters, opts]);
        return this.follow((e) => matchesLabels(e.attributes, labelFilters), opts);
      },
      images: async (opts) => {
        await this.call('events.images', [opts]);
        return this.follow((e) => e.type === 'image', opts);
      },
      first: async (id, actions, opts) => {
        await this.call('events.first', [id, actions, opts]);
        const c = this.find(id);
        const stop = new AbortController();
        // the engine ends the stream at `until` (its clock); so does this, on the fake's clock
        const timer = setTimeout(() => stop.abort(), Math.max(0, opts.until * 1000 - this.clock.now()));
        const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
        try {
          const accept = (e: EngineEvent) => e.type === 'container' && e.id === c?.id && actions.includes(e.action);
          for await (const e of this.follow(accept, { since: Math.floor(opts.since), signal })) return e;
          return undefined;
        } finally {
          clearTimeout(timer);
        }
      },
    };
  }

  private follow(accept: (e: EngineEvent) => boolean, opts: { since?: number; signal?: AbortSignal }): AsyncIterable<EngineEvent> {
    const queue: EngineEvent[] = [];
    let wake: (() => void) | undefined;
    const since = opts.since !== undefined ? BigInt(opts.since) * 1_000_000_000n : undefined;
    if (since !== undefined) queue.push(...this.log.filter((e) => e.timeNano >= since && accept(e)));
    const listener = (e: EngineEvent) => {
      if (!accept(e)) return;
      queue.push(e);
      wake?.();
    };
    this.listeners.add(listener);
    const signal = opts.signal;
    const onAbort = () => wake?.();
    signal?.addEventListener('abort', onAbort);
    const listeners = this.listeners;
    return (async function* () {
      try {
        for (;;) {
          while (queue.length) yield queue.shift() as EngineEvent;
          if (signal?.aborted) return;
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
      } finally {
        listeners.delete(listener);
        signal?.removeEventListener('abort', onAbort);
      }
    })();
  }
}

/** Writes a regular file at `file` (an absolute path) into `tree`, with the folders above it that are missing. */
function writeFile(tree: Map<string, FakeTreeEntry>, file: string, body: Buffer): void {
  const header = (name: string, type: 'file' | 'directory', size: number) =>
    ({
      name,
      type,
      size,
      mode: type === 'file' ? 0o644 : 0o755,
      mtime: new Date(0),
      uid: 0,
      gid: 0,
      uname: '',
      gname: '',
      linkname: '',
      devmajor: 0,
      devminor: 0,
    }) as Header;
  const name = file.replace(/^\/+/, '');
  const parts = name.split('/');
  for (let i = 1; i < parts.length; i++) {
    const dir = parts.slice(0, i).join('/');
    if (!tree.has(dir)) tree.set(dir, { header: header(dir, 'directory', 0), body: Buffer.alloc(0) });
  }
  tree.set(name, { header: header(name, 'file', body.length), body });
}

/** Extracts a tar put at `at` into `tree` (entry names without a leading or trailing slash). */
async function extractInto(tree: Map<string, FakeTreeEntry>, at: string, tar: Buffer): Promise<void> {
  const ex = (await import('tar-stream')).extract();
  const done = (async () => {
    for await (const e of ex) {
      const chunks: Buffer[] = [];
      for await (const c of e) chunks.push(c as Buffer);
      const name = posix.join(at, e.header.name).replace(/^\/+/, '').replace(/\/+$/, '');
      if (name) tree.set(name, { header: { ...e.header, name }, body: Buffer.concat(chunks) });
    }
  })();
  ex.end(tar);
  await done;
}

/** `path` and everything below it as the engine's archive API sends it: entries named `<basename>/...`; 404 when missing. */
function packFrom(tree: Map<string, FakeTreeEntry>, path: string, pack: typeof import('tar-stream').pack): Readable {
  const p = path.replace(/^\/+/, '').replace(/\/+$/, '');
  if (!tree.has(p)) throw httpError(404, `Could not find the file ${path} in container`);
  const base = posix.basename(p);
  const out = pack();
  for (const name of [...tree.keys()].sort()) {
    if (name !== p && !name.startsWith(`${p}/`)) continue;
    const e = tree.get(name) as FakeTreeEntry;
    const rel = base + name.slice(p.length);
    out.entry({ ...e.header, name: e.header.type === 'directory' ? `${rel}/` : rel, size: e.body.length }, e.body);
  }
  out.finalize();
  return out as unknown as Readable;
}

/**
 * What an exec in a fake container does: `sh -c` with `;`-separated `echo WORDS` (`>&2`: to
 * stderr), `cat` (its input back), `exit N`; `true` and `false`; anything else exits 0 with no
 * output. Enough for the engine contract's exec test and the unit tests of berth exec.
 */
function fakeExec(cmd: readonly string[], stdin: boolean): ExecSession {
  const stdout = new PassThrough();
  const stderr = new PassThrough();
  const input = stdin ? new PassThrough() : null;
  const script = cmd[0] === 'sh' && cmd[1] === '-c' ? (cmd[2] ?? '') : cmd.join(' ');
  const exit = (async () => {
    for (const part of script.split(';').map((p) => p.trim())) {
      const echo = /^echo (.*?)( >&2)?$/.exec(part);
      if (echo) (echo[2] ? stderr : stdout).write(`${echo[1]}\n`);
      else if (part === 'cat' && input) for await (const chunk of input) stdout.write(chunk as Buffer);
      else if (/^exit \d+$/.test(part)) return end(Number(part.slice(5)));
      else if (part === 'false') return end(1);
    }
    return end(0);
  })();
  function end(code: number): number {
    stdout.end();
    stderr.end();
    return code;
  }
  return {
    stdout,
    stderr,
    stdin: input,
    exit,
    resize: () => Promise.resolve(),
    close: () => {
      stdout.end();
      stderr.end();
    },
  };
}

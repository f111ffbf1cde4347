/**
 * The narrow surface berth needs from the engine, one small interface per resource kind
 * (containers, networks, volumes, images, events). The Docker implementation (docker/) is
 * tested on a real engine; the executor's failure paths are tested against an in-memory fake
 * (test/support/fake-engine.ts), which one contract suite (test/contract/engine.contract.ts)
 * holds to what the real engine answers. The planner is pure and needs neither.
 */
import type { Readable, Writable } from 'node:stream';

export type Labels = Record<string, string>;

export interface MountSummary {
  type: string; // bind | volume | tmpfs | ...
  source: string;
  destination: string;
  /** Volume name for volume mounts. */
  name?: string;
  rw: boolean;
}

/** What a label-filtered container list says about one container: no inspect needed. */
export interface ContainerSummary {
  id: string;
  name: string;
  labels: Labels;
  image: string;
  imageId: string;
  /** created | running | paused | restarting | removing | exited | dead */
  state: string;
  status: string;
  networkMode: string;
  /** Names of the networks the container is attached to. */
  networks: string[];
  /** Ids of those networks, where the engine says (two networks can share a name). */
  networkIds?: string[];
  mounts: MountSummary[];
  /** Seconds since the epoch. */
  created: number;
  /** A run of `--backend swarm`: its service, its task (newest) and the node it is pinned to. */
  placement?: RunPlacement;
}

export interface RunPlacement {
  service: string;
  task?: string;
  taskState?: string;
  node: string;
  /** The node's hostname, as the swarm reports it ('' when the node is not known). */
  nodeName: string;
}

export interface ContainerState {
  status: string;
  running: boolean;
  oomKilled: boolean;
  exitCode: number;
  error: string;
  startedAt: string;
  finishedAt: string;
  pid: number;
}

/** The parts of `docker inspect` that attestation and status read. */
export interface ContainerDetails extends ContainerSummary {
  /**
   * The digest of the image manifest the container runs, where the engine says it (API 1.48 and
   * later: ImageManifestDescriptor; the containerd image store): the platform's manifest of an
   * image whose id is an index, else its id.
   */
  imageManifest?: string;
  state: string;
  runState: ContainerState;
  config: {
    image: string;
    cmd: string[] | null;
    /** The entrypoint it runs (the image's, or the one its create gave: a sandbox's, berth's helper); null: none. */
    entrypoint: string[] | null;
    env: string[];
    workingDir: string;
    user: string;
    labels: Labels;
  };
  host: {
    privileged: boolean;
    capAdd: string[];
    capDrop: string[];
    securityOpt: string[];
    readonlyRootfs: boolean;
    networkMode: string;
    pidMode: string;
    ipcMode: string;
    utsMode: string;
    usernsMode: string;
    cgroupnsMode: string;
    init: boolean;
    restartPolicy: string;
    portBindings: number;
    publishAllPorts: boolean;
    nanoCpus: number;
    memory: number;
    memorySwap: number;
    pidsLimit: number;
    devices: number;
    dns: string[];
    binds: string[];
    /** tmpfs mounts: container path → mount options. */
    tmpfs: Record<string, string>;
    /** The log driver and its options (the engine's default driver, `json-file`, with none when not set). */
    logConfig: { type: string; config: Record<string, string> };
    /** HostConfig.StorageOpt (absent: none). */
    storageOpt?: Record<string, string>;
  };
  restartCount: number;
  /** Its IPv4 address on each network it is attached to, where the engine says (network name → address). */
  addresses?: Record<string, string>;
  /**
   * Where the engine keeps the container's writable layer: its storage driver and, for overlay2,
   * the layer's folder on the host (GraphDriver.Data.UpperDir). Absent: the backend does not say.
   */
  storage?: { driver: string; upperDir?: string };
}

export interface ContainerCreateSpec {
  name: string;
  image: string;
  cmd: string[] | null;
  /** Replaces the image's entrypoint (a sandbox's: berth's helper, EXEC.helperPath). */
  entrypoint?: string[];
  env: string[];
  workingDir: string;
  labels: Labels;
  user?: string;
  /** DNS names of the container on its (user-defined) network, besides its own name. */
  aliases?: string[];
  stopSignal?: string;
  stopTimeout?: number;
  host: {
    networkMode: string;
    binds: string[];
    /** Named-volume mounts. */
    mounts: { type: 'volume'; source: string; target: string; readOnly: boolean }[];
    capDrop: string[];
    capAdd: string[];
    securityOpt: string[];
    privileged: false;
    init: boolean;
    /** private: the container sees its own cgroup tree only. */
    cgroupnsMode?: 'private' | 'host';
    /** Upstream DNS servers for names the engine's resolver does not know itself. */
    dns?: readonly string[];
    nanoCpus?: number;
    memory?: number;
    memorySwap?: number;
    pidsLimit: number;
    readonlyRootfs: boolean;
    /** The engine's log driver and its options (berth's: json-file, size-capped). */
    logConfig?: { type: string; config: Record<string, string> };
    /** tmpfs mounts: container path → mount options. */
    tmpfs?: Record<string, string>;
    /** The engine's storage options (`size`: the writable layer's cap, where the engine can enforce it). */
    storageOpt?: Record<string, string>;
  };
}

/** What a collect left out past the caps: counted, the first ones listed. */
export interface CollectLeftOut {
  entries: number;
  /** Bytes of the regular files left out. */
  bytes: number;
  listed: { path: string; type: 'file' | 'dir' | 'symlink' | 'other'; size: number; why: 'max-files' | 'max-bytes' | 'in-left-out-folder' }[];
}

export interface ContainerClient {
  list(labelFilters: string[]): Promise<ContainerSummary[]>;
  inspect(idOrName: string): Promise<ContainerDetails>;
  /** Creates the container; rejects with statusCode 409 when the name is taken. */
  create(spec: ContainerCreateSpec): Promise<string>;
  /** Extracts a tar archive into `path` inside the (not yet started) container. */
  putArchive(id: string, path: string, tar: Buffer | Readable): Promise<void>;
  start(id: string): Promise<void>;
  /** TERM, then KILL after `graceSeconds`. Already stopped is success. */
  stop(id: string, graceSeconds: number): Promise<void>;
  /** Force-removes; a container that is already gone counts as removed. Returns false if it was gone. */
  remove(id: string): Promise<boolean>;
  logs(id: string, opts: { follow: boolean; tail?: number }): Promise<Readable>;
  /**
   * Runs `cmd` in the running container (no terminal, its output discarded) and resolves with its
   * exit code, within `ms` (else rejects): a sidecar's `ready: {command}`. On a swarm, in the
   * task's container through its node's engine.
   */
  exec(id: string, cmd: string[], ms: number): Promise<number>;
  /**
   * A tar stream of `path` (and everything below it) read out of the container, running or
   * stopped, through the engine's archive API: nothing runs in the container. Entries are named
   * `<basename of path>/...`. Rejects with statusCode 404 when the container (or the path) is
   * gone. The reader destroys the stream to stop early.
   */
  getArchive(id: string, path: string): Promise<Readable>;
  /**
   * Starts `o.cmd` in the running container `id` (`berth exec`, the API's exec) and hands back its
   * streams as the engine sends them: bounded until the engine answers, then as long as the
   * reader wants. 409 when the container is not running, 404 when it is gone.
   */
  execStart(id: string, o: ExecOptions): Promise<ExecSession>;
}

/** A command started in a running container (ContainerClient.execStart). */
export interface ExecOptions {
  cmd: string[];
  /** Unset: the container's own user (the attempt's). */
  user?: string;
  /** Unset: the container's working folder. */
  workingDir?: string;
  /** `NAME=value` entries added to the container's environment. */
  env?: string[];
  /** A terminal: one output stream (stdout), resizable. */
  tty?: boolean;
  /** Attach its standard input (`stdin` of the session is then writable; ending it closes the command's). */
  stdin?: boolean;
}

export interface ExecSession {
  /** The command's output; with a terminal everything comes on `stdout` and `stderr` ends at once. */
  stdout: Readable;
  stderr: Readable;
  stdin: Writable | null;
  /** The command's exit code, once its output has ended. */
  exit: Promise<number>;
  resize(rows: number, cols: number): Promise<void>;
  /** Stops reading: the engine's connection is closed (the command itself goes on unless it is killed). */
  close(): void;
}

/** Where a running container is reached for `berth exec` and `berth cp` (Engine.reach). */
export interface Reached {
  /** The engine that holds the container: this one, or a swarm node's own. */
  engine: Engine;
  /** The container's id on that engine. */
  id: string;
  /** That engine, for messages (no credentials). */
  where: string;
}

/**
 * A backend whose runs happen elsewhere than this host (a swarm node): what berth then asks of it
 * instead of looking itself (Engine.remote). A single engine on this host has none.
 */
export interface RemoteRuns {
  /**
   * Whether `host:port` accepts a TCP connection, tried from the running container's own network
   * namespace (so from its networks) every `everyMs` until it accepts or `ms` has passed: '' when
   * it did, else what the last try met (an error code, or `timed out`). Berth cannot reach a
   * swarm's overlays from where it runs; on one engine it connects itself.
   */
  probeTcp(id: string, host: string, port: number, ms: number, everyMs: number): Promise<string>;
  /**
   * Brings a finished run's results home into `into` (the results folder where berth runs), from
   * where the run wrote them (a node's volume): streamed, file by file, only what fits `caps`
   * (spec.harvest) in the order they come; returns what it left out (counted, the first `listMax` listed).
   */
  collect(id: string, into: string, caps: { maxBytes: number; maxFiles: number }, listMax?: number): Promise<CollectLeftOut>;
  /**
   * What a run holds on disk, counted where it runs by the engine there (its writable layer, its
   * results, its volumes); undefined: the run is not running there now. A backend with this is
   * never measured through host paths (controller/disk-meter.ts).
   */
  diskUse(id: string): Promise<RunDiskUse | undefined>;
}

/**
 * An engine whose storage berth can ask about and, where its socket is a file on this host, read
 * (Engine.local): its data root, its storage driver, what its layers and volumes hold.
 */
export interface LocalStorage {
  /**
   * Where the engine keeps its data (its DockerRootDir), and whether berth reaches it through a
   * socket file on this host (`local`), so that path is one berth can read the file system of.
   */
  dataRoot(): Promise<{ path: string; local: boolean } | undefined>;
  /** The engine's storage driver and the file system under its data root (GET /info: Driver, DriverStatus "Backing Filesystem"). */
  storage(): Promise<{ driver: string; backingFs: string; dataRoot: string; imageStore?: 'classic' | 'containerd' }>;
  /**
   * What the engine's containers' writable layers (SizeRw, by container id) and its volumes (by
   * name) hold, as the engine counts them (GET /system/df: it walks each itself; a file's size,
   * hard links once, empty files and folders nothing).
   */
  diskUsage(): Promise<{ layers: Map<string, number>; volumes: Map<string, number> }>;
  /**
   * The bytes of a container's writable layer as the engine counts them (inspect with size:
   * SizeRw; the engine walks the layer itself). Where berth cannot read the layer's folder.
   */
  writableBytes(id: string): Promise<number>;
}

export interface NetworkSummary {
  id: string;
  name: string;
  labels: Labels;
  driver: string;
  internal: boolean;
  attachable: boolean;
  scope: string;
  /** When the engine created it (RFC 3339), where the engine says. */
  created?: string;
}

export interface NetworkDetails extends NetworkSummary {
  /** Container ids attached (from inspect). */
  containers: string[];
}

export interface NetworkCreateSpec {
  name: string;
  labels: Labels;
  internal: boolean;
  driver?: string;
  attachable?: boolean;
}

export interface NetworkClient {
  list(labelFilters: string[]): Promise<NetworkSummary[]>;
  inspect(idOrName: string): Promise<NetworkDetails>;
  create(spec: NetworkCreateSpec): Promise<string>;
  connect(network: string, container: string): Promise<void>;
  remove(idOrName: string): Promise<boolean>;
}

/** A run's disk use as the engine where it runs counts it (ContainerClient.diskUse). */
export interface RunDiskUse {
  /** The writable layer, with the run's workspace where that is a volume of its own (a swarm run's). */
  layer: number;
  results: number;
  /** The attempt's own volumes (spec.volumes), together and each by where it is mounted. */
  volumes: number;
  byMountPath: Record<string, number>;
  /** Who counted: named in the message of a run stopped for its disk. */
  countedBy: string;
}

export interface VolumeSummary {
  name: string;
  labels: Labels;
  driver: string;
  /** The driver's options as the engine reports them (absent: it does not say; none: `{}`). */
  options?: Record<string, string>;
}

export interface VolumeCreateSpec {
  name: string;
  labels: Labels;
  /** The volume's driver and its options, as the attestation expects them (berth makes `local` volumes with none). */
  driver?: string;
  options?: Record<string, string>;
}

export interface VolumeClient {
  list(labelFilters: string[]): Promise<VolumeSummary[]>;
  inspect(name: string): Promise<VolumeSummary>;
  create(spec: VolumeCreateSpec): Promise<string>;
  remove(name: string): Promise<boolean>;
}

export interface ImageSummary {
  id: string;
  tags: string[];
  labels: Labels;
  /** `name@sha256:…` for each registry the image was pushed to or pulled from (none for an image built or loaded here). */
  repoDigests?: string[];
  /** Its size in bytes, where the engine says. */
  size?: number;
}

/**
 * A registry credential as the engine takes it (X-Registry-Auth): a user name and password, or an
 * identity token. Found by src/registry/credentials.ts; never logged, recorded or put in argv.
 */
export interface RegistryAuth {
  username?: string;
  password?: string;
  identitytoken?: string;
  /** The registry it is for (`host:port`, or Docker Hub's `https://index.docker.io/v1/`). */
  serveraddress: string;
}

/** How far a pull is: the bytes of its layers downloaded and their total, as far as the engine has told them. */
export interface PullProgress {
  done: number;
  total: number;
}

export interface PullOptions {
  auth?: RegistryAuth;
  /** The platform to pull (`os/arch[/variant]`, a build's `FROM --platform=`); absent: the engine's own. */
  platform?: string;
  /** Aborts the pull (the engine cancels it when its connection closes). */
  signal?: AbortSignal;
  onProgress?(p: PullProgress): void;
  /**
   * How long the engine may go without a word (its answer, then each message of its progress
   * stream) before the pull is given up as a registry that does not answer; default: the
   * engine's call budget (--engine-timeout).
   */
  idleMs?: number;
}

export interface ImageClient {
  /** Images whose labels match every filter (one list call); no filter: every image the engine holds (tagged or not). */
  list(labelFilters: string[]): Promise<ImageSummary[]>;
  inspect(ref: string): Promise<ImageSummary & { user: string; workingDir: string }>;
  /**
   * Pulls `ref` (a tag, or `name@sha256:…`) with the credential given. Resolves with the image's
   * id and the digest the registry gave; rejects with an ImagePullError (engine/errors.ts) saying
   * which failure it was, whether the engine answered with an error status or reported it inside
   * its progress stream.
   */
  pull(ref: string, o?: PullOptions): Promise<{ id: string; digest?: string }>;
  /** `docker save REF` as a tar stream (the image with its tag when `ref` is one). */
  save(ref: string): Promise<Readable>;
  /** `docker load` of such a tar stream. */
  load(tar: Readable): Promise<void>;
  /**
   * `docker rmi REF` without force: the tag (or the image, named by id) goes; an image no other
   * tag names is deleted with its untagged parents. False when it was already gone; an image a
   * container uses, or that another tag names (by id), is a conflict (409), left as it is.
   */
  remove(ref: string): Promise<boolean>;
}

/**
 * One message of the engine's build output (moby's JSONMessage, one JSON object a line): text
 * (`stream`: `Step 2/5 : RUN make`, ` ---> Running in <id>`, the steps' output), the image
 * made (`aux.ID`), or the failure (`errorDetail`, `error`).
 */
export interface BuildMessage {
  stream?: string;
  aux?: { ID?: string };
  errorDetail?: { code?: number; message?: string };
  error?: string;
}

export interface BuildOptions {
  /** The tag the image gets (`berth-build/<16 hex>`). */
  tag: string;
  labels: Labels;
  /** The Dockerfile, relative to the context. */
  dockerfile: string;
  args: Record<string, string>;
  target?: string;
  /** `none`: no network for the build's RUN steps; `default`: the engine's default (bridge). */
  network: 'none' | 'default';
  /** Limits of each step's container: memory (bytes), CPUs. */
  memoryBytes?: number;
  cpus?: number;
  /** Pull every FROM image, even one the engine holds (imagePullPolicy Always). */
  pull?: boolean;
  /** X-Registry-Config: a credential per registry for the FROM images the engine pulls (never logged). */
  registryConfig?: Record<string, { username?: string; password?: string; identitytoken?: string; serveraddress: string }>;
  /** Closing the request stops the build (the engine kills the step under way). */
  signal?: AbortSignal;
  /** Each message of the build's output, as it comes. */
  onMessage?(m: BuildMessage): void;
}

/** A build that failed: the engine's words (its errorDetail, or its error status), and its code where it gave one (a step's exit code). */
export class BuildError extends Error {
  constructor(
    readonly text: string,
    readonly code?: number,
  ) {
    super(text);
    this.name = 'BuildError';
  }
}

/** Builds images from a Dockerfile and a context (docs/CONTRACT.md "Images built from a Dockerfile"). */
export interface BuildClient {
  /** Which builder the engine's build API is driven with (`describe` says it): the classic builder (API `version=1`). */
  readonly builder: 'classic';
  /**
   * Builds from `context` (a tar stream of the context, Dockerfile and .dockerignore in it);
   * resolves with the image's id once built and tagged, rejects with a BuildError saying why.
   */
  build(context: NodeJS.ReadableStream, o: BuildOptions): Promise<{ id: string }>;
}

export interface EngineEvent {
  type: string; // container | network | volume
  action: string; // create | start | die | oom | destroy | connect | disconnect | update | ...
  id: string;
  attributes: Labels;
  /** Nanoseconds since the epoch, as the engine reports `timeNano`. */
  timeNano: bigint;
  /**
   * The engine it came from when that is not the one the stream was asked of (a swarm node's,
   * merged into the manager's stream): its time is that engine's clock, so no `since` is taken from it.
   */
  origin?: string;
}

/**
 * The type of an event a backend that merges several engines' streams yields when one of them
 * was broken and is connected again (a swarm node that went away and came back): what happened
 * meanwhile was not reported, so whoever follows the stream lists everything again.
 */
export const RELIST_EVENT = 'relist';

export interface EventClient {
  /** Streams events matching the label filters since `sinceSeconds`; the stream ends when the engine goes away. */
  stream(labelFilters: string[], opts: { since?: number; signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>>;
  /**
   * The image events (`type` image: pull, load, tag, untag, import, delete, ...), whatever the
   * image's labels: what makes an image a blocked attempt waits for appear.
   */
  images(opts: { since?: number; signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>>;
  /**
   * The first event of container `id` with one of `actions` in the engine's event log from
   * `since` (seconds on the engine's clock, fractions allowed), waiting for one until `until`
   * (the same clock); undefined when none came. What an exit that raced its own cause is read
   * from: dockerd can send a container's `die` (and answer an inspect without `OOMKilled`) before
   * it handles the kernel's OOM kill that caused it.
   */
  first(id: string, actions: string[], opts: { since: number; until: number; signal?: AbortSignal }): Promise<EngineEvent | undefined>;
}

import type { HostIsolation } from './isolation';

export interface Engine {
  containers: ContainerClient;
  networks: NetworkClient;
  volumes: VolumeClient;
  images: ImageClient;
  events: EventClient;
  ping(): Promise<void>;
  /**
   * The engine's version and API version (its GET /version), and `talks`: the API version berth
   * talks to it (negotiated: src/engine/docker/api-version.ts; an engine without negotiation says
   * its own). `arch`: the engine's machine as it names it (amd64, arm64, ...), where it says.
   */
  version(): Promise<{ version: string; apiVersion: string; talks?: string; arch?: string }>;
  /**
   * The running container of run `id` where it can be reached itself: on one engine, the engine
   * and `id`; on a swarm, the run's task's container, through its node's engine (404 when the
   * run has no running task).
   */
  reach(id: string): Promise<Reached>;
  /**
   * What the engine says of the isolation it gives every container (its GET /info: seccomp,
   * AppArmor, SELinux, user namespaces, cgroup version, storage driver, default runtime;
   * engine/isolation.ts). A swarm: its manager's.
   */
  isolation(): Promise<HostIsolation>;
  /** Where the engine is, for messages (no credentials). */
  readonly address?: string;
  /**
   * Where a backend whose nodes pull for themselves (a swarm) finds a credential for an image:
   * berth's registry credentials (registry/credentials.ts), given by whoever runs the pulls.
   */
  useCredentials?(credentialFor: (ref: string) => Promise<RegistryAuth | undefined>): void;
  /**
   * Gives up every call in flight at once (each rejects) and refuses new ones: for a process
   * that is stopping while the engine does not answer.
   */
  abandon(reason: string): void;
  /**
   * Which start of the engine this is: its default `bridge` network (made anew, with a new id,
   * each time the engine starts) and when it was made; undefined when the engine has none
   * (`--bridge=none`, or a backend of several engines). Asked on a connection of its own: an
   * engine that is shutting down refuses new connections (an unavailable error) while it still
   * answers on kept-alive ones.
   */
  boot(): Promise<{ id: string; at: string } | undefined>;
  /** Its storage, where berth can ask (LocalStorage); null for a backend of several engines (a swarm). */
  readonly local: LocalStorage | null;
  /** Its runs, where they happen elsewhere than this host (RemoteRuns: a swarm); null for one engine. */
  readonly remote: RemoteRuns | null;
  /** Its image builds (BuildClient); null for a backend that cannot build (its attempts with spec.build are Blocked). */
  readonly builds: BuildClient | null;
}

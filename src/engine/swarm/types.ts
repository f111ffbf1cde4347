/**
 * The narrow surface berth needs from a Docker Swarm manager: services (one replicated job per
 * run), their tasks (no task events exist: they are polled), secrets, overlay networks and the
 * nodes. Implemented over dockerode (index.ts), every call under a deadline.
 */
import type { Readable } from 'node:stream';
import type { EngineEvent, Labels, NetworkClient, RegistryAuth } from '../types';

export interface ServiceCreateSpec {
  name: string;
  /** On the service. */
  labels: Labels;
  /** On the task's container. */
  containerLabels: Labels;
  image: string;
  /** With `entrypoint`, its arguments; without, the whole command (the image's entrypoint is not run). */
  cmd: string[] | null;
  /** The process the task runs, `cmd` its arguments (docker's Entrypoint; a service's ContainerSpec.Command). */
  entrypoint?: string[];
  env: string[];
  workingDir: string;
  user?: string;
  /** The node the one task runs on (a `node.id==` constraint): berth places, swarm never queues. */
  nodeId: string;
  /** Networks (ids or names) with the task's aliases on each. */
  networks: { target: string; aliases?: string[] }[];
  /**
   * Node-local named volumes (made beforehand on the node). `noCopy`: the task's container does
   * not copy the image's content (and the folder's owner) into a volume it finds empty.
   */
  mounts: { source: string; target: string; readOnly: boolean; noCopy?: boolean }[];
  /** Swarm secrets delivered as files under /run/secrets (`file` is the path there). */
  secrets: { id: string; name: string; file: string }[];
  capDrop: string[];
  capAdd: string[];
  init: boolean;
  readonlyRootfs: boolean;
  pidsLimit?: number;
  nanoCpus?: number;
  memory?: number;
  /** Seconds between TERM and KILL when the task is stopped. */
  stopGraceSeconds?: number;
  /** The task container's log driver and options (berth caps the engine's own log files). */
  logDriver?: { name: string; options: Record<string, string> };
  /** Upstream DNS servers of the task's container (names its networks' resolver does not know). */
  dns?: readonly string[];
  /** The registry credential for its image: sent with the create (X-Registry-Auth), so the node's agent pulls with it. */
  auth?: RegistryAuth;
}

export interface ServiceSummary {
  id: string;
  name: string;
  labels: Labels;
  /** The node the service is pinned to (from its constraint), if any. */
  nodeId?: string;
  image: string;
  /** The networks its tasks attach to, as the service names them (ids or names). */
  networks: string[];
  /** The volumes its tasks mount, as the service asks for them. */
  mounts?: { source: string; target: string; readOnly: boolean }[];
  createdAt: string;
}

/** complete | failed | rejected | shutdown | orphaned | remove | new | pending | assigned | accepted | preparing | ready | starting | running */
export interface TaskSummary {
  id: string;
  serviceId: string;
  nodeId: string;
  desiredState: string;
  state: string;
  /** The engine's message and error for the state, as given. */
  message: string;
  error: string;
  exitCode?: number;
  containerId?: string;
  /** When the task reached its state (RFC 3339). */
  timestamp: string;
  createdAt: string;
}

export interface ServiceClient {
  /** Creates the service; rejects with statusCode 409 when the name is taken. */
  create(spec: ServiceCreateSpec): Promise<string>;
  list(labelFilters: string[]): Promise<ServiceSummary[]>;
  inspect(idOrName: string): Promise<ServiceSummary>;
  /** Removes the service (its tasks' containers go with it); false if it was gone. */
  remove(idOrName: string): Promise<boolean>;
  /** The service's output (stdout and stderr interleaved), through the manager. */
  logs(idOrName: string, opts: { follow: boolean; tail?: number }): Promise<Readable>;
}

export interface TaskClient {
  /** Tasks of services whose labels match every filter, or of the given services (one call). */
  list(filter: { labels?: string[]; services?: string[] }): Promise<TaskSummary[]>;
}

export interface SecretSummary {
  id: string;
  name: string;
  labels: Labels;
}

export interface SecretClient {
  /** Creates a secret; rejects with statusCode 409 when the name is taken. The data never leaves this call. */
  create(name: string, data: Buffer, labels: Labels): Promise<string>;
  list(labelFilters: string[]): Promise<SecretSummary[]>;
  remove(idOrName: string): Promise<boolean>;
}

export interface NodeSummary {
  id: string;
  hostname: string;
  role: 'manager' | 'worker';
  /** active | pause | drain */
  availability: string;
  /** ready | down | unknown | disconnected */
  state: string;
  addr: string;
  /** The node's labels (set by the operator: `docker node update --label-add`). */
  labels: Labels;
}

export interface NodeClient {
  list(): Promise<NodeSummary[]>;
  /** The manager's `node` events (a node joined, left, changed state, availability or labels); the stream ends when the manager goes away. */
  events(opts: { signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>>;
}

export interface SwarmEngine {
  services: ServiceClient;
  tasks: TaskClient;
  secrets: SecretClient;
  /** Networks through the manager: overlay ones for services (driver `overlay`). */
  networks: NetworkClient;
  nodes: NodeClient;
  /** The swarm's id and this engine's node, or a rejection when the engine is no swarm manager. */
  manager(): Promise<{ swarmId: string; nodeId: string }>;
  readonly address: string;
  abandon(reason: string): void;
}

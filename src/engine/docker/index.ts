/**
 * The Docker engine over dockerode, found as the Docker CLI finds it: DOCKER_HOST
 * (unix://, tcp://, with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH), else the local socket. Every call
 * has a deadline (deadline.ts); an engine that cannot be reached or does not answer in time
 * fails the call with an EngineUnreachableError naming where berth looked.
 */
import { isolationOf } from '../isolation';
import type Dockerode from 'dockerode';
import http from 'node:http';
import https from 'node:https';
import { inspect } from 'node:util';
import { DEFAULTS } from '../../constants';
import { EngineTooOldError, isNotFound } from '../errors';
import { loadDockerode } from './load-dockerode';
import type { Engine } from '../types';
import { DEFAULT_SOCKET, envAddress, modemAddress } from './address';
import { DockerBuilds } from './builds';
import { DockerContainers } from './containers';
import { BoundedCalls } from './deadline';
import { DockerEvents } from './events';
import { DockerImages } from './images';
import { DockerNetworks } from './networks';
import { DockerVolumes } from './volumes';
import { negotiateApi } from './api-version';

/**
 * A plain-HTTP agent with `options`, and an empty TLS server name: Node's agent works one out for
 * every request it is not given one for (`calculateServerName`), testing the host against its
 * IPv6 pattern, whose first use compiles a large regular expression (~6 ms of every CLI command
 * here). A server name is TLS's (SNI); plain HTTP, over a socket file or TCP, never sends it.
 */
export function plainAgent(options: http.AgentOptions): http.Agent {
  // Not in AgentOptions' type, but an agent's options go into each request's, where Node reads it.
  return brief(new http.Agent({ ...options, servername: '' } as http.AgentOptions));
}

/**
 * `agent`, shown by util.inspect as its kind alone. docker-modem inspects each request's options,
 * the agent in them, in full (hidden fields, no depth limit) for a debug line it then drops
 * unless DEBUG names it: an agent's sockets, queues and emitter state are most of that work
 * (~2-10 ms of a CLI pass's four lists here); what a request is stays in the line.
 */
export function brief<A extends http.Agent>(agent: A): A {
  Object.defineProperty(agent, inspect.custom, { value: () => `[${agent.constructor.name}]` });
  return agent;
}

export function dockerFromEnv(env: NodeJS.ProcessEnv = process.env): Dockerode {
  // docker-modem reads DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH itself when given no options.
  const D = loadDockerode();
  if (env.DOCKER_HOST) return new D();
  // Node's global agent's settings (kept-alive connections), in an agent of this client's own.
  const global = (http.globalAgent as http.Agent & { options: http.AgentOptions }).options;
  return new D({ socketPath: DEFAULT_SOCKET, agent: plainAgent(global) } as Dockerode.DockerOptions);
}

/**
 * The same engine through connections that are never kept alive: each call opens its own. A
 * shutting-down dockerd closes its listener first and goes on answering kept-alive connections
 * while it stops its containers (seconds); a new connection tells it is going away.
 */
function unpooled(docker: Dockerode): Dockerode {
  const m = docker.modem as unknown as Record<string, unknown>;
  if (m.protocol === 'ssh') return docker;
  const D = loadDockerode();
  const agent = m.protocol === 'https' ? brief(new https.Agent({ keepAlive: false })) : plainAgent({ keepAlive: false });
  const keep = ['socketPath', 'host', 'port', 'protocol', 'ca', 'cert', 'key', 'version', 'headers'];
  const opts = Object.fromEntries(keep.filter((k) => m[k] !== undefined).map((k) => [k, m[k]]));
  return new D({ ...opts, agent } as Dockerode.DockerOptions);
}

/**
 * Which image store the engine keeps images in: `containerd` (the containerd-snapshotter feature:
 * the engine's info names a snapshotter as its driver type) or `classic` (a graph driver).
 */
export function imageStore(driverStatus: [string, string][] | null | undefined): 'classic' | 'containerd' {
  const type = (driverStatus ?? []).find(([k]) => k === 'driver-type')?.[1] ?? '';
  return type.startsWith('io.containerd.snapshotter') ? 'containerd' : 'classic';
}

/**
 * Puts the API version's negotiation in front of every call `calls` makes over `d` (api-version.ts):
 * the first call asks, as Docker's own clients do, the `API-Version` header of `GET /_ping`
 * (unversioned; `/version` where there is none), then every path carries min(that, the newest
 * berth knows). A client made with a version of its own, or one another engine over the same
 * client negotiated already, keeps it. `on.said`: the engine's /version when it was asked;
 * `on.talks`: the version chosen (`v1.45`).
 */
export function negotiateApiOn(
  d: Dockerode,
  calls: BoundedCalls,
  on: { said?: (v: { version: string; apiVersion: string }) => void; talks?: (version: string) => void } = {},
): void {
  const modem = d.modem as unknown as { version?: string };
  if (modem.version) return;
  calls.gate(async (op) => {
    if (modem.version) return;
    // one negotiation per client: engines made over the same client at once (a swarm's manager
    // serves services and volumes) share the first one's ping
    let shared = negotiating.get(modem);
    if (!shared) {
      shared = negotiate(d, calls, op);
      negotiating.set(modem, shared);
      shared.catch(() => negotiating.delete(modem));
    }
    const { talks, said } = await shared;
    if (said) on.said?.(said);
    modem.version = `v${talks}`;
    on.talks?.(modem.version);
  });
}

/** The negotiation in flight (or done) over a client's modem. */
const negotiating = new WeakMap<object, Promise<{ talks: string; said?: { version: string; apiVersion: string } }>>();

async function negotiate(d: Dockerode, calls: BoundedCalls, op: string): Promise<{ talks: string; said?: { version: string; apiVersion: string } }> {
  let said: { version: string; apiVersion: string } | undefined;
  let api = await calls.run(op, () => pingApiVersion(d), { ungated: true });
  if (!api) {
    const v = await calls.run(op, () => d.version(), { ungated: true });
    said = { version: v.Version, apiVersion: v.ApiVersion };
    api = v.ApiVersion;
  }
  try {
    return { talks: negotiateApi(api, said?.version, calls.address), ...(said ? { said } : {}) };
  } catch (err) {
    // the refusal names the engine's version too, when it says it (asked once more, unversioned)
    if (said || !(err instanceof EngineTooOldError)) throw err;
    const v = await calls.run(op, () => d.version(), { ungated: true }).catch(() => undefined);
    throw v?.Version ? new EngineTooOldError(calls.address, v.Version, api) : err;
  }
}

/** The engine's `API-Version` header of `GET /_ping` (every engine since API 1.25 sends it); undefined without one. */
function pingApiVersion(d: Dockerode): Promise<string | undefined> {
  const m = d.modem as unknown as {
    dial(o: object, cb: (err: unknown, res?: { headers: Record<string, string | string[] | undefined>; resume(): void }) => void): void;
  };
  return new Promise((resolve, reject) => {
    m.dial({ path: '/_ping', method: 'GET', isStream: true, statusCodes: { 200: true, 500: 'server error' } }, (err, res) => {
      if (err || !res) return reject(err instanceof Error ? err : new Error('no answer to /_ping'));
      res.resume();
      const h = res.headers['api-version'];
      resolve(typeof h === 'string' && h ? h : undefined);
    });
  });
}

/** The boot lookup is small; an engine that takes longer is not one to conclude anything from. */
const BOOT_TIMEOUT_MS = 10_000;

export interface DockerEngineOptions {
  /** The budget of one engine call, in ms (DEFAULTS.engineTimeoutMs). */
  timeoutMs?: number;
  env?: NodeJS.ProcessEnv;
}

/** The engine from the environment, or over the given dockerode client. */
export function createDockerEngine(docker?: Dockerode, o: DockerEngineOptions = {}): Engine {
  const env = o.env ?? process.env;
  const d = docker ?? dockerFromEnv(env);
  const calls = new BoundedCalls(d, o.timeoutMs ?? DEFAULTS.engineTimeoutMs, docker ? modemAddress(d) : envAddress(env));
  let fresh: Dockerode | undefined;
  // The API version, negotiated by the first call (api-version.ts); a client made with a version of its own keeps it.
  const modem = d.modem as unknown as { version?: string };
  let said: { version: string; apiVersion: string } | undefined;
  let arch: string | undefined;
  negotiateApiOn(d, calls, {
    said: (v) => (said = v),
    talks: (version) => {
      if (fresh) (fresh.modem as unknown as { version?: string }).version = version;
    },
  });
  const containers = new DockerContainers(d, calls);
  const engine: Engine = {
    async boot() {
      if (!fresh) {
        fresh = unpooled(d);
        calls.attach(fresh);
      }
      const client = fresh;
      try {
        const n = (await calls.run('boot', () => client.getNetwork('bridge').inspect(), { ms: Math.min(BOOT_TIMEOUT_MS, calls.timeoutMs) })) as {
          Id: string;
          Created?: string;
        };
        return n.Created ? { id: n.Id, at: n.Created } : undefined;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    containers,
    networks: new DockerNetworks(d, calls),
    volumes: new DockerVolumes(d, calls),
    images: new DockerImages(d, calls),
    events: new DockerEvents(d, calls),
    address: calls.address,
    async ping() {
      await calls.run('ping', () => d.ping());
    },
    async version() {
      // the negotiation's answer when it was made, else asked now (and the engine's machine with it, once)
      if (!said || arch === undefined) {
        const v = await calls.run('version', () => d.version());
        said = { version: v.Version, apiVersion: v.ApiVersion };
        arch = (v as { Arch?: string }).Arch ?? '';
      }
      return { ...said, talks: (modem.version ?? '').replace(/^v/, '') || said.apiVersion, ...(arch ? { arch } : {}) };
    },
    reach: (id: string) => Promise.resolve({ engine, id, where: calls.address }),
    async isolation() {
      return isolationOf((await calls.run('info', () => d.info())) as Parameters<typeof isolationOf>[0]);
    },
    abandon(reason: string) {
      calls.abandon(reason);
    },
    local: {
      async dataRoot() {
        const info = (await calls.run('info', () => d.info())) as { DockerRootDir?: string };
        const local = typeof (d.modem as unknown as { socketPath?: unknown }).socketPath === 'string';
        return info.DockerRootDir ? { path: info.DockerRootDir, local } : undefined;
      },
      async storage() {
        const i = (await calls.run('storage', () => d.info())) as { Driver?: string; DriverStatus?: [string, string][] | null; DockerRootDir?: string };
        const backing = (i.DriverStatus ?? []).find(([k]) => k === 'Backing Filesystem')?.[1] ?? '';
        return { driver: i.Driver ?? '', backingFs: backing, dataRoot: i.DockerRootDir ?? '', imageStore: imageStore(i.DriverStatus) };
      },
      async diskUsage() {
        const df = (await calls.run('diskUsage', () => d.df())) as {
          Containers?: { Id: string; SizeRw?: number }[] | null;
          Volumes?: { Name: string; UsageData?: { Size?: number } | null }[] | null;
        };
        // -1: the engine did not count it (a volume of another driver)
        const size = (n: number | undefined) => Math.max(0, n ?? 0);
        return {
          layers: new Map((df.Containers ?? []).map((c) => [c.Id, size(c.SizeRw)])),
          volumes: new Map((df.Volumes ?? []).map((v) => [v.Name, size(v.UsageData?.Size)])),
        };
      },
      writableBytes: (id: string) => containers.writableBytes(id),
    },
    remote: null,
    builds: new DockerBuilds(d, calls),
  };
  return engine;
}

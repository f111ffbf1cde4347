/**
 * The Docker engine over dockerode, found as the Docker CLI finds it: DOCKER_HOST
 * (unix://, tcp://, with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH), else the local socket.
 */
import type Dockerode from 'dockerode';
import http from 'node:http';
import https from 'node:https';
import { isNotFound } from '../errors';
import { loadDockerode } from './load-dockerode';
import type { Engine } from '../types';
import { DockerContainers } from './containers';
import { DockerEvents } from './events';
import { DockerImages } from './images';
import { DockerNetworks } from './networks';
import { DockerVolumes } from './volumes';

export function dockerFromEnv(env: NodeJS.ProcessEnv = process.env): Dockerode {
  // docker-modem reads DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH itself when given no options.
  const D = loadDockerode();
  if (env.DOCKER_HOST) return new D();
  return new D({ socketPath: '/var/run/docker.sock' });
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
  const agent = m.protocol === 'https' ? new https.Agent({ keepAlive: false }) : new http.Agent({ keepAlive: false });
  const keep = ['socketPath', 'host', 'port', 'protocol', 'ca', 'cert', 'key', 'version', 'headers'];
  const opts = Object.fromEntries(keep.filter((k) => m[k] !== undefined).map((k) => [k, m[k]]));
  return new D({ ...opts, agent, timeout: BOOT_TIMEOUT_MS } as Dockerode.DockerOptions);
}

/** The boot lookup is small; an engine that takes longer is not one to conclude anything from. */
const BOOT_TIMEOUT_MS = 10_000;

export function createDockerEngine(docker: Dockerode = dockerFromEnv()): Engine {
  let fresh: Dockerode | undefined;
  return {
    async boot() {
      fresh ??= unpooled(docker);
      try {
        const n = (await fresh.getNetwork('bridge').inspect()) as { Id: string; Created?: string };
        return n.Created ? { id: n.Id, at: n.Created } : undefined;
      } catch (err) {
        if (isNotFound(err)) return undefined;
        throw err;
      }
    },
    containers: new DockerContainers(docker),
    networks: new DockerNetworks(docker),
    volumes: new DockerVolumes(docker),
    images: new DockerImages(docker),
    events: new DockerEvents(docker),
    async ping() {
      await docker.ping();
    },
    async version() {
      const v = await docker.version();
      return { version: v.Version, apiVersion: v.ApiVersion };
    },
  };
}

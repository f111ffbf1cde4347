/**
 * The Docker engine over dockerode, found as the Docker CLI finds it: DOCKER_HOST
 * (unix://, tcp://, with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH), else the local socket. Every call
 * has a deadline (deadline.ts); an engine that cannot be reached or does not answer in time
 * fails the call with an EngineUnreachableError naming where berth looked.
 */
import type Dockerode from 'dockerode';
import { DEFAULTS } from '../../constants';
import { loadDockerode } from './load-dockerode';
import type { Engine } from '../types';
import { DEFAULT_SOCKET, envAddress, modemAddress } from './address';
import { DockerContainers } from './containers';
import { BoundedCalls } from './deadline';
import { DockerEvents } from './events';
import { DockerImages } from './images';
import { DockerNetworks } from './networks';
import { DockerVolumes } from './volumes';

export function dockerFromEnv(env: NodeJS.ProcessEnv = process.env): Dockerode {
  // docker-modem reads DOCKER_HOST, DOCKER_TLS_VERIFY and DOCKER_CERT_PATH itself when given no options.
  const D = loadDockerode();
  if (env.DOCKER_HOST) return new D();
  return new D({ socketPath: DEFAULT_SOCKET });
}

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
  return {
    containers: new DockerContainers(d, calls),
    networks: new DockerNetworks(d, calls),
    volumes: new DockerVolumes(d, calls),
    images: new DockerImages(d, calls),
    events: new DockerEvents(d, calls),
    address: calls.address,
    async ping() {
      await calls.run('ping', () => d.ping());
    },
    async version() {
      const v = await calls.run('version', () => d.version());
      return { version: v.Version, apiVersion: v.ApiVersion };
    },
    abandon(reason: string) {
      calls.abandon(reason);
    },
  };
}

/**
 * The Docker engine over dockerode, found as the Docker CLI finds it: DOCKER_HOST
 * (unix://, tcp://, with DOCKER_TLS_VERIFY/DOCKER_CERT_PATH), else the local socket.
 */
import type Dockerode from 'dockerode';
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

export function createDockerEngine(docker: Dockerode = dockerFromEnv()): Engine {
  return {
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

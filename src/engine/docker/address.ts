/**
 * Where berth looks for the engine, for messages: DOCKER_HOST without credentials (user
 * information and query are dropped), or the default socket.
 */
import type Dockerode from 'dockerode';

export const DEFAULT_SOCKET = '/var/run/docker.sock';

/** DOCKER_HOST as it is safe to print: no `user:password@`, no `?query`. */
export function redactHost(value: string): string {
  try {
    const u = new URL(value);
    u.username = '';
    u.password = '';
    u.search = '';
    u.hash = '';
    return u.toString();
  } catch {
    return value.replace(/\/\/[^/@]*@/, '//').replace(/[?#].*$/, '');
  }
}

/** `unix:///x.sock (DOCKER_HOST)` or `unix:///var/run/docker.sock (the default socket)`. */
export function envAddress(env: NodeJS.ProcessEnv): string {
  return env.DOCKER_HOST ? `${redactHost(env.DOCKER_HOST)} (DOCKER_HOST)` : `unix://${DEFAULT_SOCKET} (the default socket)`;
}

/** Where a dockerode client connects, from its modem's settings. */
export function modemAddress(docker: Dockerode): string {
  const m = docker.modem as unknown as { socketPath?: unknown; host?: string; port?: number | string; protocol?: string };
  if (typeof m.socketPath === 'string') return `unix://${m.socketPath}`;
  if (m.host) return `${m.protocol ?? 'http'}://${m.host}${m.port ? `:${m.port}` : ''}`;
  return 'an engine with no address';
}

/**
 * Image references as a registry sees them: which registry a reference names (the first
 * component when it has a `.` or a `:` or is `localhost`, else Docker Hub), and the repository
 * a digest pins. Pure.
 */

/** The key of Docker Hub's credential in a docker config file (and its server address for the engine). */
export const DOCKER_HUB_AUTH_KEY = 'https://index.docker.io/v1/';

/** The registry host of `ref` (`host[:port]`), `docker.io` for Docker Hub. */
export function registryOf(ref: string): string {
  const slash = ref.indexOf('/');
  if (slash < 0) return 'docker.io';
  const first = ref.slice(0, slash);
  if (first.includes('.') || first.includes(':') || first === 'localhost') return first === 'index.docker.io' ? 'docker.io' : first;
  return 'docker.io';
}

/** `ref` without its tag or digest: the repository (`host:port/evals/python`). */
export function repositoryOf(ref: string): string {
  const at = ref.indexOf('@');
  const name = at >= 0 ? ref.slice(0, at) : ref;
  const slash = name.lastIndexOf('/');
  const colon = name.lastIndexOf(':');
  return colon > slash ? name.slice(0, colon) : name;
}

/** Whether `ref` names its image by digest (`name@sha256:…`). */
export function isDigestRef(ref: string): boolean {
  return /@sha256:[0-9a-f]{64}$/.test(ref);
}

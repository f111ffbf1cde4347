/**
 * Where the registry credentials are read from, apart from their reader (credentials.ts, which
 * loads child_process for credential helpers): every command's context names the file, and a
 * command that reads no credential must not load that (start-up, issue 55).
 */
import os from 'node:os';
import path from 'node:path';

/** The config file berth reads credentials from, as the docker CLI finds it. */
export function registryConfigPath(env: NodeJS.ProcessEnv, flag?: string): string {
  if (flag) return path.resolve(flag);
  if (env.BERTH_REGISTRY_CONFIG) return path.resolve(env.BERTH_REGISTRY_CONFIG);
  const dir = env.DOCKER_CONFIG ? path.resolve(env.DOCKER_CONFIG) : path.join(env.HOME ?? os.homedir(), '.docker');
  return path.join(dir, 'config.json');
}

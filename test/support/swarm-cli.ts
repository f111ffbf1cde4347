/** The sandbox's CLI with `--backend swarm` against a test swarm's manager (DOCKER_HOST for the call). */
import type { CliResult, Sandbox } from './sandbox';
import type { TestSwarm } from './swarm';

export async function swarmCli(sb: Sandbox, s: TestSwarm, ...args: string[]): Promise<CliResult> {
  const before = process.env.DOCKER_HOST;
  process.env.DOCKER_HOST = s.manager.address;
  try {
    return await sb.cli(...args, '--backend', 'swarm');
  } finally {
    if (before === undefined) delete process.env.DOCKER_HOST;
    else process.env.DOCKER_HOST = before;
  }
}

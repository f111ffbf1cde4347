/** Test swarm helpers: the sandbox's CLI with `--backend swarm` against a test swarm's manager (DOCKER_HOST for the call), and what an instance left
 * on the swarm. */
import { expect } from 'chai';
import { LABELS } from '../../src/constants';
import type { CliResult, Sandbox } from './sandbox';
import type { TestSwarm } from './swarm';
import { waitFor } from './wait';

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

/** What an instance left on a test swarm: services, secrets (manager); networks, containers, volumes (each node). */
export async function swarmLeftovers(s: TestSwarm, instance: string): Promise<string[]> {
  const f = JSON.stringify({ label: [`${LABELS.instance}=${instance}`] });
  const out: string[] = [];
  const m = s.manager.docker;
  out.push(...((await m.listServices({ filters: f } as object)) as { Spec: { Name: string } }[]).map((x) => `service ${x.Spec.Name}`));
  out.push(...(await m.listSecrets({ filters: f } as object)).map((x) => `secret ${x.Spec?.Name}`));
  for (const n of s.nodes) {
    out.push(...(await n.docker.listNetworks({ filters: f })).map((x) => `node ${n.index} network ${x.Name}`));
    out.push(...(await n.docker.listContainers({ all: true, filters: f })).map((x) => `node ${n.index} container ${x.Names[0]}`));
    out.push(...((await n.docker.listVolumes({ filters: f })).Volumes ?? []).map((x) => `node ${n.index} volume ${x.Name}`));
  }
  return out;
}

/** Nothing of the instance left on the swarm; a node drops its copy of a removed overlay in its own time (bounded: 20 s). */
export async function nothingLeftOnSwarm(s: TestSwarm, instance: string): Promise<void> {
  let left: string[] = [];
  await waitFor(
    'nothing of the instance left on the swarm',
    async () => {
      left = await swarmLeftovers(s, instance);
      return left.length === 0;
    },
    { timeoutMs: 20_000 },
  ).catch(() => undefined);
  expect(left).to.deep.equal([]);
}

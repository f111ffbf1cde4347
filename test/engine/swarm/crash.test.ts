/**
 * berth SIGKILLed at arbitrary points of provisioning on a real two-node swarm, then run again:
 * no run is ever started twice (one service per attempt, one task per service, one container
 * start per attempt over both nodes), nothing half-made leaks (volumes, prepared containers,
 * secrets, a hardening probe's service), every attempt ends up running once, and `clean`
 * leaves nothing of the instance on the manager or either node.
 * Runs the built CLI (dist/) as a child process; `make test` builds it first.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import path from 'node:path';
import type Dockerode from 'dockerode';
import { LABELS, SWARM } from '../../../src/constants';
import { Sandbox } from '../../support/sandbox';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { waitFor } from '../../support/wait';

const BIN = path.resolve(__dirname, '..', '..', '..', 'bin', 'berth.js');
const VAR = 'BERTH_TEST_SWARM_CRASH_SECRET';

function berth(sb: Sandbox, s: TestSwarm, args: string[], killAfterMs?: number): Promise<number | null> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args, ...sb.globalArgs(), '--backend', 'swarm'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, DOCKER_HOST: s.manager.address, [VAR]: `v-${sb.instance}` },
    });
    let err = '';
    child.stderr.on('data', (c) => (err += String(c)));
    let timer: NodeJS.Timeout | undefined;
    if (killAfterMs !== undefined) timer = setTimeout(() => child.kill('SIGKILL'), killAfterMs);
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (signal === 'SIGKILL' || code === 0) resolve(code);
      else reject(new Error(`berth ${args.join(' ')} exited ${code}: ${err}`));
    });
  });
}

/** An engine's past events of one type and action since `since` (seconds), as their actors' attributes. */
async function pastEvents(d: Dockerode, since: number, type: string, action: string, label?: string): Promise<Record<string, string>[]> {
  const stream = (await d.getEvents({
    since,
    until: (Date.now() / 1000).toFixed(3),
    filters: { type: [type], event: [action], ...(label ? { label: [label] } : {}) },
  } as never)) as unknown as NodeJS.ReadableStream;
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => (JSON.parse(l) as { Actor: { Attributes: Record<string, string> } }).Actor.Attributes);
}

const count = (xs: string[]) => xs.reduce((m, x) => m.set(x, (m.get(x) ?? 0) + 1), new Map<string, number>());

describe('crash safety on a real two-node swarm (SIGKILL mid-provisioning)', function () {
  this.timeout(300_000);
  let s: TestSwarm;
  let sb: Sandbox;

  before(async () => {
    s = await twoNodeSwarm();
    sb = await Sandbox.create('sw-crash');
  });

  it('never starts a run twice and leaks nothing when berth is killed between provisioning steps', async () => {
    await sb.write('fixtures/f/in.txt', 'input\n');
    const names = ['c1', 'c2', 'c3', 'c4'];
    for (const n of names) {
      await sb.write(
        `${n}.yaml`,
        sb.attempt(n, 'cat in.txt /run/secrets/token && sleep 300', `  fixture: ./fixtures/f\n  secrets:\n    - {name: token, fromEnv: ${VAR}}\n`),
      );
    }
    const since = Math.floor(Date.now() / 1000) - 1;
    const own = `${LABELS.instance}=${sb.instance}`;
    try {
      // Kill at spread-out moments: during load, the nodes' probes, volume and container creates,
      // the copies, the secrets, the services' creates, status writes.
      let killed = 0;
      for (const ms of [300, 600, 900, 1200, 1500, 1800, 2200, 2600, 3000, 3500, 4000, 5000]) {
        if ((await berth(sb, s, ['reconcile', '--once'], ms)) === null) killed++;
      }
      // The first kills (0.3-0.9 s) always land mid-way (a pass on the swarm probes its nodes first);
      // how many later ones do depends on the machine's speed: on a quiet one berth finishes sooner.
      expect(killed, 'at least some runs were killed mid-way').to.be.at.least(3);
      expect(await berth(sb, s, ['reconcile', '--once'])).to.equal(0);
      expect(await berth(sb, s, ['reconcile', '--once'])).to.equal(0);

      const m = s.manager.docker;
      const services = (await m.listServices({ filters: JSON.stringify({ label: [own] }) } as never)) as unknown as {
        ID: string;
        Spec: { Name: string; Labels: Record<string, string> };
      }[];
      const byAttempt = count(services.map((x) => x.Spec.Labels[LABELS.attempt] ?? ''));
      for (const n of names) expect(byAttempt.get(n) ?? 0, `services of ${n}`).to.equal(1);
      // No second service was ever made (and removed) for a run: one service create per run name.
      const runNames = new Set(services.map((x) => x.Spec.Name));
      const creates = count(
        (await pastEvents(m, since, 'service', 'create')).map((a) => a.name ?? '').filter((n) => runNames.has(n) || n.includes(sb.instance)),
      );
      for (const x of services) expect(creates.get(x.Spec.Name) ?? 0, `creates of service ${x.Spec.Name}`).to.equal(1);
      expect([...creates.keys()].sort()).to.deep.equal([...runNames].sort());
      // One task per service, and one container start per attempt over both nodes.
      for (const x of services) {
        const states = async () =>
          ((await m.listTasks({ filters: JSON.stringify({ service: [x.ID] }) })) as { Status: { State: string } }[]).map((t) => t.Status.State);
        await waitFor(`the task of ${x.Spec.Name} to run`, async () => (await states()).includes('running'), { timeoutMs: 30_000 });
        expect(await states(), `tasks of ${x.Spec.Name}`).to.deep.equal(['running']);
      }
      const starts = count(
        (await Promise.all(s.nodes.map((n) => pastEvents(n.docker, since, 'container', 'start', own)))).flat().map((a) => a[LABELS.attempt] ?? ''),
      );
      for (const n of names) expect(starts.get(n) ?? 0, `container starts of ${n}`).to.equal(1);
      expect(starts.size, [...starts.keys()].join(',')).to.equal(names.length);

      // Nothing half-made is left: per attempt, on its node, two volumes and two containers (the
      // prepared one and the task's), one secret on the manager; no probe service at all.
      for (const n of names) {
        const f = JSON.stringify({ label: [own, `${LABELS.attempt}=${n}`] });
        const vols = (
          await Promise.all(s.nodes.map(async (x) => ((await x.docker.listVolumes({ filters: f })).Volumes ?? []).map((v) => `${x.index}:${v.Name}`)))
        ).flat();
        const ctrs = (
          await Promise.all(
            s.nodes.map(async (x) => (await x.docker.listContainers({ all: true, filters: f })).map((c) => `${x.index}:${c.Names[0]}:${c.State}`)),
          )
        ).flat();
        expect(vols, `volumes of ${n}`).to.have.length(2);
        expect(ctrs, `containers of ${n}`).to.have.length(2);
        expect(new Set([...vols, ...ctrs].map((x) => x.split(':')[0])).size, `${n} on one node`).to.equal(1);
        expect(await m.listSecrets({ filters: JSON.stringify({ label: [own, `${LABELS.attempt}=${n}`] }) } as never), `secrets of ${n}`).to.have.length(1);
        const st = await sb.status(n);
        expect([st?.phase, st?.intent], n).to.deep.equal(['Running', undefined]);
      }
      const probes = (await m.listServices({ filters: JSON.stringify({ label: [SWARM.probeLabel] }) } as never)) as unknown as { Spec: { Name: string } }[];
      expect(
        probes.map((x) => x.Spec.Name),
        'probe services',
      ).to.deep.equal([]);
    } finally {
      expect(await berth(sb, s, ['clean'])).to.equal(0);
      await sb.dispose();
    }
    // clean leaves nothing of the instance anywhere
    const f = JSON.stringify({ label: [own] });
    const left = [
      ...((await s.manager.docker.listServices({ filters: f } as never)) as unknown as unknown[]).map(() => 'service'),
      ...((await s.manager.docker.listSecrets({ filters: f } as never)) as unknown as unknown[]).map(() => 'secret'),
      ...(
        await Promise.all(
          s.nodes.map(async (x) => [
            ...((await x.docker.listVolumes({ filters: f })).Volumes ?? []).map((v) => `volume ${v.Name}`),
            ...(await x.docker.listContainers({ all: true, filters: f })).map((c) => `container ${c.Names[0]}`),
          ]),
        )
      ).flat(),
    ];
    expect(left).to.deep.equal([]);
  });
});

/**
 * An attempt's volumes and its own sidecars on a real two-node swarm (test/support/swarm.ts),
 * placed on the worker (the manager drained):
 *  - a volume is made on the node of the attempt's first run, through that node's engine, with
 *    berth's labels (and recorded on the manager); the retry sees what the first run wrote;
 *    a later run goes only to that node: Blocked (NodeRefused, naming it) while it is drained,
 *    and run there once it is back, seeing the same data; clean removes it on the worker;
 *    the node lost mid-run: Lost, the retry Blocked, clean refused until the node is back;
 *    a no-op pass makes no request per attempt;
 *  - a sidecar runs as a run of its own on the attempt's node and internal overlay, ready before
 *    the attempt starts, reached from it by its name, given its secret (the attempt is not), its
 *    logs harvested;
 * nothing of either is left after clean.
 */
import dc from 'node:diagnostics_channel';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import Dockerode from 'dockerode';
import { createSwarmBackend } from '../../../src/backend/swarm';
import { reconcilePass } from '../../../src/controller/pass';
import { changeCount } from '../../../src/plan/render';
import { StatusStore } from '../../../src/status/store';
import { silentLogger } from '../../../src/util/log';
import { COMPONENTS, LABELS, NAMING, SWARM } from '../../../src/constants';
import { createSwarmEngine } from '../../../src/engine/swarm';
import { BLOCKED_RETRY_MS } from '../../../src/plan/planner';
import { Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm, swarmCli } from '../../support/swarm-cli';
import { waitFor } from '../../support/wait';
import { TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { thenTearDown } from '../../support/teardown';

async function volumesOn(n: TestSwarm['manager'], instance: string): Promise<{ Name: string; Labels: Record<string, string> | null }[]> {
  const f = JSON.stringify({ label: [`${LABELS.instance}=${instance}`, `${LABELS.component}=${COMPONENTS.volume}`] });
  return ((await n.docker.listVolumes({ filters: f })).Volumes ?? []) as { Name: string; Labels: Record<string, string> | null }[];
}

/**
 * The instance's sidecars once `reconcile --once --wait` has returned. Each was stopped through
 * its node's engine before its attempt finished (so none of their containers runs there), but the
 * manager hears of a task's end only when that node reports it, a moment later, and a pass reads
 * the tasks from the manager: until then it finds the sidecar running and stops it again. Waited
 * for (polled, bounded) until the runs a pass lists are the `count` sidecars, all ended.
 */
async function sidecarsEnded(s: TestSwarm, sb: Sandbox, count: number): Promise<void> {
  const own = [`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=${COMPONENTS.sidecar}`];
  // the tasks' containers (not the prepared ones), as their nodes' engines have them
  const states: string[] = [];
  for (const n of [s.manager, ...s.workers])
    for (const c of await n.docker.listContainers({ all: true, filters: JSON.stringify({ label: [...own, SWARM.serviceIdLabel] }) })) states.push(c.State);
  expect(states, "the sidecars' containers on their nodes, stopped before the attempts finished").to.deep.equal(Array<string>(count).fill('exited'));
  const backend = createSwarmBackend({ docker: new Dockerode({ socketPath: s.manager.socket }), env: { ...process.env, DOCKER_HOST: s.manager.address } });
  let seen: string[] = [];
  await waitFor(
    `the manager to have the tasks of ${count} sidecars ended`,
    async () => {
      const runs = (await backend.containers.list(own)).filter((c) => c.placement?.service !== undefined);
      seen = runs.map((c) => `${c.name}: ${c.state} (${c.status})`);
      return runs.length === count && runs.every((c) => c.state === 'exited');
    },
    { timeoutMs: 20_000 },
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}; the sidecars a pass lists: ${seen.join(', ')}`);
  });
}

/** The HTTP requests (to the manager and the nodes) of one in-process pass with a fresh backend, as a CLI pass has; it must change nothing. */
async function noopRequests(s: TestSwarm, sb: Sandbox): Promise<number> {
  const env = { ...process.env, DOCKER_HOST: s.manager.address };
  const cfg = {
    specsDir: sb.specsDir,
    stateDir: sb.stateDir,
    resultsRoot: sb.resultsRoot,
    instance: sb.instance,
    maxRunning: 50,
    concurrency: 8,
    attestIntervalMs: 60_000,
    policy: {},
    env,
    log: silentLogger(),
  };
  const pass = async () => {
    const backend = createSwarmBackend({ docker: new Dockerode({ socketPath: s.manager.socket }), env });
    let n = 0;
    const on = () => n++;
    dc.subscribe('http.client.request.start', on);
    try {
      const r = await reconcilePass(cfg, backend, new StatusStore(sb.stateDir, sb.instance));
      expect(changeCount(r.plan), 'a no-op pass').to.equal(0);
    } finally {
      dc.unsubscribe('http.client.request.start', on);
    }
    return n;
  };
  await pass(); // warm-up: module load, schema compile
  return pass();
}

/** The first run writes its mark into the volume and fails; a run that finds the mark reports it and succeeds. */
const MARKS = 'if [ -f /data/mark ]; then cat /data/mark > /results/seen.txt; echo $$ >> /data/runs; exit 0; fi; echo first-run > /data/mark; exit 1';

describe('--backend swarm: volumes and sidecars on a real two-node swarm', function () {
  this.timeout(300_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it("keeps an attempt's volume on the worker its first run went to: the retry and a rerun see its data there, clean removes it", async () => {
    const sb = await Sandbox.create('sw-vol');
    const worker = s.workers[0]!;
    const vol = NAMING.volume(sb.instance, 'v', 'data');
    await s.availability(s.manager, 'drain');
    try {
      await sb.write('v.yaml', sb.attempt('v', MARKS, '  retries: 1\n  volumes:\n    - {name: data, mountPath: /data}\n'));
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150', '--retry-backoff', '1');
      let st = await sb.status('v');
      expect([st?.phase, st?.run, st?.retriesUsed], r.stderr + JSON.stringify(st)).to.deep.equal(['Succeeded', 2, 1]);
      expect(st?.history.map((h) => [h.run, h.phase, h.exitCode])).to.deep.equal([[1, 'Failed', 1]]);
      expect(await fs.readFile(path.join(st!.resultsDir!, 'seen.txt'), 'utf8')).to.equal('first-run\n');
      expect(st?.containerId, 'the retry ran on the worker').to.match(new RegExp(`@${worker.id}$`));
      // attested: the volume mounted where the spec says, in the task's container on the worker
      const mounts = st?.lastAttestation?.checks.find((c) => c.name === 'mounts');
      expect([st?.lastAttestation?.ok, mounts?.ok, mounts?.detail], JSON.stringify(st?.lastAttestation)).to.deep.equal([
        true,
        true,
        `results folder is the only bind mount; volumes ${vol}:/data`,
      ]);
      // made on the worker through its engine, with berth's labels; the manager holds its record (no data)
      const onWorker = await volumesOn(worker, sb.instance);
      expect(onWorker.map((v) => [v.Name, v.Labels?.[LABELS.volume], v.Labels?.[LABELS.attempt], v.Labels?.[SWARM.volumeNodeLabel]])).to.deep.equal([
        [vol, 'data', 'v', worker.id],
      ]);
      expect((await volumesOn(s.manager, sb.instance)).map((v) => [v.Name, v.Labels?.[SWARM.volumeNodeLabel]])).to.deep.equal([[vol, worker.id]]);

      // the worker may not run it now, the manager may: a rerun is refused, never run on empty volumes
      await s.availability(s.manager, 'active');
      await s.availability(worker, 'drain');
      const rr = await swarmCli(sb, s, 'rerun', 'v');
      expect(rr.code, rr.stderr).to.equal(0);
      await swarmCli(sb, s, 'reconcile', '--once');
      st = await sb.status('v');
      expect([st?.phase, st?.reason], JSON.stringify(st)).to.deep.equal(['Blocked', 'NodeRefused']);
      expect(st?.message).to.match(/^attempt v keeps its volumes \(data\) on swarm node /);
      expect(st?.message).to.contain(
        `(${worker.id.slice(0, 12)}) is drain; its runs go only there (anywhere else its volumes would be new and empty), so it waits for that node`,
      );
      expect(await createSwarmEngine(s.manager.docker).services.list([`${LABELS.instance}=${sb.instance}`, `${LABELS.run}=3`])).to.deep.equal([]);

      // the worker is back: once berth looks at the Blocked attempt again, its run goes there
      // (not to the idle manager) and sees the same data
      await s.availability(worker, 'active');
      const blockedAt = Date.parse(st!.updatedAt);
      await waitFor('berth to look at the Blocked attempt again', async () => Date.now() > blockedAt + BLOCKED_RETRY_MS, {
        timeoutMs: BLOCKED_RETRY_MS + 5_000,
      });
      const again = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150');
      st = await sb.status('v');
      expect([st?.phase, st?.run], again.stderr + JSON.stringify(st)).to.deep.equal(['Succeeded', 3]);
      expect(st?.containerId).to.match(new RegExp(`@${worker.id}$`));
      expect(await fs.readFile(path.join(st!.resultsDir!, 'seen.txt'), 'utf8')).to.equal('first-run\n');
    } finally {
      await s.availability(s.manager, 'active');
      await s.availability(worker, 'active');
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr + c.stdout).to.equal(0);
      await sb.dispose();
    }
    expect(await volumesOn(worker, sb.instance), 'the volume is gone from the worker').to.deep.equal([]);
    expect(await volumesOn(s.manager, sb.instance), 'and its record from the manager').to.deep.equal([]);
    await nothingLeftOnSwarm(s, sb.instance);
  });

  it("the volume's node lost mid-run: the run ends Lost, its retry is Blocked (never run on the manager on an empty volume), clean waits for the node", async () => {
    const sb = await Sandbox.create('sw-vlost');
    const worker = s.workers[0]!;
    const vol = NAMING.volume(sb.instance, 'l', 'data');
    await s.availability(s.manager, 'drain');
    let drained = true;
    let down = false;
    await thenTearDown(
      async () => {
        await sb.write(
          'l.yaml',
          sb.attempt(
            'l',
            'test -f /data/mark && exit 0; echo first > /data/mark; sleep 60',
            '  retries: 1\n  volumes:\n    - {name: data, mountPath: /data}\n',
          ),
        );
        const reconcile = swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150', '--retry-backoff', '1');
        await waitFor('the run to be Running on the worker', async () => (await sb.status('l'))?.phase === 'Running', {
          dirs: [sb.stateDir],
          timeoutMs: 60_000,
        });
        await s.availability(s.manager, 'active');
        drained = false;
        await worker.kill();
        down = true;
        const r = await reconcile;
        const st = await sb.status('l');
        expect([st?.phase, st?.reason, st?.run], r.stderr + JSON.stringify(st)).to.deep.equal(['Blocked', 'NodeRefused', 2]);
        expect(st?.history.map((h) => [h.run, h.phase, h.reason])).to.deep.equal([[1, 'Failed', 'Lost']]);
        expect(st?.message).to.contain(`attempt l keeps its volumes (data) on swarm node `);
        expect(st?.message).to.contain(`(${worker.id.slice(0, 12)}) is down; its runs go only there`);
        // the manager, ready and idle, got nothing
        expect(
          await s.manager.docker.listContainers({
            all: true,
            filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=${COMPONENTS.main}`] }),
          }),
        ).to.deep.equal([]);
        // clean while the node is down: the volume (and its record) stay, and clean says why
        const c = await swarmCli(sb, s, 'clean');
        expect(c.code, c.stdout).to.equal(1);
        expect(c.stderr).to.contain(`berth: volume: volume ${vol} is on swarm node `);
        expect(c.stderr).to.contain(`(${worker.id.slice(0, 12)}), which is down: it is removed once that node is back`);
        expect((await volumesOn(s.manager, sb.instance)).map((v) => v.Name)).to.deep.equal([vol]);
      },
      async () => {
        if (drained) await s.availability(s.manager, 'active');
        // started again once the manager has it down (test/support/swarm.ts), and ready
        const back = down
          ? await s.startAgain(worker).then(
              () => undefined,
              (err: unknown) => err as Error,
            )
          : undefined;
        // the node is back: clean removes the volume there, and what the lost run left
        const c = await swarmCli(sb, s, 'clean');
        await sb.dispose();
        if (back) throw back;
        expect(c.code, c.stderr + c.stdout).to.equal(0);
      },
    );
    expect(await volumesOn(worker, sb.instance)).to.deep.equal([]);
    await nothingLeftOnSwarm(s, sb.instance);
  });

  it('a no-op pass over finished attempts with volumes and sidecars makes a constant number of requests', async () => {
    const sb = await Sandbox.create('sw-vnoop');
    const spec = (name: string) =>
      sb.attempt(
        name,
        'echo x > /data/x',
        '  network: {mode: isolated}\n  volumes:\n    - {name: data, mountPath: /data}\n  sidecars:\n    - {name: aux, image: berth/busybox:local, command: [sleep, "600"]}\n',
      );
    try {
      await sb.write('a1.yaml', spec('a1'));
      let r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150');
      expect(r.code, r.stderr).to.equal(0);
      await sidecarsEnded(s, sb, 1);
      const one = await noopRequests(s, sb);
      for (const n of ['a2', 'a3', 'a4']) await sb.write(`${n}.yaml`, spec(n));
      r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150');
      expect(r.code, r.stderr).to.equal(0);
      await sidecarsEnded(s, sb, 4);
      const four = await noopRequests(s, sb);
      // no request per attempt, and none more than over plain attempts (14 on two nodes: nodes 1,
      // services 2, tasks 1, the nodes' containers 2 and volumes 2, the manager's networks 1 (one
      // list serves the pass: networks.ts sharedNetworkList), volumes 1 and images 1; and the API
      // version's negotiation, one /_ping per client of an engine (a fresh backend, as a CLI pass
      // has): the manager's, and each node's (the manager's node too, over a client of its own))
      expect(four, `${one} requests over one attempt`).to.equal(one);
      expect(one).to.be.at.most(14);
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr + c.stdout).to.equal(0);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });

  it("runs users' sidecars as runs of their own on the attempt's node and network: reached by name, one given its secret, their logs harvested", async () => {
    const sb = await Sandbox.create('sw-side');
    const worker = s.workers[0]!;
    const VAR = 'BERTH_TEST_SWARM_SIDECAR_TOKEN';
    process.env[VAR] = `token-${sb.instance}`;
    const sw = createSwarmEngine(s.manager.docker);
    await s.availability(s.manager, 'drain');
    try {
      // tools serves its secret (the token-injecting pattern); plain serves a page of its own
      const serve = (name: string, page: string) => `echo ${name}-up; mkdir -p /tmp/w && ${page} > /tmp/w/index.html && exec httpd -f -p 8081 -h /tmp/w`;
      const main =
        'wget -Y off -q -O /results/tools.txt http://tools:8081/ || exit 7; wget -Y off -q -O /results/plain.txt http://plain:8081/ || exit 8; test ! -e /run/secrets/token || exit 9';
      await sb.write(
        'c.yaml',
        sb.attempt(
          'c',
          main,
          [
            '  network: {mode: isolated}',
            `  secrets:\n    - {name: token, fromEnv: ${VAR}}`,
            '  sidecars:',
            `    - {name: tools, image: berth/busybox:local, secrets: [token], command: [sh, -c, ${JSON.stringify(serve('tools', 'cat /run/secrets/token'))}]}`,
            `    - {name: plain, image: berth/busybox:local, command: [sh, -c, ${JSON.stringify(serve('plain', 'echo plain-body'))}]}`,
            '',
          ].join('\n'),
        ),
      );
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150');
      const st = await sb.status('c');
      expect([st?.phase, st?.exitCode], r.stderr + JSON.stringify(st)).to.deep.equal(['Succeeded', 0]);
      const res = (f: string) => fs.readFile(path.join(st!.resultsDir!, f), 'utf8');
      expect(await res('tools.txt')).to.equal(`token-${sb.instance}`);
      expect(await res('plain.txt')).to.equal('plain-body\n');
      expect(st?.containerId, 'the attempt ran on the worker').to.match(new RegExp(`@${worker.id}$`));
      expect(st?.lastAttestation?.ok, JSON.stringify(st?.lastAttestation)).to.equal(true);
      // both sidecars' logs, harvested through their services
      const logs = path.join(path.dirname(st!.resultsDir!), 'sidecars');
      expect(await fs.readFile(path.join(logs, 'tools.log'), 'utf8')).to.contain('tools-up');
      expect(await fs.readFile(path.join(logs, 'plain.log'), 'utf8')).to.contain('plain-up');
      // the one given a secret left with its secret right after the harvest; the other is kept
      // with the attempt: a service of its own, pinned to the worker, on the internal overlay only
      const sides = await sw.services.list([`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=${COMPONENTS.sidecar}`]);
      expect(sides.map((x) => x.name)).to.deep.equal([NAMING.sidecar(sb.instance, 'c', 'plain')]);
      expect(await sw.secrets.list([`${LABELS.instance}=${sb.instance}`])).to.deep.equal([]);
      const net = await sw.networks.inspect(NAMING.network(sb.instance, 'c'));
      expect([sides[0]?.nodeId, sides[0]?.networks, net.internal]).to.deep.equal([worker.id, [net.id], true]);
    } finally {
      delete process.env[VAR];
      await s.availability(s.manager, 'active');
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr + c.stdout).to.equal(0);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });
});

/**
 * What a killed berth leaves on a swarm is found by its labels and removed: a hardening probe's
 * service whose berth is gone (one under way is kept), and a run left half-made (its volumes on
 * a node, no prepared container, no service), and a run's own `none` overlay left after the rest
 * of its run went, by the pass's GC and by `clean`.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { hostname } from 'node:os';
import { LABELS, SWARM } from '../../../src/constants';
import { createSwarmEngine } from '../../../src/engine/swarm';
import { TEST_IMAGE, TEST_LABEL, TEST_RUN } from '../../support/engine';
import { Sandbox } from '../../support/sandbox';
import { swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';

/** The pid of a process that has ended. */
function deadPid(): Promise<number> {
  return new Promise((resolve, reject) => {
    const p = spawn('true');
    p.on('error', reject);
    p.on('exit', () => resolve(p.pid as number));
  });
}

describe('leftovers of a killed berth on a real two-node swarm', function () {
  this.timeout(180_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it('removes a probe service whose berth is gone, and keeps one whose berth runs', async () => {
    const sw = createSwarmEngine(s.manager.docker);
    const worker = s.workers[0]!;
    const probe = (owner: string, tag: string) =>
      sw.services.create({
        name: `berth-probe-${TEST_RUN}-${tag}`,
        labels: { [TEST_LABEL]: TEST_RUN, [LABELS.managed]: 'true', [SWARM.probeLabel]: worker.id, [SWARM.probeOwnerLabel]: owner },
        containerLabels: { [TEST_LABEL]: TEST_RUN },
        image: TEST_IMAGE,
        cmd: ['sleep', '300'],
        env: [],
        workingDir: '/',
        nodeId: worker.id,
        networks: [],
        mounts: [],
        secrets: [],
        capDrop: ['ALL'],
        capAdd: [],
        init: false,
        readonlyRootfs: true,
      });
    const gone = await probe(`${hostname()}/${await deadPid()}`, 'gone');
    // this process runs the CLI below: its own probe is one under way
    const live = await probe(`${hostname()}/${process.pid}`, 'live');
    const sb = await Sandbox.create('sw-probe-gc');
    try {
      await sb.write('a.yaml', sb.attempt('a', 'true'));
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '120');
      expect(r.code, r.stderr).to.equal(0);
      const left = (await sw.services.list([TEST_LABEL])).map((x) => x.id);
      expect(left).to.include(live);
      expect(left).not.to.include(gone);
    } finally {
      await sw.services.remove(live);
      await sw.services.remove(gone);
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
  });

  for (const how of ['reconcile', 'clean'] as const) {
    it(`a run left half-made (volumes on the worker, nothing else) is removed by ${how}`, async () => {
      const sb = await Sandbox.create(`sw-half-${how}`);
      const worker = s.workers[0]!;
      const run = `berth-${sb.instance}-ghost`;
      const labels = { [LABELS.managed]: 'true', [LABELS.instance]: sb.instance, [LABELS.attempt]: 'ghost', [LABELS.run]: '1', [SWARM.runLabel]: run };
      for (const v of [`${run}-ws`, `${run}-results`]) await worker.docker.createVolume({ Name: v, Labels: labels });
      const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] });
      try {
        await sb.write('keep.yaml', sb.attempt('keep', 'true'));
        const r = await swarmCli(sb, s, how === 'clean' ? 'clean' : 'reconcile', ...(how === 'clean' ? [] : ['--once', '--wait', '--timeout', '120']));
        expect(r.code, r.stderr + r.stdout).to.equal(0);
        const vols = ((await worker.docker.listVolumes({ filters: f })).Volumes ?? []).map((v) => v.Name);
        expect(vols.filter((v) => v.startsWith(run))).to.deep.equal([]);
      } finally {
        const c = await swarmCli(sb, s, 'clean');
        expect(c.code, c.stderr).to.equal(0);
        await sb.dispose();
      }
      expect((await worker.docker.listVolumes({ filters: f })).Volumes ?? []).to.deep.equal([]);
    });

    it(`a run's own none overlay left after the rest of its run was gone is removed by ${how}`, async () => {
      const sb = await Sandbox.create(`sw-none-${how}`);
      const run = `berth-${sb.instance}-ghost`;
      const labels = { [LABELS.managed]: 'true', [LABELS.instance]: sb.instance, [LABELS.attempt]: 'ghost', [LABELS.run]: '1', [SWARM.runLabel]: run };
      // as start() makes it (runs.ts), and a removal that failed after the service and the node's parts went
      await s.manager.docker.createNetwork({ Name: `${run}-none`, Driver: 'overlay', Internal: true, Attachable: false, Labels: labels, CheckDuplicate: true });
      // one that is not this instance's, with the same shape, is left alone
      const other = { ...labels, [LABELS.instance]: `${sb.instance}-other`, [SWARM.runLabel]: `${run}x` };
      const foreign = await s.manager.docker.createNetwork({
        Name: `${run}x-none`,
        Driver: 'overlay',
        Internal: true,
        Attachable: false,
        Labels: other,
        CheckDuplicate: true,
      });
      const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] });
      try {
        await sb.write('keep.yaml', sb.attempt('keep', 'true'));
        const r = await swarmCli(sb, s, how === 'clean' ? 'clean' : 'reconcile', ...(how === 'clean' ? [] : ['--once', '--wait', '--timeout', '120']));
        expect(r.code, r.stderr + r.stdout).to.equal(0);
        const nets = (await s.manager.docker.listNetworks({ filters: f })).map((n) => n.Name);
        expect(nets.filter((n) => n.startsWith(run))).to.deep.equal([]);
        expect((await s.manager.docker.getNetwork(foreign.id).inspect()).Name).to.equal(`${run}x-none`);
      } finally {
        await s.manager.docker.getNetwork(foreign.id).remove();
        const c = await swarmCli(sb, s, 'clean');
        expect(c.code, c.stderr).to.equal(0);
        await sb.dispose();
      }
      expect(await s.manager.docker.listNetworks({ filters: f })).to.deep.equal([]);
    });
  }
});

/**
 * A network connect before a run's start is durable: one berth process creates a proxy's run and
 * connects it to its egress network, and another (a berth restarted after a kill between the two)
 * starts it: the service is made on both networks, not on its first alone.
 */
import { expect } from 'chai';
import { createSwarmBackend } from '../../../src/backend/swarm';
import { COMPONENTS, LABELS, SWARM } from '../../../src/constants';
import { createSwarmEngine } from '../../../src/engine/swarm';
import { TEST_IMAGE } from '../../support/engine';
import { Sandbox } from '../../support/sandbox';
import { swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';

describe('a pending network connect on a real two-node swarm', function () {
  this.timeout(180_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it('is started on every network it was connected to, by another berth process than the one that connected it', async () => {
    const sb = await Sandbox.create('sw-attach');
    const own = { [LABELS.managed]: 'true', [LABELS.instance]: sb.instance, [LABELS.attempt]: 'p', [LABELS.run]: '1', [LABELS.specHash]: 'h' };
    const first = createSwarmBackend({ docker: s.manager.docker });
    const internal = `berth_${sb.instance}_p`;
    const egress = `berth_${sb.instance}_p_egress`;
    try {
      await first.networks.create({ name: internal, labels: { ...own, [LABELS.component]: COMPONENTS.network }, internal: true });
      await first.networks.create({ name: egress, labels: { ...own, [LABELS.component]: COMPONENTS.egressNetwork }, internal: false });
      const name = `berth_${sb.instance}_p_sc_egress-proxy`;
      const id = await first.containers.create({
        name,
        image: TEST_IMAGE,
        cmd: ['sleep', '300'],
        env: [],
        workingDir: '/',
        labels: { ...own, [LABELS.component]: COMPONENTS.proxy, [LABELS.sidecar]: 'egress-proxy' },
        aliases: ['egress-proxy'],
        host: {
          networkMode: internal,
          binds: [],
          mounts: [],
          capDrop: ['ALL'],
          capAdd: [],
          securityOpt: [],
          privileged: false,
          init: false,
          pidsLimit: 64,
          readonlyRootfs: true,
        },
      });
      await first.networks.connect(egress, id);
      // the first berth is gone; a fresh one starts the run it finds created
      const second = createSwarmBackend({ docker: s.manager.docker });
      await second.containers.start(id);
      const svc = await createSwarmEngine(s.manager.docker).services.inspect(name);
      const byId = new Map((await s.manager.docker.listNetworks()).map((n) => [n.Id, n.Name]));
      expect(svc.networks.map((n) => byId.get(n) ?? n).sort()).to.deep.equal([egress, internal].sort());
      // the record is the run's, and goes with it
      const records = await s.manager.docker.listSecrets({
        filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, SWARM.attachLabel] }),
      } as never);
      expect((records as unknown as unknown[]).length).to.equal(1);
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr + c.stdout).to.equal(0);
      await sb.dispose();
    }
    const left = await s.manager.docker.listSecrets({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] }) } as never);
    expect(left as unknown as unknown[]).to.deep.equal([]);
    expect(await s.manager.docker.listNetworks({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] }) })).to.deep.equal([]);
  });
});

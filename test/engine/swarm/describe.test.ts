/**
 * `describe` and `logs` of an attempt on a real two-node swarm: describe shows the run's service,
 * its task (id, state) and its node (name, id) from the lists the backend makes anyway; logs
 * reads the run's output through the manager while it runs.
 */
import { expect } from 'chai';
import { LABELS } from '../../../src/constants';
import { createSwarmEngine } from '../../../src/engine/swarm';
import { Sandbox } from '../../support/sandbox';
import { swarmCli } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { waitFor } from '../../support/wait';

describe('describe and logs on a real two-node swarm', function () {
  this.timeout(180_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it("describe names the run's service, task and node; logs reads its output while it runs", async () => {
    const sb = await Sandbox.create('sw-describe');
    try {
      await sb.write('d.yaml', sb.attempt('d', 'echo hello-from-the-swarm; sleep 300'));
      const r = await swarmCli(sb, s, 'reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      const sw = createSwarmEngine(s.manager.docker);
      const svc = (await sw.services.list([`${LABELS.instance}=${sb.instance}`]))[0]!;
      const task = await waitFor('the run to be running', async () => (await sw.tasks.list({ services: [svc.id] })).find((t) => t.state === 'running'), {
        timeoutMs: 60_000,
      });
      const node = s.nodes.find((n) => n.id === task.nodeId)!;
      const hostname = ((await node.docker.info()) as { Name: string }).Name;

      const d = await swarmCli(sb, s, 'describe', 'd');
      expect(d.code, d.stderr).to.equal(0);
      const line = d.stdout.split('\n').find((l) => l.trim().startsWith('service '));
      expect(line, d.stdout).to.be.a('string');
      expect(line!.trim().split(/\s+/)).to.deep.equal(['service', svc.id, 'task', task.id, 'running', 'node', hostname, `(${node.id})`]);

      const logs = await waitFor(
        'the output in berth logs',
        async () => {
          const l = await swarmCli(sb, s, 'logs', 'd');
          return l.code === 0 && l.stdout.includes('hello-from-the-swarm') ? l : undefined;
        },
        { timeoutMs: 30_000 },
      );
      expect(logs.stdout.trim()).to.equal('hello-from-the-swarm');
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
  });
});

/**
 * A run's create and start on a real swarm, through the backend itself: a `none` run's own
 * internal overlay is made with its create (with its volumes), and one missing at its start (a run
 * an older berth prepared, which made it at the start) is made then; the start returns once the
 * task's container has started on its node (its node's `create` and `start` events), with its
 * swap limit set, and what is inspected right after it is that container, running, alone on the
 * run's overlay.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { createSwarmBackend } from '../../../src/backend/swarm';
import { COMPONENTS, LABELS, SWARM } from '../../../src/constants';
import { createSwarmEngine } from '../../../src/engine/swarm';
import type { ContainerCreateSpec } from '../../../src/engine/types';
import { TEST_IMAGE } from '../../support/engine';
import { Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm } from '../../support/swarm-cli';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';

describe('a run made and started on a real two-node swarm', function () {
  this.timeout(180_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  function runSpec(sb: Sandbox, attempt: string, resultsDir: string, memory: number): ContainerCreateSpec {
    const own = {
      [LABELS.managed]: 'true',
      [LABELS.instance]: sb.instance,
      [LABELS.attempt]: attempt,
      [LABELS.run]: '1',
      [LABELS.specHash]: 'h',
      [LABELS.component]: COMPONENTS.main,
    };
    return {
      name: `berth_${sb.instance}_${attempt}`,
      image: TEST_IMAGE,
      cmd: ['sleep', '300'],
      env: [],
      workingDir: '/workspace',
      labels: own,
      host: {
        networkMode: 'none',
        binds: [`${resultsDir}:/results:rw`],
        mounts: [],
        capDrop: ['ALL'],
        capAdd: [],
        securityOpt: [],
        privileged: false,
        init: true,
        pidsLimit: 64,
        readonlyRootfs: false,
        memory,
        memorySwap: memory,
      },
    };
  }

  it("makes a none run's own overlay with its create, and one missing at its start then; the start returns with the task's container started, its swap limit set", async () => {
    const sb = await Sandbox.create('sw-start');
    const backend = createSwarmBackend({ docker: s.manager.docker });
    const sw = createSwarmEngine(s.manager.docker);
    const ids: string[] = [];
    try {
      for (const [i, attempt] of ['a', 'b'].entries()) {
        const results = path.join(sb.dir, `results-${attempt}`);
        await fs.mkdir(results, { recursive: true });
        const spec = runSpec(sb, attempt, results, 64 * 1024 * 1024);
        const id = await backend.containers.create(spec);
        ids.push(id);
        const own = `${spec.name}-none`;
        // made with the run, before its start: internal, the run's
        const net = await sw.networks.inspect(own);
        expect(net.internal, own).to.equal(true);
        expect(net.labels[SWARM.runLabel]).to.equal(spec.name);
        // the second: as an older berth left it, prepared with no overlay yet
        if (i === 1) await sw.networks.remove(own);
        await backend.containers.start(id);
        // right after the start: the task's container, started, on its node
        const svc = await sw.services.inspect(spec.name);
        const node = s.nodes.find((n) => n.id === svc.nodeId);
        expect(node, `the node of ${spec.name}`).to.not.equal(undefined);
        const tasks = (await node!.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${SWARM.taskLabel}=${spec.name}`] }) })) as {
          Id: string;
          State: string;
        }[];
        expect(
          tasks.map((t) => t.State),
          `the task containers of ${spec.name} right after its start`,
        ).to.deep.equal(['running']);
        const inner = (await node!.docker.getContainer(tasks[0]!.Id).inspect()) as { HostConfig: { Memory: number; MemorySwap: number } };
        expect(inner.HostConfig.MemorySwap, 'the swap limit the spec asks for, not the node default of twice the memory').to.equal(64 * 1024 * 1024);
        // and what is inspected is that container: running, alone on the run's own overlay (none)
        const d = await backend.containers.inspect(id);
        expect(d.runState.running).to.equal(true);
        expect(d.runState.startedAt).to.not.match(/^0001-/);
        expect(d.networks).to.deep.equal(['none']);
        const byId = new Map((await s.manager.docker.listNetworks()).map((n) => [n.Id, n.Name]));
        expect(svc.networks.map((n) => byId.get(n) ?? n)).to.deep.equal([own]);
      }
    } finally {
      for (const id of ids) await backend.containers.remove(id);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });
});

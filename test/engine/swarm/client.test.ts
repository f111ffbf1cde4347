/**
 * The swarm client (src/engine/swarm) against a real two-node swarm (test/support/swarm.ts):
 * a replicated job pinned to the worker, with labels on the service and its container, an
 * internal attachable overlay, a swarm secret as a file, dnsrr and no ports; tasks polled to
 * their end with the exit code; the output read through the manager; deadlines.
 */
import { expect } from 'chai';
import { createHash } from 'node:crypto';
import Dockerode from 'dockerode';
import { EngineUnreachableError } from '../../../src/engine/errors';
import { createSwarmEngine, NotASwarmManagerError } from '../../../src/engine/swarm';
import type { ServiceCreateSpec, SwarmEngine, TaskSummary } from '../../../src/engine/swarm/types';
import { TEST_IMAGE, TEST_LABEL, TEST_RUN } from '../../support/engine';
import { SickEngine } from '../../support/sick-engine';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { waitFor } from '../../support/wait';

const label = { [TEST_LABEL]: TEST_RUN };
const FINAL = new Set(['complete', 'failed', 'rejected', 'shutdown', 'orphaned', 'remove']);

function job(name: string, nodeId: string, cmd: string[], more: Partial<ServiceCreateSpec> = {}): ServiceCreateSpec {
  return {
    name,
    labels: { ...label, 'dev.berth.test-kind': 'service' },
    containerLabels: { ...label, 'dev.berth.test-kind': 'container' },
    image: TEST_IMAGE,
    cmd,
    env: ['A=1'],
    workingDir: '/workspace',
    nodeId,
    networks: [],
    mounts: [],
    secrets: [],
    capDrop: ['ALL'],
    capAdd: [],
    init: false,
    readonlyRootfs: false,
    pidsLimit: 64,
    ...more,
  };
}

async function ended(sw: SwarmEngine, serviceId: string): Promise<TaskSummary> {
  return waitFor(`the task of service ${serviceId} to end`, async () => (await sw.tasks.list({ services: [serviceId] })).find((t) => FINAL.has(t.state)), {
    timeoutMs: 60_000,
  });
}

async function text(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of stream) chunks.push(Buffer.from(c as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

describe('swarm client (src/engine/swarm) on a real two-node swarm', function () {
  this.timeout(120_000);
  let s: TestSwarm;
  let sw: SwarmEngine;
  const made = { services: [] as string[], secrets: [] as string[], networks: [] as string[] };

  before(async () => {
    s = await twoNodeSwarm();
    sw = createSwarmEngine(s.manager.docker);
  });

  after(async () => {
    for (const id of made.services) await sw.services.remove(id);
    for (const id of made.secrets)
      await waitFor(
        `secret ${id} removed`,
        () =>
          sw.secrets.remove(id).then(
            () => true,
            () => false,
          ),
        { timeoutMs: 20_000 },
      );
    for (const id of made.networks)
      await waitFor(
        `network ${id} removed`,
        () =>
          sw.networks.remove(id).then(
            () => true,
            () => false,
          ),
        { timeoutMs: 20_000 },
      );
    expect(await sw.services.list([`${TEST_LABEL}=${TEST_RUN}`])).to.deep.equal([]);
    expect(await sw.secrets.list([`${TEST_LABEL}=${TEST_RUN}`])).to.deep.equal([]);
  });

  it('knows its manager and its nodes; a worker or a plain engine is no manager', async () => {
    const m = await sw.manager();
    expect(m.nodeId).to.equal(s.manager.id);
    const nodes = await sw.nodes.list();
    expect(nodes.map((n) => [n.id, n.role, n.state, n.availability])).to.deep.equal(
      [
        [s.manager.id, 'manager', 'ready', 'active'],
        [s.workers[0]?.id, 'worker', 'ready', 'active'],
      ].sort((a, b) => String(a[0]).localeCompare(String(b[0]))),
    );
    const worker = createSwarmEngine(s.workers[0]?.docker);
    await worker.manager().then(
      () => expect.fail('a worker answered as a manager'),
      (err: Error) => {
        expect(err).to.be.instanceOf(NotASwarmManagerError);
        expect(err.message).to.contain(s.workers[0]?.socket).and.to.contain('a worker');
      },
    );
    const plain = createSwarmEngine(new Dockerode({ socketPath: '/var/run/docker.sock' }));
    await plain.manager().then(
      () => expect.fail('the shared engine answered as a manager'),
      (err: Error) => expect(err).to.be.instanceOf(NotASwarmManagerError),
    );
  });

  it('runs a replicated job pinned to the worker: labels, overlay, secret file, dnsrr, exit code, output through the manager', async () => {
    const w = s.workers[0]!;
    const secretData = Buffer.from(`s3cret-${TEST_RUN}`);
    const secretId = await sw.secrets.create(`${TEST_RUN}-client-secret`, secretData, label);
    made.secrets.push(secretId);
    const netId = await sw.networks.create({ name: `${TEST_RUN}-client-net`, labels: label, internal: true, driver: 'overlay', attachable: true });
    made.networks.push(netId);
    const id = await sw.services.create(
      job(
        `${TEST_RUN}-client-job`,
        w.id,
        ['sh', '-c', 'sha256sum /run/secrets/token | cut -c1-64; grep NoNewPrivs /proc/self/status; hostname -i >/dev/null; exit 3'],
        {
          networks: [{ target: netId, aliases: ['main'] }],
          secrets: [{ id: secretId, name: `${TEST_RUN}-client-secret`, file: 'token' }],
        },
      ),
    );
    made.services.push(id);
    const svc = await sw.services.inspect(id);
    expect(svc.nodeId).to.equal(w.id);
    expect(svc.labels['dev.berth.test-kind']).to.equal('service');
    const t = await ended(sw, id);
    expect([t.state, t.exitCode, t.nodeId]).to.deep.equal(['failed', 3, w.id]);
    // the container is on the worker's engine, with the task template's labels; none on the manager's
    const c = await w.docker.getContainer(t.containerId!).inspect();
    expect(c.Config.Labels['dev.berth.test-kind']).to.equal('container');
    expect(Object.keys(c.NetworkSettings.Networks)).to.deep.equal([`${TEST_RUN}-client-net`]);
    expect(await s.manager.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${TEST_LABEL}=${TEST_RUN}`] }) })).to.deep.equal([]);
    const raw = (await s.manager.docker.getService(id).inspect()) as {
      Spec: { EndpointSpec: { Mode: string; Ports?: unknown[] }; Mode: Record<string, unknown>; TaskTemplate: { RestartPolicy: { Condition: string } } };
    };
    expect(raw.Spec.EndpointSpec).to.deep.equal({ Mode: 'dnsrr' });
    expect(Object.keys(raw.Spec.Mode)).to.deep.equal(['ReplicatedJob']);
    expect(raw.Spec.TaskTemplate.RestartPolicy.Condition).to.equal('none');
    const out = await text(await sw.services.logs(id, { follow: false }));
    expect(out).to.contain(createHash('sha256').update(secretData).digest('hex'));
    expect(out).to.match(/NoNewPrivs:\s+1/);
    expect(await sw.tasks.list({ labels: [`${TEST_LABEL}=${TEST_RUN}`] })).to.be.an('array');
    expect(await sw.services.remove(id)).to.equal(true);
    expect(await sw.services.remove(id)).to.equal(false);
  });

  it('a job that exits 0 completes; a missing service is 404 on inspect', async () => {
    const id = await sw.services.create(job(`${TEST_RUN}-client-ok`, s.manager.id, ['true']));
    made.services.push(id);
    const t = await ended(sw, id);
    expect([t.state, t.exitCode, t.nodeId]).to.deep.equal(['complete', 0, s.manager.id]);
    await sw.services.inspect(`${TEST_RUN}-no-such-service`).then(
      () => expect.fail('inspect of a missing service succeeded'),
      (err: { statusCode?: number }) => expect(err.statusCode).to.equal(404),
    );
  });

  it('every call has a deadline: a manager that stops answering is a timeout, named by the call', async () => {
    // A proxy to the manager's socket that answers nothing: the call can only end by its deadline
    // (a 1 ms budget against the real socket could be met on a quiet machine).
    const sick = await SickEngine.start({ proxyTo: s.manager.socket });
    sick.hangAll = true;
    try {
      // a client with an API version of its own: the call itself goes out, not the negotiation first
      const slow = createSwarmEngine(new Dockerode({ socketPath: sick.socket, version: 'v1.41' }), { timeoutMs: 300 });
      await slow.nodes.list().then(
        () => expect.fail('a manager that answers nothing answered'),
        (err: Error) => {
          expect(err).to.be.instanceOf(EngineUnreachableError);
          expect(err.message).to.contain('nodes.list');
        },
      );
      expect(sick.unansweredPaths.some((p) => p.includes('/nodes'))).to.equal(true);
    } finally {
      await sick.close();
    }
  });
});

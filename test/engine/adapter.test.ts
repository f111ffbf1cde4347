/** The Docker adapter on the real engine: create, list by label, inspect, classify errors, remove. */
import { expect } from 'chai';
import { classify, isNotFound } from '../../src/engine/errors';
import { CallCounter, instrumentEngine, readOnlyEngine } from '../../src/engine/wrap';
import { docker, removeTestResources, requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN, testEngine } from '../support/engine';

describe('engine adapter (real engine)', function () {
  const engine = testEngine();
  const tag = `${TEST_RUN}-adapter`;
  const labels = { [TEST_LABEL]: TEST_RUN, 'dev.berth.test-case': tag };
  const filter = [`dev.berth.test-case=${tag}`];

  before(requireEngine);
  after(removeTestResources);

  it('creates, lists by label, inspects and removes a container, a network and a volume', async function () {
    const vol = await engine.volumes.create({ name: `${tag}-vol`, labels });
    const netId = await engine.networks.create({ name: `${tag}-net`, labels, internal: true });
    const id = await engine.containers.create({
      name: `${tag}-c`,
      image: TEST_IMAGE,
      cmd: ['sh', '-c', 'echo out; echo err >&2; sleep 30'],
      env: ['A=1'],
      workingDir: '/workspace',
      labels,
      host: {
        networkMode: `${tag}-net`,
        binds: [],
        mounts: [{ type: 'volume', source: vol, target: '/cache', readOnly: false }],
        capDrop: ['ALL'],
        capAdd: [],
        securityOpt: ['no-new-privileges'],
        privileged: false,
        init: true,
        memory: 64 * 1024 * 1024,
        memorySwap: 64 * 1024 * 1024,
        pidsLimit: 64,
        readonlyRootfs: false,
      },
    });
    await engine.containers.start(id);
    await engine.containers.start(id); // already started: 304 is success

    const listed = await engine.containers.list(filter);
    expect(listed.map((c) => c.name)).to.deep.equal([`${tag}-c`]);
    expect(listed[0]?.networks).to.deep.equal([`${tag}-net`]);
    expect(listed[0]?.mounts.map((m) => [m.type, m.destination])).to.deep.equal([['volume', '/cache']]);

    const d = await engine.containers.inspect(id);
    expect(d.host.capDrop).to.deep.equal(['ALL']);
    expect(d.host.init).to.equal(true);
    expect(d.host.memory).to.equal(64 * 1024 * 1024);
    expect(d.host.pidsLimit).to.equal(64);
    expect(d.runState.running).to.equal(true);

    expect((await engine.networks.list(filter)).map((n) => [n.id, n.internal])).to.deep.equal([[netId, true]]);
    expect((await engine.volumes.list(filter)).map((v) => v.name)).to.deep.equal([`${tag}-vol`]);

    // a second create with the same name is a conflict, classified by status code
    const dup = await engine.containers
      .create({
        name: `${tag}-c`,
        image: TEST_IMAGE,
        cmd: null,
        env: [],
        workingDir: '/',
        labels,
        host: {
          networkMode: 'none',
          binds: [],
          mounts: [],
          capDrop: [],
          capAdd: [],
          securityOpt: [],
          privileged: false,
          init: false,
          pidsLimit: 10,
          readonlyRootfs: false,
        },
      })
      .then(
        () => undefined,
        (e: unknown) => e,
      );
    expect(classify(dup)).to.equal('conflict');

    await engine.containers.stop(id, 1);
    await engine.containers.stop(id, 1); // already stopped: 304 is success
    const logs = await engine.containers.logs(id, { follow: false });
    let text = '';
    for await (const chunk of logs) text += String(chunk);
    expect(text.split('\n').filter(Boolean).sort()).to.deep.equal(['err', 'out']);

    expect(await engine.containers.remove(id)).to.equal(true);
    expect(await engine.containers.remove(id)).to.equal(false); // already gone is success
    expect(await engine.networks.remove(netId)).to.equal(true);
    expect(await engine.networks.remove(netId)).to.equal(false);
    expect(await engine.volumes.remove(vol)).to.equal(true);
    expect(await engine.volumes.remove(vol)).to.equal(false);

    expect(await engine.containers.list(filter)).to.have.length(0);
    expect(await engine.networks.list(filter)).to.have.length(0);
    expect(await engine.volumes.list(filter)).to.have.length(0);
    const gone = await engine.containers.inspect(id).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(isNotFound(gone)).to.equal(true);
  });

  it('counts calls, and the read-only engine refuses every mutating call', async function () {
    const counter = new CallCounter();
    const ro = readOnlyEngine(instrumentEngine(engine, counter.listener));
    await ro.containers.list(filter);
    await ro.networks.list(filter);
    await ro.ping();
    expect(await ro.boot?.())
      .to.have.property('id')
      .that.is.a('string');
    const err = await ro.volumes.create({ name: `${tag}-never`, labels }).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect((err as Error).message).to.match(/read-only/);
    expect(counter.snapshot()).to.deep.equal({ 'containers.list': 1, 'engine.boot': 1, 'engine.ping': 1, 'networks.list': 1 });
    expect(counter.mutating).to.equal(0);
    expect((await docker.listVolumes({ filters: JSON.stringify({ name: [`${tag}-never`] }) })).Volumes ?? []).to.have.length(0);
  });
});

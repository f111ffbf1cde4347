/**
 * Images on a real two-node swarm (src/backend/swarm/images.ts): a node never fails a task for a
 * missing image. An image only the manager holds (loaded there, no registry has it) is copied to
 * the node a run goes to, once per image id however many runs; an image from a registry both nodes
 * reach (a real registry in the swarm's own network, test/support/registry.ts) is pulled by the
 * node with the credential berth found, and a run of it starts there.
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { createSwarmBackend } from '../../../src/backend/swarm';
import { COMPONENTS, LABELS } from '../../../src/constants';
import type { ContainerCreateSpec } from '../../../src/engine/types';
import { TEST_RUN } from '../../support/engine';
import { makeTestImage, removeImage, TestRegistry } from '../../support/registry';
import { Sandbox } from '../../support/sandbox';
import { type TestSwarm, twoNodeSwarm } from '../../support/swarm';

const run = promisify(execFile);

describe('images on a real two-node swarm', function () {
  this.timeout(240_000);
  let s: TestSwarm;
  let sb: Sandbox;

  before(async () => {
    s = await twoNodeSwarm();
  });
  beforeEach(async () => {
    sb = await Sandbox.create('sw-img');
    // every run goes to the worker: the manager holds the images, the worker does not
    await s.availability(s.manager, 'drain');
  });
  afterEach(async () => {
    await s.availability(s.manager, 'active');
    await sb.dispose();
  });

  function runSpec(attempt: string, image: string, resultsDir: string): ContainerCreateSpec {
    return {
      name: `berth_${sb.instance}_${attempt}`,
      image,
      cmd: ['true'],
      env: [],
      workingDir: '/workspace',
      labels: {
        [LABELS.managed]: 'true',
        [LABELS.instance]: sb.instance,
        [LABELS.attempt]: attempt,
        [LABELS.run]: '1',
        [LABELS.specHash]: 'h',
        [LABELS.component]: COMPONENTS.main,
      },
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
      },
    };
  }

  async function make(backend: ReturnType<typeof createSwarmBackend>, attempt: string, image: string): Promise<string> {
    const results = path.join(sb.dir, `results-${attempt}`);
    await fs.mkdir(results, { recursive: true });
    return backend.containers.create(runSpec(attempt, image, results));
  }

  const worker = () => s.workers[0] as (typeof s.workers)[number];
  /** The worker holds no image by that name. */
  const absent = (ref: string) =>
    worker()
      .docker.getImage(ref)
      .inspect()
      .then(
        () => false,
        (err: { statusCode?: number }) => err.statusCode === 404,
      );

  it('an image only the manager holds is copied to the node, once per image id for two runs', async () => {
    const local = `berth-test/${TEST_RUN}-swcopy:1`;
    await makeTestImage(local, 256 * 1024);
    const backend = createSwarmBackend({ docker: s.manager.docker });
    const ids: string[] = [];
    try {
      await run('sh', ['-c', `docker save ${local} | docker -H ${s.manager.address} load -q`]);
      expect(await absent(local)).to.equal(true);
      const since = Math.floor(Date.now() / 1000) - 1;
      ids.push(await make(backend, 'c1', local), await make(backend, 'c2', local));
      const want = (await s.manager.docker.getImage(local).inspect()).Id;
      expect((await worker().docker.getImage(local).inspect()).Id).to.equal(want);
      const { stdout } = await run('docker', [
        '-H',
        worker().address,
        'events',
        '--since',
        String(since),
        '--until',
        String(Math.floor(Date.now() / 1000) + 1),
        '--filter',
        'type=image',
        '--filter',
        'event=load',
        '--format',
        '{{.Actor.ID}}',
      ]);
      // this image's loads only (the test swarm loads its own images into the nodes when it starts)
      expect(
        stdout
          .trim()
          .split('\n')
          .filter((l) => l === local || l === want),
      ).to.have.length(1);
    } finally {
      for (const id of ids) await backend.containers.remove(id);
      for (const n of [s.manager, worker()]) await run('docker', ['-H', n.address, 'image', 'rm', '-f', local]).catch(() => undefined);
      await removeImage(local);
    }
  });

  it('an image from a registry both nodes reach is pulled by the node with the credential, and its run starts there', async () => {
    // the registry listens in the swarm's own network (its hub), on an address of its own there
    await run('nsenter', [`--net=/var/run/netns/${s.hub}`, 'sh', '-c', 'ip addr add 10.78.0.254/24 dev br0 2>/dev/null || true']);
    const reg = await TestRegistry.start(undefined, { netns: s.hub, ip: '10.78.0.254' });
    const local = `berth-test/${TEST_RUN}-swpull:1`;
    const backend = createSwarmBackend({ docker: s.manager.docker });
    const ids: string[] = [];
    let ref = '';
    try {
      await makeTestImage(local, 256 * 1024);
      ref = await reg.push(local, 'evals/sw:1');
      const auth = { username: reg.user.user, password: reg.user.password, serveraddress: reg.host };
      backend.useCredentials?.(async (r) => (r.startsWith(`${reg.host}/`) ? auth : undefined));
      // the manager pulls it (berth's puller does, on a swarm as on one engine)
      const pulled = await backend.images.pull(ref, { auth });
      expect(pulled?.digest).to.match(/^sha256:/);
      expect(await absent(ref)).to.equal(true);
      const id = await make(backend, 'p1', ref);
      ids.push(id);
      const onWorker = await worker().docker.getImage(ref).inspect();
      expect(onWorker.Id).to.equal(pulled?.id);
      expect(onWorker.RepoDigests).to.include(`${reg.host}/evals/sw@${pulled?.digest ?? ''}`);
      await backend.containers.start(id);
      const c = await backend.containers.inspect(id);
      expect(c.config.image).to.equal(ref);
      expect((await reg.requests(/^GET \/v2\/evals\/sw\/manifests\//)).length).to.be.greaterThan(1);
    } finally {
      for (const id of ids) await backend.containers.remove(id).catch(() => undefined);
      for (const n of [s.manager, worker()]) if (ref) await run('docker', ['-H', n.address, 'image', 'rm', '-f', ref]).catch(() => undefined);
      await removeImage(local);
      if (ref) await removeImage(ref);
      await reg.stop();
    }
  });
});

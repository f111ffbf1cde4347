/**
 * The executor against the fake engine (test/support/fake-engine.ts): a failure at each step of
 * provisioning, and what the status record and the engine hold afterwards.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LABELS, REASONS } from '../../../src/constants';
import { desiredAttempt } from '../../../src/desired/attempt';
import { BackendRefusedError } from '../../../src/engine/errors';
import type { DesiredAttempt } from '../../../src/desired/types';
import { Executor } from '../../../src/execute/executor';
import { stampNonce } from '../../../src/ownership';
import { beginRunOp, mainOps, provisionOps, sidecarOps, startOps } from '../../../src/plan/ops';
import type { AttemptAction, Operation, RunStart } from '../../../src/plan/types';
import type { NormalizedAttempt } from '../../../src/spec/types';
import { StatusStore } from '../../../src/status/store';
import { silentLogger } from '../../../src/util/log';
import { spec } from '../../support/builders';
import { FakeEngine } from '../../support/fake-engine';

const I = 'unit-exec';
const IMAGE = 'berth/busybox:local';
/** How a first run begins: no retry used, a folder of its own to make. */
const FIRST_RUN: RunStart = { counters: { retriesUsed: 0 }, ownFolder: false };

describe('executor against the fake engine', function () {
  let dir: string;
  let fake: FakeEngine;
  let store: StatusStore;
  let t: number;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-exec-'));
    t = Date.parse('2030-01-01T00:00:00Z');
    fake = new FakeEngine({ now: () => t });
    fake.addImage({ ref: IMAGE, labels: { 'dev.berth.test-image': 'busybox-fake' } });
    store = new StatusStore(path.join(dir, 'state'), I);
  });
  afterEach(async function () {
    fake.releaseHangs();
    await fs.rm(dir, { recursive: true, force: true });
  });

  const executor = (env: NodeJS.ProcessEnv = {}) => new Executor({ engine: fake, store, instance: I, concurrency: 2, log: silentLogger(), env, now: () => t });

  function desired(name: string, over: Partial<NormalizedAttempt> = {}): DesiredAttempt {
    return desiredAttempt({ instance: I, policy: {} }, spec(name, over), 1, path.join(dir, 'results', name, 'run-1', 'out'));
  }

  /** The planner's operations for the run's main container: all of them, up to the copy recorded, or the start alone. */
  function action(d: DesiredAttempt, steps: 'provision' | 'create' | 'start'): AttemptAction {
    const begin: Operation = beginRunOp(d, FIRST_RUN);
    const main = mainOps(d);
    const ops =
      steps === 'start'
        ? startOps(d, 'test')
        : steps === 'create'
          ? [
              begin,
              ...main.slice(
                0,
                main.findIndex((o) => o.type === 'start'),
              ),
            ]
          : [begin, ...main];
    return { attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d };
  }
  /** The operation types of the main container's provisioning for `d` (the copies as it needs them). */
  const provisionTypes = (d: DesiredAttempt) => action(d, 'provision').ops.map((o) => o.type);

  it('provisions: the record is Running with the container id, the container runs', async function () {
    const d = desired('ok');
    expect(provisionTypes(d)).to.deep.equal(['begin-run', 'create-container', 'record-copied', 'start', 'attest-start']);
    // the status writes (each an fsync): intent, container id, copied, Running, as before the split
    const put = store.put.bind(store);
    const phases: string[] = [];
    store.put = (rec) => (phases.push(`${rec.phase}${rec.intent?.copied ? ' copied' : ''}${rec.containerId ? ' id' : ''}`), put(rec));
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(phases).to.deep.equal(['Pending', 'Pending id', 'Pending copied id', 'Running id']);
    expect(res).to.include({ ok: true, done: 5 });
    const rec = await store.get('ok');
    const c = await fake.containers.inspect(d.container.name);
    expect([rec?.phase, rec?.containerId, c.runState.running]).to.deep.equal(['Running', c.id, true]);
    expect(rec?.startedAt).to.equal('2030-01-01T00:00:00.000Z');
    expect(rec?.lastAttestation?.ok).to.equal(true);
  });

  it('records the image the container was made from: the id the engine used, with its repo digests; a set child from its pinned id, the pin written first', async function () {
    const id = fake.addImage({ ref: 'pinned:1', repoDigests: ['reg/pinned@sha256:1'], labels: {} });
    const d = desired('prov', { image: 'pinned:1' });
    await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect((await store.get('prov'))?.image).to.deep.equal({ ref: 'pinned:1', id, repoDigests: ['reg/pinned@sha256:1'] });
    // the tag moves; a set's child is made from the id its plan pinned, which the pin file keeps (first wins)
    fake.addImage({ ref: 'pinned:1', labels: {} });
    const c = desired('child', { image: 'pinned:1' });
    const act = action(c, 'provision');
    const ops = act.ops.map((o) =>
      o.type === 'create-container'
        ? { ...o, image: { id, pin: { set: 's', key: { pinKey: 'k', templateHash: 't' }, repoDigests: ['reg/pinned@sha256:1'] } } }
        : o,
    );
    const [res] = await executor().run({ at: t, actions: [{ ...act, ops }], unchanged: new Map() } as never);
    expect(res?.ok, res?.error).to.equal(true);
    const rec = await store.get('child');
    expect(rec?.image).to.deep.equal({ ref: 'pinned:1', id, repoDigests: ['reg/pinned@sha256:1'], pinned: true });
    expect((await fake.containers.inspect(c.container.name)).imageId).to.equal(id);
    expect(rec?.lastAttestation?.ok, JSON.stringify(rec?.lastAttestation)).to.equal(true);
    expect(store.pins.loadAll().get('s')?.images['pinned:1']?.id).to.equal(id);
  });

  it('an image inspect that fails after the create costs only the provenance there: the id is recorded, and attest-start records the image', async function () {
    const d = desired('prov-late');
    const ids: (string | undefined)[] = [];
    const put = store.put.bind(store);
    store.put = (rec) => (rec.name === 'prov-late' && ids.push(rec.image?.id), put(rec));
    fake.fail('images.inspect', { status: 500, message: 'busy' }, { times: 1 });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res?.ok, res?.error).to.equal(true);
    const id = (await fake.images.inspect(IMAGE)).id;
    // intent, container id (no image: its look failed), copied, Running (with the image)
    expect(ids).to.deep.equal([undefined, undefined, undefined, id]);
    expect((await store.get('prov-late'))?.image).to.deep.equal({ ref: IMAGE, id, repoDigests: [] });
  });

  it("a 409 at create with the attempt's own container (an earlier try): that one is used, none is added", async function () {
    const d = desired('mine');
    const earlier = await fake.containers.create(stampNonce(d.container.create));
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    // the create met a conflict; the planner's follow-up made the create again with that container, then the start
    expect(res).to.include({ ok: true, done: 1, outcome: 'conflict' });
    expect(res?.ran.map((o) => [o.type, o.type === 'create-container' ? o.use : undefined])).to.deep.equal([
      ['begin-run', undefined],
      ['create-container', earlier],
      ['record-copied', undefined],
      ['start', undefined],
      ['attest-start', undefined],
    ]);
    expect((await store.get('mine'))?.containerId).to.equal(earlier);
    expect(fake.containerNames()).to.deep.equal([d.container.name]);
    expect((await fake.containers.inspect(earlier)).runState.running).to.equal(true);
  });

  it("a 409 at create with the attempt's own container that does not attest: it is removed, Pending/CreateFailed, none started", async function () {
    const d = desired('mine-bad');
    fake.addImage({ ref: 'other:1', labels: {} });
    const earlier = await fake.containers.create({ ...stampNonce(d.container.create), image: 'other:1' });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 1, outcome: 'conflict' });
    expect(res?.error).to.match(/^create-container container:\S+: existing container \S+ did not attest and was removed: .*other:1/);
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['begin-run', 'remove-container', 'record']);
    const rec = await store.get('mine-bad');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Pending', REASONS.createFailed]);
    expect(fake.calls.filter((x) => x.op === 'containers.remove').map((x) => x.args[0])).to.deep.equal([earlier]);
    expect(fake.containerNames()).to.deep.equal([]);
    expect(fake.calls.some((x) => x.op === 'containers.start')).to.equal(false);
  });

  it('a 409 at create with a container berth did not make: Blocked/NameConflict, that container untouched', async function () {
    const d = desired('taken');
    const theirs = await fake.containers.create({ ...d.container.create, labels: { someone: 'else' } });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 1 });
    const rec = await store.get('taken');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Blocked', REASONS.nameConflict]);
    expect(rec?.message).to.match(/did not create/);
    const c = await fake.containers.inspect(d.container.name);
    expect([c.id, c.runState.status, c.labels]).to.deep.equal([theirs, 'created', { 'dev.berth.test-image': 'busybox-fake', someone: 'else' }]);
    expect(fake.calls.filter((x) => x.op === 'containers.remove' || x.op === 'containers.start')).to.deep.equal([]);
  });

  it('a 409 with a container that only inherits berth labels from its image is not ours', async function () {
    const d = desired('inherit');
    // an image committed from a berth container: its labels (nonce too) are the container's
    const stamped = stampNonce(d.container.create);
    fake.addImage({ ref: 'committed:1', labels: stamped.labels });
    const theirs = await fake.containers.create({ ...d.container.create, image: 'committed:1', labels: {} });
    expect((await fake.containers.inspect(theirs)).labels[LABELS.attempt]).to.equal('inherit');
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 1 });
    expect((await store.get('inherit'))?.phase).to.equal('Blocked');
    expect((await fake.containers.inspect(theirs)).runState.status).to.equal('created');
  });

  it('a 409 at a sidecar create with a container that only inherits berth labels: Blocked, that container untouched', async function () {
    const d = desired('side', {
      network: { mode: 'isolated', egress: [] },
      sidecars: [{ name: 'db', image: IMAGE, command: null, env: {}, secretEnv: {}, secrets: [] }],
    });
    const sc = d.sidecars[0] as DesiredAttempt['sidecars'][number];
    await fake.networks.create(d.network as NonNullable<DesiredAttempt['network']>);
    fake.addImage({ ref: 'committed:2', labels: stampNonce(sc.create).labels });
    const theirs = await fake.containers.create({ ...sc.create, image: 'committed:2', labels: {} });
    const ops: Operation[] = [{ type: 'create-sidecar', resource: `container:${sc.name}`, cause: 'test', desired: d, index: 0 }];
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: true, done: 0 });
    expect([(await store.get('side'))?.phase, (await store.get('side'))?.reason]).to.deep.equal(['Blocked', REASONS.nameConflict]);
    expect((await fake.containers.inspect(sc.name)).id).to.equal(theirs);
    expect(fake.calls.filter((x) => x.op === 'containers.remove')).to.deep.equal([]);
  });

  it("a 409 at a sidecar create with the attempt's own earlier sidecar: it is removed and made again", async function () {
    const d = desired('side-mine', {
      network: { mode: 'isolated', egress: [] },
      sidecars: [{ name: 'db', image: IMAGE, command: null, env: {}, secretEnv: {}, secrets: [] }],
    });
    const sc = d.sidecars[0] as DesiredAttempt['sidecars'][number];
    await fake.networks.create(d.network as NonNullable<DesiredAttempt['network']>);
    const earlier = await fake.containers.create(stampNonce(sc.create));
    const ops: Operation[] = sidecarOps(d, 0, 'test');
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: true, done: 0, outcome: 'conflict' });
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['remove-container', 'create-sidecar', 'start-sidecar', 'ready-sidecar']);
    const now = await fake.containers.inspect(sc.name);
    expect(now.id).to.not.equal(earlier);
    expect(now.runState.running).to.equal(true);
  });

  /** A running attempt with one sidecar, provisioned through the fake engine. */
  async function runningWithSidecar(name: string): Promise<{ d: DesiredAttempt; sc: DesiredAttempt['sidecars'][number]; main: string }> {
    const d = desired(name, {
      network: { mode: 'isolated', egress: [] },
      sidecars: [{ name: 'db', image: IMAGE, command: null, env: {}, secretEnv: {}, secrets: [] }],
    });
    const sc = d.sidecars[0] as DesiredAttempt['sidecars'][number];
    const ops = provisionOps(d, { name, containers: [], networks: [], volumes: [] }, FIRST_RUN);
    expect(ops.map((o) => o.type)).to.deep.equal([
      'create-network',
      'begin-run',
      'create-sidecar',
      'start-sidecar',
      'ready-sidecar',
      'create-container',
      'record-copied',
      'start',
      'attest-start',
    ]);
    // one intent for the run, not one per container: 4 status writes with a sidecar too
    const put = store.put.bind(store);
    let writes = 0;
    store.put = (rec) => (writes++, put(rec));
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    store.put = put;
    expect(writes).to.equal(4);
    expect(res).to.include({ ok: true, done: 9 });
    const rec = await store.get(name);
    expect(rec?.phase).to.equal('Running');
    return { d, sc, main: rec?.containerId as string };
  }

  function restartAction(d: DesiredAttempt, sc: DesiredAttempt['sidecars'][number], rec: unknown): AttemptAction {
    return { attempt: d.name, kind: 'restart', summary: 'test', ops: sidecarOps(d, 0, 'test', true), desired: d, status: rec as never };
  }

  it('a sidecar that does not come back while the attempt runs: the main container is stopped, Failed/SidecarFailed', async function () {
    const { d, sc, main } = await runningWithSidecar('side-back');
    await fake.containers.remove(sc.name);
    fake.exitOnStart((n) => n === sc.name, 1);
    const [res] = await executor().run({ at: t, actions: [restartAction(d, sc, await store.get('side-back'))], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 2, outcome: 'not-ready' });
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['create-sidecar', 'start-sidecar', 'stop', 'finish']);
    const rec = await store.get('side-back');
    expect([rec?.phase, rec?.reason, rec?.message]).to.deep.equal(['Failed', REASONS.sidecarFailed, 'sidecar db exited right after its start (exit code 1)']);
    expect((await fake.containers.inspect(main)).runState.running).to.equal(false);
  });

  it("a sidecar's name taken by a foreign container while the attempt runs: Failed/SidecarFailed, that container untouched", async function () {
    const { d, sc, main } = await runningWithSidecar('side-held');
    await fake.containers.remove(sc.name);
    const theirs = await fake.containers.create({ ...sc.create, labels: { someone: 'else' } });
    const [res] = await executor().run({ at: t, actions: [restartAction(d, sc, await store.get('side-held'))], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 0, outcome: 'conflict' });
    const rec = await store.get('side-held');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Failed', REASONS.sidecarFailed]);
    expect(rec?.message).to.match(/^sidecar db cannot be started again: container name \S+ is held by container \S+ that berth did not create/);
    expect((await fake.containers.inspect(main)).runState.running).to.equal(false);
    expect((await fake.containers.inspect(sc.name)).id).to.equal(theirs);
    expect(fake.calls.filter((x) => x.op === 'containers.remove' && x.args[0] === theirs)).to.deep.equal([]);
  });

  it('a sidecar gone mid-way (404 at its start): Pending/CreateFailed, no start failure recorded', async function () {
    const d = desired('side-404', {
      network: { mode: 'isolated', egress: [] },
      sidecars: [{ name: 'db', image: IMAGE, command: null, env: {}, secretEnv: {}, secrets: [] }],
    });
    const sc = d.sidecars[0] as DesiredAttempt['sidecars'][number];
    await fake.networks.create(d.network as NonNullable<DesiredAttempt['network']>);
    fake.fail('containers.start', { status: 404, message: 'No such container: db' });
    const ops: Operation[] = [
      beginRunOp(d, FIRST_RUN),
      ...sidecarOps(d, 0, 'test'),
      { type: 'create-container', resource: `container:${d.container.name}`, cause: 'test', desired: d },
    ];
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: false, done: 2, outcome: 'not-found' });
    expect(res?.error).to.match(/^start-sidecar container:\S+: /);
    const rec = await store.get('side-404');
    expect([rec?.phase, rec?.reason, rec?.startFailure]).to.deep.equal(['Pending', REASONS.createFailed, undefined]);
    expect(fake.containerNames()).to.deep.equal([sc.name]);
  });

  it('a running container that fails its attestation: stopped with its sidecars, Failed/AttestationFailed', async function () {
    const { d, sc, main } = await runningWithSidecar('att');
    const other = { name: 'elsewhere', labels: {}, internal: false };
    await fake.networks.create(other);
    await fake.networks.connect(other.name, main);
    const ops: Operation[] = [{ type: 'attest', resource: `container:${d.container.name}`, cause: 'test', id: main, desired: d }];
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'attest', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: true, done: 0, outcome: 'attestation-failed' });
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['stop', 'stop', 'finish']);
    const rec = await store.get('att');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Failed', REASONS.attestationFailed]);
    expect(rec?.message).to.match(/elsewhere/);
    expect([(await fake.containers.inspect(main)).runState.running, (await fake.containers.inspect(sc.name)).runState.running]).to.deep.equal([false, false]);
  });

  it('a container gone before its start (404): Pending/CreateFailed with the start failure recorded', async function () {
    const d = desired('gone');
    await executor().run({ at: t, actions: [action(d, 'create')], unchanged: new Map() } as never);
    const id = (await store.get('gone'))?.containerId as string;
    await fake.containers.remove(id);
    const [res] = await executor().run({ at: t, actions: [action(d, 'start')], unchanged: new Map() } as never);
    expect(res?.ok).to.equal(false);
    expect(res?.error).to.match(/^start container:.*No such container.*\(HTTP 404\)/);
    const rec = await store.get('gone');
    expect([rec?.phase, rec?.reason, rec?.startFailure?.status, rec?.startFailure?.containerId]).to.deep.equal(['Pending', REASONS.createFailed, 404, id]);
    expect(fake.containerNames()).to.deep.equal([]);
  });

  it('a start the engine refuses (500): Pending/CreateFailed, the created container left for the planner', async function () {
    const d = desired('refused');
    fake.fail('containers.start', { status: 500, message: 'OCI runtime create failed' });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 3 });
    const rec = await store.get('refused');
    expect([rec?.phase, rec?.reason, rec?.startFailure?.status]).to.deep.equal(['Pending', REASONS.createFailed, 500]);
    expect(rec?.message).to.equal('OCI runtime create failed (HTTP 500)');
    expect((await fake.containers.inspect(d.container.name)).runState.status).to.equal('created');
  });

  it('a create that does not answer in time: Pending/CreateFailed naming the timeout, no start failure, no container', async function () {
    const d = desired('slow');
    fake.fail('containers.create', { timeoutMs: 5 });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 1 });
    const rec = await store.get('slow');
    expect([rec?.phase, rec?.reason, rec?.startFailure]).to.deep.equal(['Pending', REASONS.createFailed, undefined]);
    expect(rec?.message).to.match(/did not answer containers\.create within 5 ms/);
    expect(rec?.intent?.run).to.equal(1); // the intent stays: the next pass resumes this run
    expect(fake.containerNames()).to.deep.equal([]);
  });

  it('a start that does not answer in time is no start failure the engine reported', async function () {
    const d = desired('slow-start');
    fake.fail('containers.start', { timeoutMs: 5 });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 3 });
    const rec = await store.get('slow-start');
    expect([rec?.phase, rec?.reason, rec?.startFailure]).to.deep.equal(['Pending', REASONS.createFailed, undefined]);
  });

  it('a call that hangs holds only its own attempt: the others finish', async function () {
    const a = desired('hung');
    const b = desired('free');
    fake.fail('containers.create', { hang: true }, { when: (args) => (args[0] as { name: string }).name === a.container.name });
    const run = executor().run({ at: t, actions: [action(a, 'provision'), action(b, 'provision')], unchanged: new Map() } as never);
    const until = Date.now() + 5000;
    // both: the other attempt running, and the hung call in place (released before it is made, it would hang for ever)
    while (((await store.get('free'))?.phase !== 'Running' || fake.hanging === 0) && Date.now() < until) await new Promise((r) => setImmediate(r));
    expect((await store.get('free'))?.phase).to.equal('Running');
    expect(fake.hanging).to.equal(1);
    fake.releaseHangs();
    const res = await run;
    expect(res.map((r) => [r.attempt, r.ok])).to.deep.equal([
      ['hung', false],
      ['free', true],
    ]);
    expect((await store.get('hung'))?.reason).to.equal(REASONS.createFailed);
  });

  it('a secret that cannot be read: Blocked/SecretMissing, no container, the value never recorded', async function () {
    const d = desired('secret', { secrets: [{ name: 'tok', fromEnv: 'BERTH_UNIT_TOKEN' }] });
    const [res] = await executor({}).run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 1 });
    const rec = await store.get('secret');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Blocked', REASONS.secretMissing]);
    expect(rec?.message).to.equal("secret tok: environment variable BERTH_UNIT_TOKEN is not set in berth's environment");
    expect(fake.calls.filter((c) => c.op === 'containers.create')).to.deep.equal([]);
  });

  it("a backend that refuses what the attempt needs: Blocked with the backend's reason, nothing made", async function () {
    const d = desired('refuse');
    fake.fail('containers.create', { error: new BackendRefusedError(REASONS.nodeRefused, 'no swarm node may run attempt refuse: none enforces it') });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 1, outcome: 'refused' });
    const rec = await store.get('refuse');
    expect([rec?.phase, rec?.reason, rec?.message]).to.deep.equal(['Blocked', REASONS.nodeRefused, 'no swarm node may run attempt refuse: none enforces it']);
    expect(fake.calls.some((c) => c.op === 'containers.start')).to.equal(false);
  });

  it('a secret is copied in, never put in the create call', async function () {
    const d = desired('secret-ok', { secrets: [{ name: 'tok', fromEnv: 'BERTH_UNIT_TOKEN' }] });
    expect(provisionTypes(d)).to.deep.equal(['begin-run', 'create-container', 'copy-in', 'record-copied', 'start', 'attest-start']);
    const [res] = await executor({ BERTH_UNIT_TOKEN: 's3cr3t-value' }).run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 6 });
    expect(JSON.stringify(fake.calls.filter((c) => c.op === 'containers.create'))).to.not.include('s3cr3t-value');
    expect(fake.archivesOf(d.container.name).length).to.equal(1);
    expect(JSON.stringify(await store.get('secret-ok'))).to.not.include('s3cr3t-value');
  });

  it('a network name held by another instance blocks the attempt; the network is left alone', async function () {
    const d = desired('net', { network: { mode: 'isolated', egress: [] } });
    const net = d.network as NonNullable<DesiredAttempt['network']>;
    await fake.networks.create({ ...net, labels: { ...net.labels, [LABELS.instance]: 'other' } });
    const ops: Operation[] = [{ type: 'create-network', resource: `network:${net.name}`, cause: 'test', network: net }];
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: true, done: 0 });
    expect((await store.get('net'))?.reason).to.equal(REASONS.nameConflict);
    expect((await fake.networks.inspect(net.name)).labels[LABELS.instance]).to.equal('other');
  });

  it("a volume create of a name that exists (the engine answers with it) blocks when the volume is not the attempt's", async function () {
    const d = desired('vol', { volumes: [{ name: 'cache', mountPath: '/cache', readOnly: false }] as never });
    const vol = d.volumes[0] as DesiredAttempt['volumes'][number];
    await fake.volumes.create({ name: vol.name, labels: { mine: 'no' } });
    const ops: Operation[] = [{ type: 'create-volume', resource: `volume:${vol.name}`, cause: 'test', volume: vol }];
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: true, done: 0 });
    expect((await store.get('vol'))?.reason).to.equal(REASONS.nameConflict);
    expect((await fake.volumes.inspect(vol.name)).labels).to.deep.equal({ mine: 'no' });
  });

  it('a container gone before its fixture is copied (404 at putArchive): Pending/CreateFailed, nothing left', async function () {
    const fixture = path.join(dir, 'fixture');
    await fs.mkdir(fixture);
    await fs.writeFile(path.join(fixture, 'input.txt'), 'data');
    const d = desired('copy', { fixture, fixtureDigest: 'x', fixtureLayers: [{ path: fixture, digest: 'x' }] });
    fake.fail('containers.putArchive', { status: 404, message: 'No such container: gone' });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 2, outcome: 'not-found' });
    expect(res?.error).to.match(/^copy-in container:\S+: .*\(HTTP 404\)/);
    const rec = await store.get('copy');
    expect([rec?.phase, rec?.reason, rec?.intent?.copied]).to.deep.equal(['Pending', REASONS.createFailed, undefined]);
    expect(rec?.containerId).to.equal((await fake.containers.inspect(d.container.name)).id);
    expect(fake.calls.some((c) => c.op === 'containers.start')).to.equal(false);
  });

  it('a sidecar that exits at once fails the attempt (SidecarFailed); the main container is never made', async function () {
    const d = desired('side-dies', {
      network: { mode: 'isolated', egress: [] },
      sidecars: [{ name: 'db', image: IMAGE, command: null, env: {}, secretEnv: {}, secrets: [] }],
    });
    const sc = d.sidecars[0] as DesiredAttempt['sidecars'][number];
    const net = d.network as NonNullable<DesiredAttempt['network']>;
    fake.exitOnStart((n) => n === sc.name, 2);
    const ops: Operation[] = [
      { type: 'create-network', resource: `network:${net.name}`, cause: 'test', network: net },
      beginRunOp(d, FIRST_RUN),
      ...sidecarOps(d, 0, 'test'),
      { type: 'create-container', resource: `container:${d.container.name}`, cause: 'test', desired: d },
    ];
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: true, done: 4, outcome: 'not-ready' });
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['create-network', 'begin-run', 'create-sidecar', 'start-sidecar', 'finish']);
    const rec = await store.get('side-dies');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Failed', REASONS.sidecarFailed]);
    expect(rec?.message).to.equal('sidecar db exited right after its start (exit code 2)');
    expect(fake.containerNames()).to.deep.equal([sc.name]);
  });

  describe('a sidecar, one engine call per operation', function () {
    const withSecret = (name: string) =>
      desired(name, {
        network: { mode: 'isolated', egress: [] },
        secrets: [{ name: 'tok', fromEnv: 'BERTH_UNIT_TOKEN' }],
        sidecars: [{ name: 'db', image: IMAGE, command: null, env: {}, secretEnv: {}, secrets: ['tok'] }],
      });
    const run = (d: DesiredAttempt, ops: Operation[], env: NodeJS.ProcessEnv = { BERTH_UNIT_TOKEN: 's3cr3t-value' }) =>
      executor(env).run({ at: t, actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops, desired: d }], unchanged: new Map() } as never);
    /** The engine calls made on containers and networks from the first create on, and the container each addressed. */
    const engineCalls = (from: number) =>
      fake.calls.slice(from).map((c) => `${c.op} ${c.op === 'networks.connect' ? String(c.args[1]) : typeof c.args[0] === 'string' ? c.args[0] : ''}`.trim());

    it('create, copy its secrets, start, await ready: each its own call, on the id the create made', async function () {
      const d = withSecret('sc-calls');
      const sc = d.sidecars[0] as DesiredAttempt['sidecars'][number];
      await fake.networks.create(d.network as NonNullable<DesiredAttempt['network']>);
      const ops = sidecarOps(d, 0, 'test');
      expect(ops.map((o) => o.type)).to.deep.equal(['create-sidecar', 'copy-in-sidecar', 'start-sidecar', 'ready-sidecar']);
      const from = fake.calls.length;
      const [res] = await run(d, ops);
      expect(res).to.include({ ok: true, done: 4 });
      const calls = engineCalls(from);
      const id = (await fake.containers.inspect(sc.name)).id;
      expect(calls.filter((c) => !c.startsWith('containers.create'))).to.deep.equal([
        `images.inspect ${IMAGE}`,
        `containers.putArchive ${id}`,
        `containers.start ${id}`,
        `containers.inspect ${id}`,
      ]);
      expect(fake.archivesOf(id)).to.have.length(1);
    });

    it('the egress proxy: connected to the egress network, then waited for until it says it is listening', async function () {
      const d = desired('sc-proxy', { network: { mode: 'isolated', egress: ['api.example.com:443'] } });
      fake.addImage({ ref: d.sidecars[0]?.create.image as string });
      const proxy = d.sidecars[0] as DesiredAttempt['sidecars'][number];
      for (const n of [d.network, d.egressNetwork]) await fake.networks.create(n as NonNullable<DesiredAttempt['network']>);
      const ops = sidecarOps(d, 0, 'test');
      expect(ops.map((o) => o.type)).to.deep.equal(['create-sidecar', 'connect-sidecar', 'start-sidecar', 'ready-sidecar']);
      const from = fake.calls.length;
      const [made] = await run(d, ops.slice(0, 3));
      expect(made).to.include({ ok: true, done: 3 });
      const calls = engineCalls(from);
      const id = (await fake.containers.inspect(proxy.name)).id;
      expect(calls.filter((c) => !c.startsWith('containers.create'))).to.deep.equal([`networks.connect ${id}`, `containers.start ${id}`]);
      expect(fake.calls.find((c) => c.op === 'networks.connect')?.args[0]).to.equal((d.egressNetwork as { name: string }).name);
      fake.writeLog(proxy.name, `${JSON.stringify({ event: 'listening', port: 3128, allow: ['api.example.com:443'] })}\n`);
      const [res] = await run(d, ops.slice(3));
      expect(res).to.include({ ok: true, done: 1 });
    });

    it('a network gone before the connect (404): Pending/CreateFailed, nothing started', async function () {
      const d = desired('sc-net-gone', { network: { mode: 'isolated', egress: ['api.example.com:443'] } });
      fake.addImage({ ref: d.sidecars[0]?.create.image as string });
      await fake.networks.create(d.network as NonNullable<DesiredAttempt['network']>);
      const begin: Operation = beginRunOp(d, FIRST_RUN);
      const [res] = await run(d, [begin, ...sidecarOps(d, 0, 'test'), ...mainOps(d)]);
      expect(res).to.include({ ok: false, done: 2, outcome: 'not-found' });
      expect(res?.error).to.match(/^connect-sidecar container:\S+: /);
      const rec = await store.get('sc-net-gone');
      expect([rec?.phase, rec?.reason]).to.deep.equal(['Pending', REASONS.createFailed]);
      expect(fake.calls.some((c) => c.op === 'containers.start')).to.equal(false);
    });

    it('a secret gone between the create and its copy: the sidecar is removed, Blocked/SecretMissing', async function () {
      const d = withSecret('sc-secret-gone');
      await fake.networks.create(d.network as NonNullable<DesiredAttempt['network']>);
      let reads = 0;
      const env = Object.defineProperty({}, 'BERTH_UNIT_TOKEN', {
        enumerable: true,
        get: () => (reads++ === 0 ? 's3cr3t-value' : undefined),
      }) as NodeJS.ProcessEnv;
      const [res] = await run(d, sidecarOps(d, 0, 'test'), env);
      expect(res).to.include({ ok: true, done: 1, outcome: 'secret-missing' });
      expect(res?.ran.map((o) => o.type)).to.deep.equal(['create-sidecar', 'remove-container', 'record']);
      const rec = await store.get('sc-secret-gone');
      expect([rec?.phase, rec?.reason]).to.deep.equal(['Blocked', REASONS.secretMissing]);
      expect(fake.containerNames()).to.deep.equal([]);
      expect(JSON.stringify(rec)).to.not.include('s3cr3t-value');
    });

    it('a start the engine refuses (500) while the attempt runs: the action failed, nothing recorded, the main container untouched', async function () {
      const { d, sc, main } = await runningWithSidecar('sc-restart-500');
      await fake.containers.remove(sc.name);
      const before = await store.get('sc-restart-500');
      fake.fail('containers.start', { status: 500, message: 'OCI runtime create failed' });
      const [res] = await executor().run({ at: t, actions: [restartAction(d, sc, before)], unchanged: new Map() } as never);
      expect(res).to.include({ ok: false, done: 1, outcome: 'failed' });
      expect(res?.ran.map((o) => o.type)).to.deep.equal(['create-sidecar']);
      expect(await store.get('sc-restart-500')).to.deep.equal(before);
      expect((await fake.containers.inspect(main)).runState.running).to.equal(true);
    });

    it('made again while the attempt runs: running, and the restart noted in the record', async function () {
      const { d, sc, main } = await runningWithSidecar('sc-restarted');
      await fake.containers.remove(sc.name);
      const [res] = await executor().run({ at: t, actions: [restartAction(d, sc, await store.get('sc-restarted'))], unchanged: new Map() } as never);
      expect(res).to.include({ ok: true, done: 3 });
      expect((await fake.containers.inspect(sc.name)).runState.running).to.equal(true);
      const rec = await store.get('sc-restarted');
      expect([rec?.phase, rec?.warnings]).to.deep.equal(['Running', [`${new Date(t).toISOString()}: db was restarted while the attempt ran`]]);
      expect((await fake.containers.inspect(main)).runState.running).to.equal(true);
    });
  });

  it('a container gone before its deep attestation (404): the action failed, the record still says Running (the next plan finds it vanished)', async function () {
    const d = desired('att-gone');
    await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    const id = (await store.get('att-gone'))?.containerId as string;
    await fake.containers.remove(id);
    const ops: Operation[] = [{ type: 'attest', resource: `container:${d.container.name}`, cause: 'test', id, desired: d }];
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'attest', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: false, done: 0, outcome: 'not-found' });
    expect(res?.error).to.match(/^attest container:\S+: .*\(HTTP 404\)$/);
    expect(res?.ran).to.deep.equal([]);
    const rec = await store.get('att-gone');
    expect([rec?.phase, rec?.containerId]).to.deep.equal(['Running', id]);
  });

  it('a finish whose container is gone ends Failed/Lost', async function () {
    const d = desired('lost');
    await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    const id = (await store.get('lost'))?.containerId as string;
    await fake.containers.remove(id);
    const ops: Operation[] = [{ type: 'finish', resource: `container:${d.container.name}`, cause: 'test', id }];
    const [res] = await executor().run({
      at: t,
      actions: [{ attempt: d.name, kind: 'finish', summary: 'test', ops, desired: d }],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: true, done: 1 });
    const rec = await store.get('lost');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Failed', REASONS.lost]);
  });

  it('a finish reads the exit code and the engine times', async function () {
    const d = desired('ends');
    await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    const id = (await store.get('ends'))?.containerId as string;
    t += 7000;
    fake.exit(id, 3);
    t += 60_000; // berth looks later: the engine's FinishedAt counts, not berth's clock
    const ops: Operation[] = [{ type: 'finish', resource: `container:${d.container.name}`, cause: 'test', id }];
    await executor().run({ at: t, actions: [{ attempt: d.name, kind: 'finish', summary: 'test', ops, desired: d }], unchanged: new Map() } as never);
    const rec = await store.get('ends');
    expect([rec?.phase, rec?.reason, rec?.exitCode, rec?.startedAt, rec?.finishedAt]).to.deep.equal([
      'Failed',
      REASONS.error,
      3,
      '2030-01-01T00:00:00.000Z',
      '2030-01-01T00:00:07.000Z',
    ]);
  });

  it("an exit by SIGKILL whose OOM kill the engine reports after it (dockerd's race) is OOMKilled, not Error; a SIGKILL without one stays Error", async function () {
    const finishOf = async (name: string, exit: (id: string) => void) => {
      const d = desired(name);
      await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
      const id = (await store.get(name))?.containerId as string;
      exit(id);
      const ops: Operation[] = [{ type: 'finish', resource: `container:${d.container.name}`, cause: 'test', id }];
      await executor().run({ at: t, actions: [{ attempt: d.name, kind: 'finish', summary: 'test', ops, desired: d }], unchanged: new Map() } as never);
      const rec = await store.get(name);
      return [rec?.phase, rec?.reason, rec?.exitCode];
    };
    // the die first, without the flag; the oom event 50 ms later, while the finish looks
    expect(await finishOf('late-oom', (id) => fake.exit(id, 137, { oomKilled: true, oomAfterMs: 50 }))).to.deep.equal(['Failed', REASONS.oomKilled, 137]);
    expect(fake.calls.filter((c) => c.op === 'events.first')).to.have.length(1);
    expect(await finishOf('killed', (id) => fake.exit(id, 137))).to.deep.equal(['Failed', REASONS.error, 137]);
    // an exit other than SIGKILL's, or one the engine flagged, is not looked at again
    expect(await finishOf('flagged', (id) => fake.exit(id, 137, { oomKilled: true }))).to.deep.equal(['Failed', REASONS.oomKilled, 137]);
    expect(await finishOf('exit-1', (id) => fake.exit(id, 1))).to.deep.equal(['Failed', REASONS.error, 1]);
    expect(fake.calls.filter((c) => c.op === 'events.first')).to.have.length(2);
  });

  it("an event log that does not answer leaves the inspect's answer: the finish is not held (an engine whose event stream is down)", async function () {
    const d = desired('no-events');
    await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    const id = (await store.get('no-events'))?.containerId as string;
    fake.exit(id, 137);
    fake.fail('events.first', { hang: true });
    const ops: Operation[] = [{ type: 'finish', resource: `container:${d.container.name}`, cause: 'test', id }];
    await executor().run({ at: t, actions: [{ attempt: d.name, kind: 'finish', summary: 'test', ops, desired: d }], unchanged: new Map() } as never);
    const rec = await store.get('no-events');
    expect([rec?.phase, rec?.reason, rec?.exitCode]).to.deep.equal(['Failed', REASONS.error, 137]);
    // recorded while the event log's call still hangs: the finish did not wait for its answer
    expect(fake.hanging, 'the event log still unanswered').to.equal(1);
    fake.releaseHangs();
  });

  // One operation per engine call: a failure at each step of the main container's provisioning.

  it("begin-run: a run folder that exists already (not this run's) is never reused: Pending/CreateFailed, no engine call", async function () {
    const d = desired('taken-folder');
    await fs.mkdir(path.dirname(d.resultsDir), { recursive: true });
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 0, outcome: 'failed' });
    expect(res?.error).to.match(/^begin-run attempt:taken-folder: results folder .* already exists/);
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['record']);
    const rec = await store.get('taken-folder');
    expect([rec?.phase, rec?.reason, rec?.intent]).to.deep.equal(['Pending', REASONS.createFailed, undefined]);
    expect(fake.calls.filter((c) => c.op.startsWith('containers.'))).to.deep.equal([]);
  });

  it('begin-run: the run begins with the counters and the folder the planner gave it, as told', async function () {
    const d = desiredAttempt({ instance: I, policy: {} }, spec('told'), 2, path.join(dir, 'results', 'told', 'run-2', 'out'));
    // run 1 of the same spec, Failed: what the counters make of it is the planner's, not the executor's
    const before = {
      name: 'told',
      instance: I,
      phase: 'Failed' as const,
      reason: REASONS.error,
      specHash: d.hash,
      run: 1,
      retriesUsed: 0,
      startedAt: '2029-12-31T23:00:00.000Z',
      createdAt: '2029-12-31T23:00:00.000Z',
      history: [],
      updatedAt: '2029-12-31T23:00:00.000Z',
    };
    await store.put(before);
    await executor().run({
      at: t,
      actions: [
        {
          attempt: d.name,
          kind: 'retry',
          summary: 'test',
          ops: [beginRunOp(d, { counters: { retriesUsed: 5, infraRetriesUsed: 2 }, ownFolder: false })],
          desired: d,
        },
      ],
      unchanged: new Map(),
    } as never);
    const rec = await store.get('told');
    expect([rec?.run, rec?.retriesUsed, rec?.infraRetriesUsed, rec?.history.map((h) => `${h.run} ${h.phase}`)]).to.deep.equal([2, 5, 2, ['1 Failed']]);
    // a folder the planner says is the run's own already is found, not refused
    const own = desired('own-folder');
    await fs.mkdir(path.dirname(own.resultsDir), { recursive: true });
    const [res] = await executor().run({
      at: t,
      actions: [
        { attempt: own.name, kind: 'provision', summary: 'test', ops: [beginRunOp(own, { counters: { retriesUsed: 0 }, ownFolder: true })], desired: own },
      ],
      unchanged: new Map(),
    } as never);
    expect(res).to.include({ ok: true, done: 1 });
  });
  it('copy-in: a fixture swapped for a link after the create: the container is removed, Blocked/UnsafePath, none started', async function () {
    const fixture = path.join(dir, 'fixture');
    await fs.mkdir(fixture);
    await fs.writeFile(path.join(fixture, 'input.txt'), 'data');
    const d = desired('swapped', { fixture, fixtureDigest: 'x', fixtureLayers: [{ path: fixture, digest: 'x' }] });
    expect(provisionTypes(d)).to.deep.equal(['begin-run', 'create-container', 'copy-in', 'record-copied', 'start', 'attest-start']);
    // checked by the loader, then swapped for a link to a folder elsewhere: the copy reads it with no link followed
    await fs.rm(fixture, { recursive: true });
    await fs.mkdir(path.join(dir, 'elsewhere'));
    await fs.symlink(path.join(dir, 'elsewhere'), fixture);
    const [res] = await executor().run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 2, outcome: 'unsafe-path' });
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['begin-run', 'create-container', 'remove-container', 'record']);
    const rec = await store.get('swapped');
    expect([rec?.phase, rec?.reason, rec?.intent?.copied]).to.deep.equal(['Blocked', REASONS.unsafePath, undefined]);
    expect(rec?.message).to.match(/is a symbolic link/);
    expect(fake.containerNames()).to.deep.equal([]);
    expect(fake.calls.filter((c) => c.op === 'containers.putArchive' || c.op === 'containers.start')).to.deep.equal([]);
  });

  it('copy-in: a secret gone between the create and its copy: the container is removed, Blocked/SecretMissing', async function () {
    const d = desired('secret-gone', { secrets: [{ name: 'tok', fromEnv: 'BERTH_UNIT_TOKEN' }] });
    // read once for the create, gone when the copy reads it again
    let reads = 0;
    const env = Object.defineProperty({}, 'BERTH_UNIT_TOKEN', {
      enumerable: true,
      get: () => (reads++ === 0 ? 's3cr3t-value' : undefined),
    }) as NodeJS.ProcessEnv;
    const [res] = await executor(env).run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 2, outcome: 'secret-missing' });
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['begin-run', 'create-container', 'remove-container', 'record']);
    const rec = await store.get('secret-gone');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Blocked', REASONS.secretMissing]);
    expect(fake.containerNames()).to.deep.equal([]);
    expect(JSON.stringify(rec)).to.not.include('s3cr3t-value');
  });

  it('copy-in: a putArchive the engine refuses (500): Pending/CreateFailed, not copied, no start', async function () {
    const d = desired('copy-500', { secrets: [{ name: 'tok', fromEnv: 'BERTH_UNIT_TOKEN' }] });
    fake.fail('containers.putArchive', { status: 500, message: 'disk full' });
    const [res] = await executor({ BERTH_UNIT_TOKEN: 'v' }).run({ at: t, actions: [action(d, 'provision')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 2, outcome: 'failed' });
    const rec = await store.get('copy-500');
    expect([rec?.phase, rec?.reason, rec?.intent?.copied, rec?.startFailure]).to.deep.equal(['Pending', REASONS.createFailed, undefined, undefined]);
    expect(fake.calls.some((c) => c.op === 'containers.start')).to.equal(false);
  });

  it('record-copied: the boot the plan saw is recorded before the start, and no boot is looked up', async function () {
    const d = desired('planned-boot');
    const boot = { id: 'boot-of-the-plan', at: '2030-01-01T00:00:00.000Z' };
    const ops: Operation[] = [beginRunOp(d, FIRST_RUN), ...mainOps(d, boot)];
    // stop right after the copy is recorded: what a berth killed before the start leaves
    const upTo = ops.slice(
      0,
      ops.findIndex((o) => o.type === 'start'),
    );
    await executor().run({ at: t, actions: [{ attempt: d.name, kind: 'provision', summary: 'test', ops: upTo, desired: d }], unchanged: new Map() } as never);
    const rec = await store.get('planned-boot');
    expect([rec?.phase, rec?.intent?.copied, rec?.engineBoot]).to.deep.equal(['Pending', true, boot]);
    await executor().run({ at: t, actions: [action(d, 'start')], unchanged: new Map() } as never);
    expect((await store.get('planned-boot'))?.engineBoot).to.deep.equal(boot);
    expect(fake.calls.some((c) => c.op === 'boot')).to.equal(false);
  });

  it('start: with no boot in the record, the boot is looked up before the start is asked for', async function () {
    const d = desired('boot-first');
    await executor().run({ at: t, actions: [action(d, 'create')], unchanged: new Map() } as never);
    // a record with no boot (the plan knew none, as for an engine that cannot say)
    const { engineBoot: _boot, ...rec } = (await store.get('boot-first')) as NonNullable<Awaited<ReturnType<StatusStore['get']>>>;
    await store.put(rec);
    expect((await store.get('boot-first'))?.engineBoot).to.equal(undefined);
    fake.calls.length = 0;
    await executor().run({ at: t, actions: [action(d, 'start')], unchanged: new Map() } as never);
    const order = fake.calls.map((c) => c.op).filter((op) => op === 'boot' || op === 'containers.start');
    expect(order).to.deep.equal(['boot', 'containers.start']);
    expect((await store.get('boot-first'))?.engineBoot?.id).to.be.a('string');
  });

  it('attest-start: a container that fails its attestation right after its start is stopped, Failed/AttestationFailed', async function () {
    const d = desired('att-start');
    await executor().run({ at: t, actions: [action(d, 'create')], unchanged: new Map() } as never);
    const id = (await store.get('att-start'))?.containerId as string;
    const other = { name: 'elsewhere', labels: {}, internal: false };
    await fake.networks.create(other);
    await fake.networks.connect(other.name, id);
    const [res] = await executor().run({ at: t, actions: [action(d, 'start')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: true, done: 1, outcome: 'attestation-failed' });
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['start', 'stop', 'finish']);
    const rec = await store.get('att-start');
    expect([rec?.phase, rec?.reason]).to.deep.equal(['Failed', REASONS.attestationFailed]);
    expect(rec?.message).to.match(/elsewhere/);
    expect((await fake.containers.inspect(id)).runState.running).to.equal(false);
  });

  it('attest-start: a container gone right after its start (404): the action failed, no create failure recorded (the next plan finds it vanished)', async function () {
    const d = desired('gone-after-start');
    await executor().run({ at: t, actions: [action(d, 'create')], unchanged: new Map() } as never);
    const id = (await store.get('gone-after-start'))?.containerId as string;
    fake.fail('containers.inspect', { status: 404, message: `No such container: ${id}` });
    const [res] = await executor().run({ at: t, actions: [action(d, 'start')], unchanged: new Map() } as never);
    expect(res).to.include({ ok: false, done: 1, outcome: 'not-found' });
    expect(res?.error).to.match(/^attest-start container:\S+: .*\(HTTP 404\)/);
    expect(res?.ran.map((o) => o.type)).to.deep.equal(['start']);
    const rec = await store.get('gone-after-start');
    expect([rec?.phase, rec?.reason, rec?.startFailure, rec?.intent?.copied]).to.deep.equal(['Pending', REASONS.provisioning, undefined, true]);
  });
});

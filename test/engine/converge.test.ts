/** Converge on the real engine: observe → plan → execute, attestation and ownership. */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { containerName, LABELS, networkName } from '../../src/constants';
import { Executor } from '../../src/execute/executor';
import { plan } from '../../src/plan/planner';
import { changeCount } from '../../src/plan/render';
import { loadSpecs } from '../../src/spec/loader';
import { snapshot } from '../support/builders';
import { docker, requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { DesiredStates } from '../../src/plan/desired-for';

const SLEEP = 'sleep 300';

async function containerOf(sb: Sandbox, name: string) {
  const list = await docker.listContainers({
    all: true,
    filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=${name}`] }),
  });
  return list;
}

describe('converge (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('conv');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  // That a no-op pass costs the same at 3 and at 30 finished attempts: test/unit/cli/noop-pass.test.ts (fake engine).
  it('creates from nothing, then a second pass is a no-op with zero mutating calls', async function () {
    await sb.write('a.yaml', sb.attempt('a', SLEEP));
    await sb.write('sub/b.yaml', sb.attempt('b', SLEEP, '  network: {mode: isolated}\n  volumes: [{name: cache, mountPath: /cache}]\n'));
    const first = await sb.pass();
    expect(
      first.results.every((r) => r.ok),
      JSON.stringify(first.results),
    ).to.equal(true);
    expect((await sb.status('a'))?.phase).to.equal('Running');
    expect((await sb.status('b'))?.phase).to.equal('Running');
    const b = (await containerOf(sb, 'b'))[0];
    expect(Object.keys(b?.NetworkSettings.Networks ?? {})).to.deep.equal([networkName(sb.instance, 'b')]);

    const second = await sb.pass();
    expect(changeCount(second.plan)).to.equal(0);
    expect(sb.calls.mutating).to.equal(0);
    expect(sb.calls.snapshot()).to.deep.equal({ 'containers.list': 1, 'engine.boot': 1, 'images.list': 1, 'networks.list': 1, 'volumes.list': 1 });
    const plan = await sb.cli('plan', '--detailed-exitcode');
    expect(plan.code, plan.stderr).to.equal(0);
    expect(plan.stdout).to.match(/No changes: 2 attempts as specified/);
  });

  it('plan changes nothing (its engine refuses mutations) and tells pending from converged by exit code', async function () {
    await sb.write('a.yaml', sb.attempt('a', SLEEP));
    const plan = await sb.cli('plan', '--detailed-exitcode', '-o', 'json');
    expect(plan.code, plan.stderr).to.equal(4);
    const parsed = JSON.parse(plan.stdout) as { actions: { operations: { type: string; resource: string }[] }[] };
    expect(parsed.actions[0]?.operations.map((o) => o.type)).to.deep.equal(['begin-run', 'create-container', 'record-copied', 'start', 'attest-start']);
    expect(await containerOf(sb, 'a')).to.have.length(0);
  });

  it('replaces an attempt whose spec changed, keeping the earlier results', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'echo one > /results/out.txt'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    const first = await sb.status('a');
    expect(first?.phase).to.equal('Succeeded');
    await sb.write('a.yaml', sb.attempt('a', 'echo two > /results/out.txt'));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    const second = await sb.status('a');
    expect(second?.run).to.equal(2);
    expect(second?.history.map((h) => [h.run, h.phase])).to.deep.equal([[1, 'Succeeded']]);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'out.txt'), 'utf8')).to.equal('one\n');
    expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-2', 'results', 'out.txt'), 'utf8')).to.equal('two\n');
    expect(await containerOf(sb, 'a')).to.have.length(1);
  });

  it('collects an attempt whose spec was deleted: containers, networks, volumes; results stay', async function () {
    await sb.write('a.yaml', sb.attempt('a', 'echo hi > /results/x', '  network: {mode: isolated}\n  volumes: [{name: v, mountPath: /v}]\n'));
    expect((await sb.cli('reconcile', '--once', '--wait')).code).to.equal(0);
    await sb.remove('a.yaml');
    // The folder is empty now: only --allow-empty lets that remove anything (slips.test.ts).
    const r = await sb.cli('reconcile', '--once', '--allow-empty');
    expect(r.code, r.stderr).to.equal(0);
    const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] });
    expect(await docker.listContainers({ all: true, filters: f })).to.have.length(0);
    expect(await docker.listNetworks({ filters: f })).to.have.length(0);
    expect((await docker.listVolumes({ filters: f })).Volumes ?? []).to.have.length(0);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 'x'), 'utf8')).to.equal('hi\n');
  });

  it('leaves a running attempt untouched when its spec turns invalid, and another spec is invalid beside it', async function () {
    await sb.write('a.yaml', sb.attempt('a', SLEEP));
    await sb.pass();
    const before = (await containerOf(sb, 'a'))[0];
    await sb.write('a.yaml', sb.attempt('a', SLEEP, '  imagee: typo\n'));
    await sb.write('broken.yaml', 'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: [\n');
    const r = await sb.cli('reconcile', '--once');
    expect(r.code).to.equal(2);
    expect(r.stderr).to.match(/a\.yaml:\d+:\d+/);
    const after = (await containerOf(sb, 'a'))[0];
    expect(after?.Id).to.equal(before?.Id);
    expect(after?.State).to.equal('running');
    expect((await sb.status('a'))?.phase).to.equal('Running');
  });

  it('stops a running attempt connected to another network by hand: Failed/AttestationFailed, results kept', async function () {
    await sb.write('a.yaml', sb.attempt('a', `echo started > /results/s; ${SLEEP}`, '  network: {mode: isolated}\n'));
    await sb.pass();
    const c = (await containerOf(sb, 'a'))[0];
    await docker.getNetwork('bridge').connect({ Container: c?.Id });
    const res = await sb.pass();
    expect(res.plan.actions[0]?.summary).to.match(/attestation failed: attached to network bridge/);
    const st = await sb.status('a');
    expect(st?.phase).to.equal('Failed');
    expect(st?.reason).to.equal('AttestationFailed');
    expect((await docker.getContainer(c?.Id ?? '').inspect()).State.Running).to.equal(false);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'results', 's'), 'utf8')).to.equal('started\n');
    expect(JSON.parse(await fs.readFile(path.join(sb.resultsRoot, 'a', 'run-1', 'status.json'), 'utf8')).reason).to.equal('AttestationFailed');
  });

  it('blocks on a foreign container holding the name, and never touches it', async function () {
    const foreign = await docker.createContainer({
      name: containerName(sb.instance, 'a'),
      Image: TEST_IMAGE,
      Cmd: ['sleep', '300'],
      Labels: { [TEST_LABEL]: TEST_RUN },
    });
    const original = await foreign.inspect();
    try {
      await sb.write('a.yaml', sb.attempt('a', SLEEP));
      const r = await sb.cli('reconcile', '--once');
      expect(r.code).to.equal(0);
      const st = await sb.status('a');
      expect(st?.phase).to.equal('Blocked');
      expect(st?.message).to.match(/held by container .* berth did not create/);
      const still = await foreign.inspect();
      expect(still.State.Status).to.equal('created');
      expect(still.Config.Labels).to.deep.equal(original.Config.Labels);
      expect(still.Id).to.equal(original.Id);
      const clean = await sb.cli('clean');
      expect(clean.code).to.equal(0);
      expect((await foreign.inspect()).Id).to.equal(still.Id);
    } finally {
      await foreign.remove({ force: true });
    }
  });

  it('does not take a container for its own when berth labels come from the image', async function () {
    // An image that carries this instance's berth labels, and a container run from it by hand.
    const tag = `berth-test/labeled:${TEST_RUN}`;
    const base = await docker.createContainer({ Image: TEST_IMAGE, Cmd: ['true'], Labels: { [TEST_LABEL]: TEST_RUN } });
    await base.commit({
      repo: 'berth-test/labeled',
      tag: TEST_RUN,
      changes: [
        `LABEL ${LABELS.managed}=true ${LABELS.instance}=${sb.instance} ${LABELS.attempt}=a ${LABELS.component}=main ${LABELS.specHash}=x ${LABELS.run}=1`,
      ],
    });
    await base.remove({ force: true });
    const squatter = await docker.createContainer({
      name: containerName(sb.instance, 'a'),
      Image: tag,
      Cmd: ['sleep', '300'],
      Labels: { [TEST_LABEL]: TEST_RUN },
    });
    try {
      await squatter.start();
      await sb.write('a.yaml', sb.attempt('a', SLEEP));
      const r = await sb.cli('reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      expect((await sb.status('a'))?.phase).to.equal('Blocked');
      const clean = await sb.cli('clean');
      expect(clean.stdout).to.match(/removed 0 containers/);
      expect((await squatter.inspect()).State.Running).to.equal(true);
    } finally {
      await squatter.remove({ force: true });
      await docker.getImage(tag).remove({ force: true });
    }
  });

  it('meets its own existing container on create (409) and attests it instead of duplicating', async function () {
    await sb.write('a.yaml', sb.attempt('a', SLEEP));
    // Plan with an empty view of the engine, then let the container appear before executing.
    const first = await sb.pass();
    expect(first.results.every((r) => r.ok)).to.equal(true);
    const id = (await containerOf(sb, 'a'))[0]?.Id;
    // Lose the status record (as after a crash before it was written): the planner adopts...
    await fs.rm(path.join(sb.stateDir), { recursive: true, force: true });
    // (and its run folder, which a run without a record would otherwise step over: slips.test.ts)
    await fs.rm(path.join(sb.resultsRoot, 'a'), { recursive: true, force: true });
    // ...and a create racing it meets 409 and attests; simulate by running the provision action directly.
    const load = await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot });
    const p = plan({
      instance: sb.instance,
      policy: {},
      now: Date.now(),
      resultsRoot: sb.resultsRoot,
      specs: load.specs,
      protectedNames: new Set(),
      invalid: new Map(),
      unreadableFiles: new Set(),
      unreadableFolders: new Set(),
      snapshot: snapshot({}),
      statuses: new Map(),
      maxRunning: 8,
      attestIntervalMs: 60_000,
      desired: new DesiredStates(),
    });
    expect(p.actions[0]?.ops.map((o) => o.type)).to.deep.equal(['begin-run', 'create-container', 'record-copied', 'start', 'attest-start']);
    const cfg = sb.config();
    const res = await new Executor({ engine: sb.engine, store: sb.store(), instance: sb.instance, concurrency: 2, log: cfg.log, env: {} }).run(p);
    expect(res[0]?.ok, JSON.stringify(res)).to.equal(true);
    const all = await containerOf(sb, 'a');
    expect(all.map((c) => c.Id)).to.deep.equal([id]);
    expect((await sb.status('a'))?.phase).to.equal('Running');
  });

  it('clean removes every resource of the instance and says none remain', async function () {
    await sb.write('a.yaml', sb.attempt('a', SLEEP, '  network: {mode: isolated}\n  volumes: [{name: v, mountPath: /v}]\n'));
    await sb.write('b.yaml', sb.attempt('b', SLEEP));
    await sb.pass();
    const r = await sb.cli('clean');
    expect(r.code).to.equal(0);
    expect(r.stdout).to.match(/removed 2 containers, 1 network, 1 volume .* none remain/);
    const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] });
    expect(await docker.listContainers({ all: true, filters: f })).to.have.length(0);
  });
});

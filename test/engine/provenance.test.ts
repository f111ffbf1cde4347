/**
 * Provenance and preflight on the real engine: a missing image (`imagePullPolicy: Never`: as in
 * version 3; pulls are test/engine/images-pull.test.ts's) blocks an attempt before anything
 * is made and a tag made under its name unblocks it (a pass, and a running controller at the
 * image event); an AttemptSet's children all run the id pinned at its first child's create
 * although the tag moved meanwhile, and summary and describe say so; status.json, describe and
 * get -o wide show the id; --default-deadline ends a run without deadlineSeconds.
 * The images are the local test images, tagged under this run's own names and untagged after.
 * (That the controller looks again because of the image event, and not by a look it happened to
 * take after its own block, is pinned against the fake: test/unit/controller/controller.fake.test.ts.)
 */
import Ajv2020 from 'ajv/dist/2020';
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { LABELS, REASONS } from '../../src/constants';
import type { Summary } from '../../src/sets/summary';
import type { AttemptStatus } from '../../src/status/types';
import { startController } from '../support/controller';
import { docker, localRepoDigests, requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const PROXY_IMAGE = 'berth/egress-proxy:local';

/** A reference of this run's own (removed after), made from `source`. */
async function tag(source: string, ref: string): Promise<void> {
  const at = ref.lastIndexOf(':');
  await docker.getImage(source).tag({ repo: ref.slice(0, at), tag: ref.slice(at + 1) });
}

async function untag(ref: string): Promise<void> {
  // a tag only: the images keep their own names (noprune: nothing else goes)
  await docker
    .getImage(ref)
    .remove({ noprune: true })
    .catch((err: { statusCode?: number }) => {
      if (err.statusCode !== 404) throw err;
    });
}

/** `doc` against schemas/<name> (with the schemas it refers to); the errors when it does not match. */
async function schemaErrors(name: string, doc: unknown): Promise<unknown> {
  const dir = path.join(__dirname, '..', '..', 'schemas');
  const ajv = new Ajv2020({ allErrors: true, strict: true });
  for (const f of (await fs.readdir(dir)).filter((n) => n.endsWith('.schema.json'))) {
    ajv.addSchema(JSON.parse(await fs.readFile(path.join(dir, f), 'utf8')) as object, f);
  }
  const validate = ajv.getSchema(name);
  if (!validate) throw new Error(`no schema ${name}`);
  return validate(doc) ? null : validate.errors;
}

async function imageId(ref: string): Promise<string> {
  return (await docker.getImage(ref).inspect()).Id;
}

/** Images this run built, newest last: removed (with the untagged parents only they hold) after each test. */
const built: string[] = [];

/** `docker build -t ref` of `FROM from` with a label of this run's: the tag moves to the new image; its id. */
async function build(ref: string, from: string): Promise<string> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-prov-build-'));
  try {
    await fs.writeFile(path.join(dir, 'Dockerfile'), `FROM ${from}\nLABEL ${TEST_LABEL}=${TEST_RUN} dev.berth.prov-build=${Date.now()}-${built.length}\n`);
    const stream = await docker.buildImage({ context: dir, src: ['Dockerfile'] }, { t: ref, rm: true, forcerm: true });
    await new Promise<void>((resolve, reject) =>
      docker.modem.followProgress(stream, (err: Error | null, out: { error?: string }[]) => {
        const failed = err ?? out.find((o) => o.error);
        if (failed) reject(new Error(`build of ${ref}: ${failed instanceof Error ? failed.message : failed.error}`));
        else resolve();
      }),
    );
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
  const id = await imageId(ref);
  built.push(id);
  return id;
}

describe('provenance and preflight (real engine)', function () {
  this.timeout(120_000);
  before(requireEngine);

  let sb: Sandbox;
  const refs: string[] = [];
  const ref = (what: string) => {
    const r = `berth-test/${TEST_RUN}-${what}-${refs.length}:v1`.toLowerCase();
    refs.push(r);
    return r;
  };
  beforeEach(async function () {
    sb = await Sandbox.create('prov');
  });
  afterEach(async function () {
    await sb.destroy();
    for (const r of refs.splice(0)) await untag(r);
    // newest first: each one's parent is free once its child is gone
    for (const id of built.splice(0).reverse())
      await docker
        .getImage(id)
        .remove()
        .catch((err: { statusCode?: number }) => {
          if (err.statusCode !== 404) throw err;
        });
  });

  async function onEngine(): Promise<{ containers: number; networks: number; volumes: number }> {
    const f = { label: [`${LABELS.instance}=${sb.instance}`] };
    const [c, n, v] = await Promise.all([
      docker.listContainers({ all: true, filters: f }),
      docker.listNetworks({ filters: f }),
      docker.listVolumes({ filters: f }),
    ]);
    return { containers: c.length, networks: n.length, volumes: v.Volumes?.length ?? 0 };
  }

  it('a missing image: plan names it, a pass blocks the attempt with nothing made; a tag under its name lets the next pass run it', async function () {
    const missing = ref('missing');
    await sb.write(
      'a.yaml',
      `apiVersion: berth.dev/v1
kind: Attempt
metadata: {name: a}
spec:
  image: ${missing}
  imagePullPolicy: Never
  command: [sh, -c, 'echo hi']
  network: {mode: isolated}
  volumes: [{name: cache, mountPath: /cache}]
`,
    );
    const p = await sb.cli('plan');
    expect(p.code, p.stderr).to.equal(0);
    expect(p.stdout).to.contain(`Image ${missing} is not on the engine: 1 attempt blocked (ImageMissing): a`);
    const pj = JSON.parse((await sb.cli('plan', '-o', 'json')).stdout) as { missingImages: unknown };
    expect(pj.missingImages).to.deep.equal([{ image: missing, attempts: ['a'] }]);
    expect(await schemaErrors('plan-output.schema.json', pj)).to.equal(null);

    const once = await sb.cli('reconcile', '--once');
    expect(once.code, once.stderr).to.equal(0);
    const rec = await sb.status('a');
    expect(rec?.phase).to.equal('Blocked');
    expect(rec?.reason).to.equal(REASONS.imageMissing);
    expect(rec?.message).to.contain(missing);
    expect(await onEngine()).to.deep.equal({ containers: 0, networks: 0, volumes: 0 });
    // a second pass while it is still missing changes nothing
    await sb.cli('reconcile', '--once');
    expect((await sb.status('a'))?.updatedAt).to.equal(rec?.updatedAt);

    await tag(TEST_IMAGE, missing);
    const run = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60');
    expect(run.code, run.stderr).to.equal(0);
    const done = await sb.status('a');
    expect(done?.phase).to.equal('Succeeded');
    expect(done?.image).to.deep.include({ ref: missing, id: await imageId(TEST_IMAGE) });
  });

  it('a running controller unblocks an ImageMissing attempt at the image event (no resync)', async function () {
    const late = ref('late');
    await sb.write(
      'b.yaml',
      `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: b}\nspec:\n  image: ${late}\n  imagePullPolicy: Never\n  command: [sh, -c, 'echo hi']\n`,
    );
    const c = startController(sb, { resync: 3600 });
    try {
      const blocked = (r: AttemptStatus | undefined) => r?.phase === 'Blocked' && r.reason === REASONS.imageMissing;
      await waitFor('b Blocked/ImageMissing', async () => blocked(await sb.status('b')), { dirs: [sb.store().dir], timeoutMs: 30_000 });
      expect(await onEngine()).to.deep.equal({ containers: 0, networks: 0, volumes: 0 });
      await tag(TEST_IMAGE, late);
      const rec = await waitFor(
        'b Succeeded after the tag',
        async () => {
          const r = await sb.status('b');
          return r?.phase === 'Succeeded' ? r : undefined;
        },
        { dirs: [sb.store().dir], instance: sb.instance, timeoutMs: 30_000 },
      );
      expect(rec.image?.id).to.equal(await imageId(TEST_IMAGE));
    } finally {
      expect(await c.stop()).to.equal(0);
    }
  });

  it("a set's children all run the id pinned at its first create although the tag moved; summary and describe say it moved; status.json, describe, get -o wide show the id", async function () {
    const moving = ref('moving');
    await tag(TEST_IMAGE, moving);
    const first = await imageId(TEST_IMAGE);
    const other = await imageId(PROXY_IMAGE);
    expect(other).to.not.equal(first);
    // child a waits for a file the test writes; b runs at once; maxParallel 1: b is created after a ends
    await sb.write(
      'pin.yaml',
      `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: pin}
spec:
  matrix:
    x: [a, b]
  maxParallel: 1
  template:
    image: ${moving}
    command: [sh, -c, 'if [ \${{ matrix.x }} = a ]; then while [ ! -e /results/go ]; do sleep 0.1; done; fi; echo \${{ matrix.x }}']
`,
    );
    const once = await sb.cli('reconcile', '--once');
    expect(once.code, once.stderr).to.equal(0);
    const a = await sb.status('pin-a');
    expect(a?.phase).to.equal('Running');
    // as the engine lists them: a loaded image has none on the classic store, one per repository on the containerd store
    const digestsA = await localRepoDigests(first, [TEST_IMAGE, moving]);
    expect(a?.image).to.deep.equal({ ref: moving, id: first, repoDigests: digestsA, pinned: true });
    expect((await sb.status('pin-b'))?.reason).to.equal(REASONS.waitingForSet);
    const pins = JSON.parse(await fs.readFile(path.join(sb.stateDir, sb.instance, 'sets', 'pin.json'), 'utf8')) as { images: Record<string, { id: string }> };
    expect(pins.images[moving]?.id).to.equal(first);

    // the tag moves to another image between the first child's create and the second's
    await tag(PROXY_IMAGE, moving);
    expect(await imageId(moving)).to.equal(other);
    await fs.writeFile(path.join(a?.resultsDir as string, 'go'), '');
    const run = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60');
    expect(run.code, run.stderr).to.equal(0);

    const recs = await sb.store().loadAll();
    // b was made after the tag moved: its repo digests are the ones the pinned id has then
    const digests = { 'pin-a': digestsA, 'pin-b': await localRepoDigests(first, [TEST_IMAGE]) };
    for (const n of ['pin-a', 'pin-b'] as const) {
      const r = recs.get(n);
      expect(r?.phase, n).to.equal('Succeeded');
      expect(r?.image, n).to.deep.equal({ ref: moving, id: first, repoDigests: digests[n], pinned: true });
      const status = JSON.parse(await fs.readFile(path.join(path.dirname(r?.resultsDir as string), 'status.json'), 'utf8')) as AttemptStatus;
      expect(status.image?.id, `${n} status.json`).to.equal(first);
    }
    expect(await fs.readFile(path.join(path.dirname(recs.get('pin-b')?.resultsDir as string), 'logs.txt'), 'utf8')).to.contain('b');

    const sj = await sb.cli('summary', '-o', 'json');
    expect(sj.code, sj.stderr).to.equal(0);
    expect(await schemaErrors('summary-output.schema.json', JSON.parse(sj.stdout))).to.equal(null);
    const set = (JSON.parse(sj.stdout) as Summary).sets[0];
    expect(set?.image).to.deep.equal({ ref: moving, id: first, repoDigests: digestsA });
    expect(set?.children.map((c) => c.image?.id)).to.deep.equal([first, first]);
    expect(set?.tagMoved).to.deep.equal([{ set: 'pin', ref: moving, pinned: first, now: other }]);
    const st = await sb.cli('summary');
    expect(st.stdout).to.contain(`image ${moving} moved: set pin runs the pinned ${first}; the tag now names ${other}`);
    const d = await sb.cli('describe', 'pin-b');
    expect(d.stdout).to.contain(`Image id:       ${first} (pinned for set pin`);
    expect(d.stdout).to.contain(`image ${moving} moved`);
    const wide = await sb.cli('get', '-o', 'wide');
    expect(wide.stdout).to.contain('IMAGE ID');
    expect(wide.stdout).to.contain(`${first.slice(7, 19)} (pinned)`);
  });

  it('a pinned image that became an untagged parent (its tag rebuilt FROM it) is not missing: a child added after runs the pinned id', async function () {
    const rebuilt = ref('rebuilt');
    const parent = await build(rebuilt, TEST_IMAGE);
    const set = (xs: string[]) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: rb}
spec:
  matrix:
    x: [${xs.join(', ')}]
  template:
    image: ${rebuilt}
    command: [sh, -c, 'echo \${{ matrix.x }}']
`;
    await sb.write('rb.yaml', set(['a']));
    const first = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60');
    expect(first.code, first.stderr).to.equal(0);
    expect((await sb.status('rb-a'))?.image).to.deep.include({ ref: rebuilt, id: parent, pinned: true });
    // the tag is rebuilt FROM itself: the pinned image is now an untagged parent of the new one
    const child = await build(rebuilt, rebuilt);
    expect(child).to.not.equal(parent);
    expect((await docker.getImage(parent).inspect()).RepoTags ?? []).to.deep.equal([]);
    await sb.write('rb.yaml', set(['a', 'b']));
    const p = await sb.cli('plan');
    expect(p.stdout).to.not.contain('is not on the engine');
    const second = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60');
    expect(second.code, second.stdout + second.stderr).to.equal(0);
    const b = await sb.status('rb-b');
    expect(b?.phase, b?.message).to.equal('Succeeded');
    expect(b?.image).to.deep.include({ ref: rebuilt, id: parent, pinned: true });
    const s = (JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary).sets[0];
    expect(s?.tagMoved).to.deep.equal([{ set: 'rb', ref: rebuilt, pinned: parent, now: child }]);
  });

  it("an edit no child's spec hash reads (workspace.exclude) keeps the pin: a child added after runs the pinned id although the tag moved", async function () {
    const moving = ref('kept');
    await tag(TEST_IMAGE, moving);
    const first = await imageId(TEST_IMAGE);
    const set = (xs: string[], exclude: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: keep}
spec:
  matrix:
    x: [${xs.join(', ')}]
  template:
    image: ${moving}
    command: [sh, -c, 'echo \${{ matrix.x }} > out.txt']
    workspace: {exclude: [${exclude}]}
`;
    await sb.write('keep.yaml', set(['a'], 'dist'));
    const once = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60');
    expect(once.code, once.stderr).to.equal(0);
    const a = await sb.status('keep-a');
    expect(a?.image?.id).to.equal(first);
    const pinsFile = path.join(sb.stateDir, sb.instance, 'sets', 'keep.json');
    const pinned = JSON.parse(await fs.readFile(pinsFile, 'utf8')) as { pinKey: string; templateHash: string };
    // the tag moves; the template gains an exclude (outside every child's spec hash) and a value
    await tag(PROXY_IMAGE, moving);
    await sb.write('keep.yaml', set(['a', 'b'], 'dist, .pytest_cache'));
    const plan = await sb.cli('plan');
    expect(plan.stdout).to.not.contain('keep-a');
    const again = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60');
    expect(again.code, again.stderr).to.equal(0);
    // a is not run again, b is made from the id pinned at a's create
    expect((await sb.status('keep-a'))?.run).to.equal(1);
    expect((await sb.status('keep-a'))?.updatedAt).to.equal(a?.updatedAt);
    const b = await sb.status('keep-b');
    expect(b?.phase).to.equal('Succeeded');
    expect(b?.image).to.deep.include({ ref: moving, id: first, pinned: true });
    const now = JSON.parse(await fs.readFile(pinsFile, 'utf8')) as { pinKey: string; templateHash: string };
    expect(now.pinKey).to.equal(pinned.pinKey);
    expect(now.templateHash).to.equal(pinned.templateHash);
    const s = (JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary).sets[0];
    expect(s?.image?.id).to.equal(first);
  });

  it('--default-deadline ends a run whose spec sets no deadline (TimedOut); describe says where its deadline came from', async function () {
    await sb.write('slow.yaml', `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: slow}\nspec:\n  image: ${TEST_IMAGE}\n  command: [sleep, '60']\n`);
    const r = await sb.cli('reconcile', '--once', '--wait', '--timeout', '60', '--default-deadline', '2s');
    const rec = await sb.status('slow');
    expect(rec?.phase, r.stderr).to.equal('TimedOut');
    expect(rec?.deadlineSource).to.equal('default');
    expect(rec?.message).to.contain('--default-deadline');
    const d = await sb.cli('describe', 'slow');
    expect(d.stdout).to.match(/Deadline at: +\S+ \(from --default-deadline\)/);
    // no part of the spec hash: without the flag, nothing is to be replaced
    const p = await sb.cli('plan', '--detailed-exitcode');
    expect(p.code, p.stdout).to.equal(0);
  });
});

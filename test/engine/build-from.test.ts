/**
 * A build's FROM images go through berth's puller (docs/CONTRACT.md "Images built from a
 * Dockerfile": FROM images follow the pull policy and credentials of "Images from registries"),
 * against the real registry (test/support/registry.ts: TLS, bcrypt htpasswd): a private FROM image,
 * named through a meta ARG the spec's `args` set, is pulled by berth with the credential of
 * config.json (pulls.json records it for the run) and the build runs from it, with a second stage
 * FROM the first and a `FROM scratch` left alone; a FROM image the registry does not hold ends the
 * attempt Blocked/ImagePullBackOff with berth's own pull failure words (settled by --pull-retries,
 * exit 5), and no build is begun. The password is in no file berth wrote and no line it printed.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BUILD, LABELS, REASONS } from '../../src/constants';
import { docker, removeBuilt, requireEngine, TEST_RUN } from '../support/engine';
import { makeTestImage, removeImage, TestRegistry } from '../support/registry';
import { filesHolding } from '../support/files-holding';
import { Sandbox } from '../support/sandbox';

async function withDockerConfig<T>(dir: string, f: () => Promise<T>): Promise<T> {
  const was = process.env.DOCKER_CONFIG;
  process.env.DOCKER_CONFIG = dir;
  try {
    return await f();
  } finally {
    if (was === undefined) delete process.env.DOCKER_CONFIG;
    else process.env.DOCKER_CONFIG = was;
  }
}

const DOCKERFILE = [
  'ARG BASE=berth/busybox:local',
  'FROM scratch AS empty',
  'FROM ${BASE} AS base',
  'RUN echo from-base > /base.txt',
  'FROM base',
  'COPY --from=empty / /empty/',
  'COPY task.txt /task.txt',
  '',
].join('\n');

const attempt = (name: string, base: string) => `apiVersion: berth.dev/v1
kind: Attempt
metadata: {name: ${name}}
spec:
  build:
    context: ./task
    args: {BASE: "${base}"}
  command: [sh, -c, 'cat /base.txt /task.txt > /results/out.txt']
`;

describe('a build’s FROM images are pulled by berth (real registry, real engine)', function () {
  this.timeout(180_000);
  let reg: TestRegistry;
  let sb: Sandbox;
  let home: string;
  const local = `berth-test/${TEST_RUN}-base:1`;
  let ref: string;

  before(async function () {
    await requireEngine();
    reg = await TestRegistry.start();
    await makeTestImage(local, 256 * 1024);
    ref = await reg.push(local, 'evals/base:1');
    await removeImage(local);
  });
  after(async function () {
    if (ref) await removeImage(ref);
    await removeImage(local);
    await reg?.stop();
  });
  beforeEach(async function () {
    sb = await Sandbox.create('build-from');
    home = await fs.mkdtemp(path.join(os.tmpdir(), `berth-buildfrom-${TEST_RUN}-`));
    await fs.writeFile(path.join(home, 'config.json'), JSON.stringify({ auths: reg.authEntry() }));
    await removeImage(ref);
    await sb.write('task/Dockerfile', DOCKERFILE);
    await sb.write('task/task.txt', 'the task\n');
  });
  afterEach(async function () {
    await sb.destroy();
    await removeBuilt(sb);
    await removeImage(ref);
    await fs.rm(home, { recursive: true, force: true });
  });

  async function noPasswordAnywhere(outputs: string[]): Promise<void> {
    const pw = reg.user.password;
    expect(await filesHolding(sb.dir, pw), 'files berth wrote').to.deep.equal([]);
    for (const o of outputs) expect(o.includes(pw), 'command output').to.equal(false);
  }

  it('a private FROM image (through an ARG) is pulled by berth with the credential, then built from; the password is nowhere', async function () {
    await sb.write('a.yaml', attempt('b1', ref));
    const r = await withDockerConfig(home, () => sb.cli('reconcile', '--once', '--wait', '--timeout', '150'));
    expect(r.code, r.stderr).to.equal(0);
    const rec = await sb.status('b1');
    expect(rec?.phase, rec?.message).to.equal('Succeeded');
    const out = await fs.readFile(path.join(sb.resultsRoot, 'b1', 'run-1', 'results', 'out.txt'), 'utf8');
    expect(out).to.equal('from-base\nthe task\n');
    // berth's puller pulled it, for this run (pulls.json)
    const pulls = JSON.parse(await fs.readFile(path.join(sb.stateDir, sb.instance, 'pulls.json'), 'utf8')) as {
      pulls: Record<string, { pulled?: { id: string; for: string[] } }>;
    };
    expect(pulls.pulls[ref]?.pulled?.for).to.deep.equal(['b1#1']);
    const baseId = (await docker.getImage(ref).inspect()).Id;
    expect(pulls.pulls[ref]?.pulled?.id).to.equal(baseId);
    // the built image stands on it, and its build log shows no pull by the builder
    const built = await docker.getImage(rec?.image?.ref ?? '').inspect();
    const hash = built.Config.Labels?.[LABELS.build] as string;
    const log = await fs.readFile(path.join(sb.stateDir, BUILD.dir, `${hash}.log`), 'utf8');
    expect(log).to.contain('FROM ${BASE} AS base');
    expect(log).to.not.match(/Pulling from|Pulling fs layer/);
    // berth images lists the FROM image as one berth brought; the built image as built (berth pull leaves it out)
    const images = JSON.parse((await sb.cli('images', '-o', 'json')).stdout) as {
      images: { ref: string; state: string; broughtByBerth: boolean; policy: string }[];
    };
    expect(images.images.map((i) => [i.ref, i.state, i.broughtByBerth, i.policy])).to.deep.equal([
      [ref, 'Present', true, 'IfNotPresent'],
      [rec?.image?.ref, 'Present', true, 'built'],
    ]);
    await noPasswordAnywhere([r.stdout, r.stderr]);
  });

  it('a FROM image the registry lacks: Blocked/ImagePullBackOff with berth’s pull failure (not a builder error), settled by --pull-retries (exit 5), no build begun', async function () {
    const missing = `${reg.host}/evals/nope:1`;
    await sb.write('a.yaml', attempt('m1', missing));
    const r = await withDockerConfig(home, () => sb.cli('reconcile', '--once', '--wait', '--timeout', '120', '--pull-retries', '1'));
    expect(r.code, r.stderr).to.equal(5);
    const rec = await sb.status('m1');
    expect(rec?.phase).to.equal('Blocked');
    expect(rec?.reason).to.equal(REASONS.imagePullBackOff);
    expect(rec?.message).to.contain(`image ${missing} of the build: pull failed: not found: ${missing} is not in ${reg.host}`);
    expect(rec?.message).to.contain('given up after 1 failed pulls');
    // no build was begun: no build log, no build record
    const builds = await fs.readdir(path.join(sb.stateDir, BUILD.dir)).catch(() => [] as string[]);
    expect(builds).to.deep.equal([]);
    const desc = await sb.cli('describe', 'm1');
    expect(desc.stdout).to.contain(REASONS.imagePullBackOff);
    await noPasswordAnywhere([r.stdout, r.stderr, desc.stdout, desc.stderr]);
  });
});

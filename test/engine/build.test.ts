/**
 * Images built from a Dockerfile, on the real engine (docs/CONTRACT.md "Images built from a
 * Dockerfile"): a set sharing one Dockerfile builds once; two berths at once build once; an edit
 * in a context rebuilds and replaces exactly the children using it; a failed build names its line,
 * settles, and is built again only on rerun. Builds are tiny (FROM berth/busybox:local); every image
 * a test builds is removed by the test (the root hook counts images labeled dev.berth.build).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { BUILD, buildTag, LABELS, REASONS } from '../../src/constants';
import type { AttemptStatus } from '../../src/status/types';
import { docker, removeBuilt, requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

/** The builds the engine saw of `tag` since `since` (seconds): its image `tag` events. */
async function tagEvents(tag: string, since: number): Promise<number> {
  const until = Math.ceil(Date.now() / 1000) + 1;
  const stream = (await docker.getEvents({ since, until, filters: JSON.stringify({ type: ['image'], event: ['tag'] }) })) as unknown as AsyncIterable<Buffer>;
  let text = '';
  for await (const c of stream) text += String(c);
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as { Actor?: { Attributes?: Record<string, string> } })
    .filter((e) => e.Actor?.Attributes?.name === `${tag}:latest` || e.Actor?.Attributes?.name === tag).length;
}

const SET = (tasks: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: evals
spec:
  matrix:
    task: [${tasks}]
    seed: {range: [0, 2]}
  template:
    build:
      context: ./tasks/\${{ matrix.task }}
    command: [sh, -c, 'cat /task.txt > /results/out.txt']
`;

const DOCKERFILE = 'FROM berth/busybox:local\nCOPY task.txt /task.txt\nRUN test -s /task.txt\n';

describe('images built from a Dockerfile (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  const made: Sandbox[] = [];
  async function sandbox(tag: string): Promise<Sandbox> {
    const sb = await Sandbox.create(tag);
    made.push(sb);
    return sb;
  }
  afterEach(async function () {
    for (const sb of made.splice(0)) {
      await sb.destroy();
      await removeBuilt(sb);
    }
  });

  it('a set sharing one Dockerfile builds it once; an edit in a context rebuilds and replaces exactly the children using it', async function () {
    const sb = await sandbox('build-set');
    await sb.write('tasks/a/Dockerfile', DOCKERFILE);
    await sb.write('tasks/a/task.txt', 'task a');
    await sb.write('tasks/b/Dockerfile', DOCKERFILE);
    await sb.write('tasks/b/task.txt', 'task b');
    await sb.write('tasks/b/.dockerignore', '# notes are not sent\nnotes.md\n');
    await sb.write('evals.yaml', SET('a, b'));
    const since = Math.floor(Date.now() / 1000) - 1;
    const first = await sb.cli('reconcile', '--once', '--wait', '--max-running', '4');
    expect(first.code, first.stderr).to.equal(0);
    const recs = await sb.store().loadAll();
    expect([...recs.keys()].sort()).to.deep.equal(['evals-0-a', 'evals-0-b', 'evals-1-a', 'evals-1-b']);
    for (const r of recs.values()) expect(r.phase, r.name).to.equal('Succeeded');
    const loaded = JSON.parse((await sb.cli('get', '-o', 'json')).stdout) as { items: { metadata: { name: string }; spec?: { image?: string } }[] };
    const images = new Map(loaded.items.map((i) => [i.metadata.name, i.spec?.image ?? '']));
    const [tagA, tagB] = [images.get('evals-0-a') as string, images.get('evals-0-b') as string];
    expect(tagA).to.match(new RegExp(`^${BUILD.repository}/[0-9a-f]{16}$`));
    expect(images.get('evals-1-a')).to.equal(tagA);
    expect(tagB).to.not.equal(tagA);
    // one build per context, whatever the number of children
    expect(await tagEvents(tagA, since)).to.equal(1);
    expect(await tagEvents(tagB, since)).to.equal(1);
    const out = await fs.readFile(path.join(sb.resultsRoot, 'evals-0-a', 'run-1', 'results', 'out.txt'), 'utf8');
    expect(out).to.equal('task a');
    const hashA = (await docker.getImage(tagA).inspect()).Config.Labels?.[LABELS.build] as string;
    expect(buildTag(hashA)).to.equal(tagA);
    const log = await fs.readFile(path.join(sb.stateDir, BUILD.dir, `${hashA}.log`), 'utf8');
    expect(log).to.contain('Step 2/4 : COPY task.txt /task.txt');
    // describe says what was built from where, and with which builder
    const described = await sb.cli('describe', 'evals-0-a');
    expect(described.stdout).to.match(
      new RegExp(`Build: +${tagA} from .*tasks/a \\(Dockerfile\\), build hash ${hashA.slice(0, 16)}: built .* by the engine's classic builder`),
    );

    // a file .dockerignore leaves out changes nothing; an edit in a's context rebuilds a and replaces a's children alone
    await sb.write('tasks/b/notes.md', 'ignored');
    await sb.write('tasks/a/notes.md', 'not ignored in a');
    const since2 = Math.floor(Date.now() / 1000) - 1;
    const plan = await sb.cli('plan');
    expect(plan.stdout).to.contain('evals-0-a').and.to.contain('evals-1-a');
    expect(plan.stdout).to.contain(`is built first: 2 attempts wait (Building): evals-0-a, evals-1-a`);
    const second = await sb.cli('reconcile', '--once', '--wait', '--max-running', '4');
    expect(second.code, second.stderr).to.equal(0);
    const after = await sb.store().loadAll();
    const runOf = (m: Map<string, AttemptStatus>, n: string) => m.get(n)?.run;
    expect(['evals-0-a', 'evals-1-a', 'evals-0-b', 'evals-1-b'].map((n) => runOf(after, n))).to.deep.equal([2, 2, 1, 1]);
    const specs2 = JSON.parse((await sb.cli('get', '-o', 'json')).stdout) as { items: { metadata: { name: string }; spec?: { image?: string } }[] };
    const tagA2 = specs2.items.find((i) => i.metadata.name === 'evals-0-a')?.spec?.image as string;
    expect(tagA2).to.not.equal(tagA);
    expect(await tagEvents(tagA2, since2)).to.equal(1);
  });

  it('two berths at once build once', async function () {
    const one = await sandbox('build-two-a');
    const two = await sandbox('build-two-b');
    const spec = (name: string) =>
      `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${name}}\nspec:\n  build: {context: ./env}\n  command: [sh, -c, 'cat /stamp > /results/out.txt']\n`;
    for (const [sb, name] of [
      [one, 'first'],
      [two, 'second'],
    ] as const) {
      // the same context in two specs folders: one build hash
      await sb.write('env/Dockerfile', `FROM berth/busybox:local\nRUN sleep 2 && echo ${one.instance} > /stamp\n`);
      await sb.write('a.yaml', spec(name));
    }
    const since = Math.floor(Date.now() / 1000) - 1;
    const [r1, r2] = await Promise.all([one.cli('reconcile', '--once', '--wait'), two.cli('reconcile', '--once', '--wait')]);
    expect(r1.code, r1.stderr).to.equal(0);
    expect(r2.code, r2.stderr).to.equal(0);
    const image = (JSON.parse((await one.cli('get', 'first', '-o', 'json')).stdout) as { spec: { image: string } }).spec.image;
    expect(await tagEvents(image, since)).to.equal(1);
    // both ran the one image
    for (const [sb, name] of [
      [one, 'first'],
      [two, 'second'],
    ] as const)
      expect(await fs.readFile(path.join(sb.resultsRoot, name, 'run-1', 'results', 'out.txt'), 'utf8')).to.equal(`${one.instance}\n`);
    // no build lock left behind
    const locks = await docker.listVolumes({ filters: JSON.stringify({ label: ['dev.berth.build-lock'] }) });
    expect(
      (locks.Volumes ?? []).filter((v) => v.Name.startsWith(BUILD.lockPrefix) && v.Labels?.['dev.berth.build-lock.instance']?.startsWith(one.instance)),
    ).to.deep.equal([]);
  });

  it('a failed build is Blocked/BuildFailed naming its Dockerfile line and last output, settles (exit 5), and is built again only on rerun', async function () {
    const sb = await sandbox('build-fail');
    await sb.write('env/Dockerfile', 'FROM berth/busybox:local\n# a comment\nRUN echo first line && echo second line && exit 3\nRUN true\n');
    await sb.write('a.yaml', `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: broken}\nspec:\n  build: {context: ./env}\n  command: ['true']\n`);
    const danglingBefore = (await docker.listImages({ filters: JSON.stringify({ dangling: ['true'] }) })).length;
    const first = await sb.cli('reconcile', '--once', '--wait');
    expect(first.code, first.stderr).to.equal(5);
    const rec = await sb.status('broken');
    expect(rec?.phase).to.equal('Blocked');
    expect(rec?.reason).to.equal(REASONS.buildFailed);
    expect(rec?.message).to.contain('Dockerfile line 3 (RUN echo first line && echo second line && exit 3)');
    expect(rec?.message).to.contain('returned a non-zero code: 3');
    expect(rec?.message).to.contain('last output: first line | second line');
    const image = (JSON.parse((await sb.cli('get', 'broken', '-o', 'json')).stdout) as { spec: { image: string } }).spec.image;
    const hash = (
      JSON.parse(
        await fs.readFile(
          path.join(sb.stateDir, BUILD.dir, `${(await fs.readdir(path.join(sb.stateDir, BUILD.dir))).find((f) => f.endsWith('.json'))}`),
          'utf8',
        ),
      ) as { hash: string; at: string }
    ).hash;
    expect(buildTag(hash)).to.equal(image);
    const recordAt = async () => (JSON.parse(await fs.readFile(path.join(sb.stateDir, BUILD.dir, `${hash}.json`), 'utf8')) as { at: string }).at;
    const at1 = await recordAt();
    // nothing of the failed build stays on the engine
    expect((await docker.listImages({ filters: JSON.stringify({ dangling: ['true'] }) })).length).to.be.at.most(danglingBefore);
    // not tried again: another run (a restarted berth) reads the failure
    const again = await sb.cli('reconcile', '--once', '--wait');
    expect(again.code).to.equal(5);
    expect(await recordAt()).to.equal(at1);
    const logs = await sb.cli('logs', '--build', 'broken');
    expect(logs.code, logs.stderr).to.equal(0);
    expect(logs.stdout, logs.stdout).to.contain('Step 2/4 : RUN echo first line');
    // berth rerun asks again: built again (and fails again)
    const rerun = await sb.cli('rerun', 'broken');
    expect(rerun.code, rerun.stderr).to.equal(0);
    const third = await sb.cli('reconcile', '--once', '--wait');
    expect(third.code).to.equal(5);
    expect(await recordAt()).to.not.equal(at1);
    expect((await sb.status('broken'))?.reason).to.equal(REASONS.buildFailed);
  });
});

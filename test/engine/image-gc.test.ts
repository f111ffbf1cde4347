/**
 * Image GC on the real engine (docs/CONTRACT.md "Images berth brought are collected"). The shared
 * engine's data root is forced over the mark by the marks themselves (--image-gc-high 1,
 * --image-gc-low 0: any data root in use is above 1 %, and nothing short of every candidate
 * brings it to 0 %), so one round removes every image it may: exactly the images this instance
 * built for attempts that are final. Kept: the image of a running child, the image of a child
 * Pending for a slot (both built, the set's template changed after), an image another berth
 * instance built (labeled as berth's builds are), and the images berth runs itself. Builds are
 * FROM berth/busybox:local: nothing is downloaded.
 */
import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { buildTag, LABELS } from '../../src/constants';
import { readRemovedImages } from '../../src/controller/image-gc';
import { createLogger } from '../../src/util/log';
import { startController } from '../support/controller';
import { writeBuildRecord } from '../../src/build/records';
import { docker, removeBuilt, requireEngine, TEST_LABEL, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const held = async (ref: string): Promise<boolean> =>
  docker
    .getImage(ref)
    .inspect()
    .then(() => true)
    .catch(() => false);

const attempt = (name: string, ctx: string) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${name}}\nspec:\n  build: {context: ./${ctx}}\n  command: ['true']\n  ttlSecondsAfterFinished: 0\n`;

const SET = (command: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: live
spec:
  matrix:
    task: [c, d]
  template:
    build:
      context: ./tasks/\${{ matrix.task }}
    command: [sh, -c, '${command}']
`;

describe('image GC (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  let foreign: string | undefined;
  afterEach(async function () {
    await sb?.destroy();
    if (sb) await removeBuilt(sb);
    if (foreign) await docker.getImage(foreign).remove({ force: true });
    foreign = undefined;
  });

  it('removes exactly the images berth built for final attempts; keeps a running and a Pending child’s, another instance’s, its own', async function () {
    sb = await Sandbox.create('image-gc');
    for (const t of ['a', 'b', 'tasks/c', 'tasks/d']) {
      await sb.write(`${t}/Dockerfile`, `FROM berth/busybox:local\nRUN echo ${t} ${sb.instance} > /stamp\n`);
    }
    await sb.write('a.yaml', attempt('a', 'a'));
    await sb.write('b.yaml', attempt('b', 'b'));
    await sb.write('live.yaml', SET('true'));
    const first = await sb.cli('reconcile', '--once', '--wait');
    expect(first.code, first.stderr).to.equal(0);
    const specs = JSON.parse((await sb.cli('get', '-o', 'json')).stdout) as { items: { metadata: { name: string }; spec: { image: string } }[] };
    const tag = (n: string) => specs.items.find((i) => i.metadata.name === n)?.spec.image as string;
    const [a, b, c, d] = [tag('a'), tag('b'), tag('live-c'), tag('live-d')];
    for (const t of [a, b, c, d]) expect(await held(t), t).to.equal(true);

    // another berth instance's build: labeled as berth labels its builds, with no record of this instance's (the test's label: the leak check finds it)
    const hash = createHash('sha256').update(`foreign ${sb.instance}`).digest('hex');
    foreign = buildTag(hash);
    const dir = path.join(sb.dir, 'foreign');
    await fs.mkdir(dir, { recursive: true });
    await fs.writeFile(path.join(dir, 'Dockerfile'), `FROM berth/busybox:local\nRUN echo ${sb.instance} > /foreign\n`);
    execFileSync('docker', ['build', '-q', '-t', foreign, '--label', `${LABELS.build}=${hash}`, '--label', `${TEST_LABEL}=${TEST_RUN}`, dir], {
      stdio: 'ignore',
    });
    // its record in the shared state folder names the other instance (this very image)
    const fid = (await docker.getImage(foreign).inspect()).Id;
    await writeBuildRecord(sb.stateDir, {
      hash,
      tag: foreign,
      state: 'built',
      at: new Date().toISOString(),
      id: fid,
      builder: 'classic',
      context: dir,
      dockerfile: 'Dockerfile',
      instance: `${sb.instance}-other`,
    });

    // the set's children are to run again (a new template: not final), one slot: one runs, the other is Pending
    await sb.write('live.yaml', SET('sleep 600'));
    const ctl = startController(
      sb,
      { maxRunning: 1, imageGcHigh: 1, imageGcLow: 0, imageGcMinAge: 0 },
      undefined,
      process.env.B50_DEBUG ? createLogger({ level: 'debug' }) : undefined,
    );
    try {
      // gone from the engine, and recorded (the round writes its removals once it ends)
      const recorded = () => readRemovedImages(sb.stateDir, sb.instance).filter((r) => r.ref === a || r.ref === b).length === 2;
      const gone = await waitFor('image GC to remove a and b', async () => ((await held(a)) || (await held(b)) || !recorded() ? undefined : true), {
        instance: sb.instance,
        dirs: [path.join(sb.stateDir, sb.instance)],
        timeoutMs: 60_000,
      });
      expect(gone).to.equal(true);
      const phases = await waitFor(
        'one child running, the other Pending',
        async () => {
          const p = [(await sb.status('live-c'))?.phase, (await sb.status('live-d'))?.phase].sort();
          return p[0] === 'Pending' && p[1] === 'Running' ? p : undefined;
        },
        { instance: sb.instance, dirs: [path.join(sb.stateDir, sb.instance)], timeoutMs: 60_000 },
      );
      expect(phases).to.deep.equal(['Pending', 'Running']);
      for (const t of [c, d, foreign, 'berth/busybox:local', 'berth/egress-proxy:local']) expect(await held(t), t).to.equal(true);
      const events = await sb.cli('events');
      expect(events.stdout).to.contain(`ImageRemoved`).and.to.contain(`image/${a}`).and.to.contain(`image/${b}`);
      expect(events.stdout).to.not.contain(`image/${c}`);
      const images = JSON.parse((await sb.cli('images', '-o', 'json')).stdout) as {
        images: { ref: string; state: string; detail?: string; broughtByBerth: boolean }[];
      };
      const row = (r: string) => images.images.find((i) => i.ref === r);
      expect(row(a)?.state).to.equal('Missing');
      expect(row(a)?.detail).to.match(/^removed by image GC /);
      expect(row(c)).to.deep.include({ state: 'Present', broughtByBerth: true });
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });
});

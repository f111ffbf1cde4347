/**
 * Image GC against a real disk (docs/CONTRACT.md "Images berth brought are collected"): a private
 * engine (test/support/private-engine.ts) whose data root is a small xfs file system of the
 * test's own on a loop device (test/support/loop-fs.ts). berth builds four images there (each
 * writes 40 MiB), two for attempts that finish, two for attempts that hold the one slot (running)
 * and wait for it (Pending); then the test fills the file system past the mark with a file of its
 * own, and a controller with --image-gc-high 70 / --image-gc-low 50 removes exactly the two
 * images of the finished attempts, because the disk is full (the same controller below the mark
 * removed nothing), and keeps the running child's, the Pending child's and the image berth did not
 * bring (busybox, FROM). Everything goes after, also on failure: the engine by its pid, its
 * containers with it, the mount, the loop device, the files.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { readRemovedImages } from '../../src/controller/image-gc';
import { createDockerEngine } from '../../src/engine/docker';
import type { Engine } from '../../src/engine/types';
import { startController, type RunningController } from '../support/controller';
import { requireEngine, TEST_RUN } from '../support/engine';
import { LoopFs } from '../support/loop-fs';
import { PrivateEngine } from '../support/private-engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const run = promisify(execFile);

const attempt = (name: string, ctx: string, command: string, ttl: boolean) =>
  `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${name}}\nspec:\n  build: {context: ./${ctx}}\n  command: [sh, -c, '${command}']\n` +
  (ttl ? '  ttlSecondsAfterFinished: 0\n' : '') +
  '---\n';

/** The file system's use as berth reads it: (size − available) / size, in percent. */
async function usedPercent(at: string): Promise<number> {
  const s = await fs.statfs(at);
  return ((s.blocks - s.bavail) / s.blocks) * 100;
}

describe('image GC on a real disk (private engine, xfs data root on a loop device)', function () {
  this.timeout(240_000);
  before(requireEngine);

  const pe = new PrivateEngine('imggc');
  const dataRoot = path.join(pe.root, 'data');
  const data = new LoopFs(`/tmp/bd-${TEST_RUN}-imggc.img`, dataRoot);
  let sb: Sandbox | undefined;
  let engine: Engine;
  before(async function () {
    await data.make('xfs', '512M');
    await pe.start();
    await pe.importImage();
    engine = createDockerEngine(pe.docker);
    sb = await Sandbox.create('imggc');
  });
  after(async function () {
    await pe.destroy();
    await data.remove();
    await fs.rm(pe.root, { recursive: true, force: true });
    if (sb) await fs.rm(sb.dir, { recursive: true, force: true });
  });

  const held = async (ref: string): Promise<boolean> =>
    pe.docker
      .getImage(ref)
      .inspect()
      .then(() => true)
      .catch(() => false);

  it('with the disk over the mark, removes exactly the images of the finished attempts; keeps the running and the Pending child’s and busybox', async function () {
    const s = sb as Sandbox;
    for (const t of ['a', 'b', 'c', 'd'])
      await s.write(`${t}/Dockerfile`, `FROM berth/busybox:local\nRUN dd if=/dev/zero of=/blob bs=1M count=40 2>/dev/null && echo ${t} > /stamp\n`);
    await s.write('a.yaml', attempt('a', 'a', 'true', true) + attempt('b', 'b', 'true', true));
    // one slot: whichever of c and d is admitted first runs, the other waits Pending for the slot
    await s.write('live.yaml', attempt('c', 'c', 'sleep 600', false) + attempt('d', 'd', 'sleep 600', false));
    const dirs = [path.join(s.stateDir, s.instance)];
    const phases = async () => Object.fromEntries(await Promise.all(['a', 'b', 'c', 'd'].map(async (n) => [n, (await s.status(n))?.phase ?? '-'] as const)));
    const settledShape = async () => {
      const p = await phases();
      return p.a === 'Succeeded' && p.b === 'Succeeded' && [p.c, p.d].sort().join() === 'Pending,Running' ? p : undefined;
    };
    const gc = { maxRunning: 1, imageGcHigh: 70, imageGcLow: 50, imageGcMinAge: 0 };
    // below the mark: the same controller removes nothing
    let ctl: RunningController = startController(s, gc, engine);
    let tags: Record<string, string>;
    try {
      await waitFor('a and b Succeeded, one of c and d Running, the other Pending', settledShape, { instance: s.instance, dirs, timeoutMs: 120_000 });
      const specs = JSON.parse((await s.cli('get', '-o', 'json')).stdout) as { items: { metadata: { name: string }; spec: { image: string } }[] };
      tags = Object.fromEntries(specs.items.map((i) => [i.metadata.name, i.spec.image]));
      // the Pending child's image is built while it waits for the slot
      await waitFor(
        'the four images built',
        async () => {
          for (const n of ['a', 'b', 'c', 'd']) if (!(await held(tags[n] as string))) return undefined;
          return true;
        },
        { instance: s.instance, dirs, timeoutMs: 60_000 },
      );
      expect(await usedPercent(dataRoot)).to.be.below(70);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    expect(readRemovedImages(s.stateDir, s.instance)).to.deep.equal([]);

    // the disk forced over the mark: a file of the test's own fills it to 78 % (below the disk-pressure mark, 10 % free)
    const st = await fs.statfs(dataRoot);
    const want = Math.ceil(st.blocks * 0.78) - (st.blocks - st.bavail);
    await run('fallocate', ['-l', String(want * st.bsize), path.join(dataRoot, `berth-test-filler-${TEST_RUN}`)]);
    const over = await usedPercent(dataRoot);
    expect(over).to.be.above(70);

    ctl = startController(s, gc, engine);
    try {
      await waitFor(
        'image GC to remove the images of a and b',
        async () => ((await held(tags.a as string)) || (await held(tags.b as string)) ? undefined : true),
        {
          instance: s.instance,
          dirs,
          timeoutMs: 90_000,
        },
      );
      expect(await settledShape(), JSON.stringify(await phases())).to.not.equal(undefined);
      for (const t of [tags.c as string, tags.d as string, 'berth/busybox:local']) expect(await held(t), t).to.equal(true);
      // what the removals freed is real: the file system's use fell by at least the two 40 MiB layers
      // (xfs frees an unlinked file's blocks in the background: statfs may lag the removal under load)
      const fallen = over - (2 * 40 * 1024 * 1024 * 100) / (st.blocks * st.bsize) + 1;
      await waitFor("the data root's use to fall by the two layers", async () => (await usedPercent(dataRoot)) < fallen, { timeoutMs: 60_000 });
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    // the removals, as recorded (written once the round ends)
    expect(
      readRemovedImages(s.stateDir, s.instance)
        .map((r) => r.ref)
        .sort(),
    ).to.deep.equal([tags.a, tags.b].sort());
    const events = await s.cli('events');
    expect(events.stdout).to.contain('ImageRemoved').and.to.contain(`image/${tags.a}`).and.to.contain(`image/${tags.b}`);
    expect(events.stdout).to.not.contain(`image/${tags.c}`).and.to.not.contain(`image/${tags.d}`);
  });
});

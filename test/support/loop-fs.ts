/**
 * A file system of its own on a loop device, for a private engine's data root (the disk-limit
 * tests: disk-xfs, disk-btrfs): a sparse image file (the host's disk holds only what is written
 * into it), made into `type` and mounted at `at`. `remove()` undoes each step that was done, in
 * reverse, also after a failure half way: the mount, the loop device, the image file.
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { TEST_RUN } from './engine';
import { PrivateEngine } from './private-engine';
import { Sandbox } from './sandbox';

const run = promisify(execFile);

export class LoopFs {
  private loop: string | undefined;
  private mounted = false;

  constructor(
    readonly image: string,
    readonly at: string,
  ) {}

  /** Makes the image (`size` for truncate: 1G), its loop device, the file system (`mkfs.<type>`) and mounts it. */
  async make(type: 'xfs' | 'btrfs', size = '1G', mountOptions: string[] = []): Promise<void> {
    // the tools come from Debian's xfsprogs and btrfs-progs, installed by the project's script when missing
    await run(path.resolve(__dirname, '..', '..', 'scripts', 'fs-up.sh'));
    await run('truncate', ['-s', size, this.image]);
    this.loop = (await run('losetup', ['--find', '--show', this.image])).stdout.trim();
    await run(`mkfs.${type}`, ['-q', this.loop]);
    await fs.mkdir(this.at, { recursive: true });
    await run('mount', [...(mountOptions.length ? ['-o', mountOptions.join(',')] : []), this.loop, this.at]);
    this.mounted = true;
  }

  async remove(): Promise<void> {
    if (this.mounted) await run('umount', [this.at]).catch(() => undefined);
    this.mounted = false;
    if (this.loop) await run('losetup', ['-d', this.loop]).catch(() => undefined);
    this.loop = undefined;
    await fs.rm(this.image, { force: true });
  }
}

/**
 * Mocha hooks for a suite run against a private engine whose data root is a `type` file system
 * on a loop device of its own (its storage driver `storageDriver`, default the engine's choice):
 * made before the suite, with the test image and a sandbox; removed after, also on failure (the
 * engine by its pid, its containers with it, then the mount, the loop device, the files).
 */
export function engineOnLoopFs(type: 'xfs' | 'btrfs', storageDriver?: string): { engine: PrivateEngine; sandbox: () => Sandbox } {
  const engine = new PrivateEngine(type, storageDriver ? { storageDriver } : {});
  const data = new LoopFs(`/tmp/bd-${TEST_RUN}-${type}.img`, path.join(engine.root, 'data'));
  let sb: Sandbox | undefined;
  before(async function () {
    await data.make(type);
    await engine.start();
    await engine.importImage();
    sb = await Sandbox.create(type);
  });
  after(async function () {
    await engine.destroy();
    await data.remove();
    await fs.rm(engine.root, { recursive: true, force: true });
    if (sb) await fs.rm(sb.dir, { recursive: true, force: true });
  });
  return { engine, sandbox: () => sb as Sandbox };
}

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

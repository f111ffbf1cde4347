/**
 * Disk readings for the planner's pressure decision (plan/disk-pressure.ts): the free space and
 * free inodes of the file systems holding the engine's data root (its `DockerRootDir`) and the
 * results root, read with statfs. Observed here, outside the planner; the planner decides.
 *
 * The engine's data root is a path on the engine's host. It is read only when the engine is
 * reached through a socket file on this host (DOCKER_HOST unset or unix://): a remote engine's
 * (tcp://, ssh://) cannot be stat'ed from here, and a path this host does not have (berth in a
 * container with the engine's socket mounted) is not the engine's; either is `skipped` with why,
 * and only that check is skipped. An engine that does not say (a swarm) is skipped the same way.
 */
import { promises as fs } from 'node:fs';
import { dirname } from 'node:path';

export type DiskWhat = 'engine-data-root' | 'results-root';

export interface DiskReading {
  what: DiskWhat;
  path: string;
  /** Bytes available to berth and the engine (statfs bavail), and the file system's size. */
  freeBytes?: number;
  totalBytes?: number;
  /** Free inodes and the file system's inodes (0: it has no fixed number, as btrfs). */
  freeInodes?: number;
  totalInodes?: number;
  /** Why this file system was not read (a remote engine, a path not on this host). */
  skipped?: string;
}

/** Where the engine keeps its data, as far as berth can read it (the Engine's `dataRoot`). */
export type DataRootSource = () => Promise<{ path: string; local: boolean } | undefined>;

/**
 * statfs of `path`, as a reading: of the nearest folder above it that exists when it does not
 * yet (a results root berth has not made: it will be made there); a path that cannot be read
 * otherwise is `skipped` with the error.
 */
export async function readFs(what: DiskWhat, path: string): Promise<DiskReading> {
  let at = path;
  for (;;) {
    try {
      const s = await fs.statfs(at);
      return { what, path, freeBytes: s.bavail * s.bsize, totalBytes: s.blocks * s.bsize, freeInodes: s.ffree, totalInodes: s.files };
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOENT' && dirname(at) !== at) at = dirname(at);
      else return { what, path, skipped: `cannot read its file system here: ${code ?? String(err)}` };
    }
  }
}

/**
 * Reads both file systems at each call; the engine's data root is asked of the engine once (and
 * again after a failure), as it does not change while the engine runs.
 */
export class DiskObserver {
  private root: { path: string; local: boolean } | undefined;
  private asked = false;
  constructor(
    private readonly resultsRoot: string,
    private readonly dataRoot: DataRootSource | undefined,
  ) {}

  async read(): Promise<DiskReading[]> {
    const out: DiskReading[] = [await readFs('results-root', this.resultsRoot)];
    if (!this.dataRoot) return [...out, { what: 'engine-data-root', path: '', skipped: 'the engine does not say where it keeps its data' }];
    if (!this.asked) {
      try {
        this.root = await this.dataRoot();
        this.asked = true;
      } catch (err) {
        return [...out, { what: 'engine-data-root', path: '', skipped: `the engine did not say where it keeps its data: ${(err as Error).message}` }];
      }
    }
    const r = this.root;
    if (!r) out.push({ what: 'engine-data-root', path: '', skipped: 'the engine does not say where it keeps its data' });
    else if (!r.local) out.push({ what: 'engine-data-root', path: r.path, skipped: 'the engine is remote: its data root cannot be read from here' });
    else out.push(await readFs('engine-data-root', r.path));
    return out;
  }
}

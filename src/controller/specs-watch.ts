/**
 * The specs folder's watcher: chokidar, and the little it cannot say for the controller.
 *
 * chokidar (one `fs.watch` per folder on Linux) reports files added, changed and removed by path,
 * folders added and removed, the root gone and back, editors' atomic saves, and links as
 * themselves (`followSymlinks: false`). What it cannot say, kept here:
 *
 * - **An overflowed kernel queue.** On Linux libuv drops inotify's overflow marker, so no watcher
 *   built on `fs.watch` learns that events were lost. A burst of raw events read at once (one
 *   turn of the event loop) at half the queue's size stands for it: the caller walks the folder.
 * - **A link made, removed or retargeted.** The folder's load may follow a link to a folder
 *   inside; chokidar reports a link by its name only, which says nothing of what it reaches.
 * - **How many folders are watched**, and whether some could not be (`degraded`).
 *
 * Paths are reported as changes of one file (`onPath`: the caller reads that file again) or as
 * what only a walk of the whole folder can place (`onWhole`).
 */
import { watch, type FSWatcher } from 'chokidar';
import { lstatSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

export interface SpecsWatchOptions {
  /** Names neither reported nor watched (dot-files, editors' leftovers); `abs`, the path. */
  ignored: (name: string, abs: string) => boolean;
  /** A folder made at `abs` that changes no spec file (inside a fixture): not reported (its files are, one by one). */
  quietFolder?: (abs: string) => boolean;
  /** A file added, written or removed. */
  onPath: (abs: string, kind: 'add' | 'change' | 'unlink') => void;
  /** Something changed that only a walk of the whole folder can place; `why` for the log. */
  onWhole: (why: string) => void;
  onError: (err: Error) => void;
  /** Raw events in one turn of the event loop that stand for an overflowed queue (default: half its size). */
  burstLimit?: number;
}

/** Half of the kernel's inotify queue (`max_queued_events`, 16,384 by default). */
function defaultBurstLimit(): number {
  try {
    const n = Number(readFileSync('/proc/sys/fs/inotify/max_queued_events', 'utf8').trim());
    if (Number.isInteger(n) && n > 0) return Math.max(64, Math.floor(n / 2));
  } catch {
    // not Linux, or no /proc: the default queue size
  }
  return 8192;
}

function isLink(p: string): boolean {
  try {
    return lstatSync(p).isSymbolicLink();
  } catch {
    return false;
  }
}

export class SpecsWatch {
  private readonly watcher: FSWatcher;
  private readonly ready: Promise<void>;
  /** Links seen in the folder: one removed or retargeted is a walk. */
  private readonly links = new Set<string>();
  private burst = 0;
  private burstReported = false;
  /** Some folder could not be watched (the OS's limit, permissions): changes in it go unseen. */
  degraded = false;

  constructor(
    private readonly root: string,
    opts: SpecsWatchOptions,
  ) {
    const burstLimit = opts.burstLimit ?? defaultBurstLimit();
    this.watcher = watch(root, {
      ignoreInitial: true,
      followSymlinks: false,
      // A name below the root that `ignored` refuses: never reported, never descended into.
      ignored: (p: string) => p !== root && opts.ignored(path.basename(p), p),
      // The caller settles writes itself (SpecSource's settle time): no polling of sizes here.
      awaitWriteFinish: false,
    });
    const file = (kind: 'add' | 'change' | 'unlink') => (p: string) => {
      if (kind === 'add' && isLink(p)) this.links.add(p);
      if (!this.links.has(p)) return opts.onPath(p, kind);
      if (kind === 'unlink') this.links.delete(p);
      opts.onWhole(`a link ${kind === 'add' ? 'made' : kind === 'change' ? 'retargeted' : 'removed'}: ${p}`);
    };
    this.watcher
      .on('add', file('add'))
      .on('change', file('change'))
      .on('unlink', file('unlink'))
      .on('addDir', (p: string) => opts.quietFolder?.(p) || opts.onWhole(`folder made: ${p}`))
      .on('unlinkDir', (p: string) => opts.onWhole(`folder removed: ${p}`))
      .on('error', (err: unknown) => {
        this.degraded = true;
        opts.onError(err instanceof Error ? err : new Error(String(err)));
      })
      .on('raw', () => {
        if (this.burst++ === 0) setImmediate(() => (this.burst = 0));
        if (this.burst >= burstLimit && !this.burstReported) {
          this.burstReported = true;
          setImmediate(() => {
            this.burstReported = false;
            opts.onWhole(`a burst of ${burstLimit}+ events at once: the kernel's queue may have overflowed`);
          });
        }
      });
    this.ready = new Promise<void>((resolve) => this.watcher.once('ready', () => resolve()));
    // The links already there (chokidar's first scan reports nothing with ignoreInitial).
    void this.ready.then(() => {
      for (const dir of Object.keys(this.watcher.getWatched())) {
        if (dir !== root && !dir.startsWith(root + path.sep)) continue;
        try {
          for (const e of readdirSync(dir, { withFileTypes: true })) if (e.isSymbolicLink()) this.links.add(path.join(dir, e.name));
        } catch {
          // gone since: its removal is reported
        }
      }
    });
  }

  /** Resolves once the first scan is done: every change after it is reported. */
  whenReady(): Promise<void> {
    return this.ready;
  }

  /** Folders watched: the root and every folder under it (not dot-folders, not links). */
  get folders(): number {
    const inside = (d: string) => d === this.root || d.startsWith(this.root + path.sep);
    return Object.keys(this.watcher.getWatched()).filter((d) => inside(d) && !isLink(d)).length;
  }

  close(): Promise<void> {
    return this.watcher.close();
  }
}

/**
 * Watches a folder and every folder under it with one `fs.watch` (inotify) each, and says what
 * changed by name, as the OS reports it: no listing of a folder and no stat of its entries on a
 * change (chokidar lists the folder again, with a stat per entry, on every event: ~0.4 s at
 * 10,000 files). Node's own recursive `fs.watch` on Linux (v20) watches every file, not
 * folders, and walks dot-folders and links: not used.
 *
 * - A name in a watched folder is reported as a path (`onPath`) unless it is a folder: the
 *   caller decides what the path means (a file written, made, removed, renamed from or to).
 * - Names `ignored` says are never reported nor watched (dot-files, dot-folders).
 * - Links are never followed nor watched; one made, removed or changed is reported as `onWhole`
 *   (the walk of a load may follow a link to a folder inside).
 * - What a path cannot say is reported as `onWhole`, after the folders watched are brought in
 *   line with the disk: a folder made (watched at once, before it is reported, so nothing
 *   written in it afterwards is missed), removed, renamed or replaced; the root itself gone
 *   or replaced (then its nearest existing ancestor is watched until it is back); an event
 *   without a name; a watcher's error; and a burst of events read at once that may have
 *   overflowed the kernel's queue (libuv drops the overflow marker, so a burst at half the
 *   queue's size stands for it).
 * - A folder that cannot be watched (the OS's limit on watches, permissions) is reported to
 *   `onError`; `degraded` says so from then on: what changes in it is not seen by name.
 */
import { lstatSync, readdirSync, readFileSync, statSync, watch, type Dirent, type FSWatcher, type Stats } from 'node:fs';
import path from 'node:path';

export interface TreeWatchOptions {
  /** Names neither reported nor watched. */
  ignored?: (name: string) => boolean;
  /** A name changed in a watched folder (`rename`: made, removed, renamed; `change`: written). */
  onPath: (abs: string, kind: 'rename' | 'change') => void;
  /** Something changed that only a walk of the whole folder can place; `why` for the log. */
  onWhole: (why: string) => void;
  onError?: (err: Error) => void;
  /** Events read at once from which the kernel's queue may have overflowed (default: half its size). */
  burstLimit?: number;
}

interface Watched {
  watcher: FSWatcher;
  ino: number;
  dev: number;
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

function lstatOrUndefined(p: string): Stats | undefined {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
}

export class TreeWatch {
  private readonly root: string;
  private readonly ignored: (name: string) => boolean;
  private readonly burstLimit: number;
  /** Watched folders by absolute path. */
  private readonly dirs = new Map<string, Watched>();
  /** Watching an ancestor until the root exists. */
  private waiting: { dir: string; watcher: FSWatcher } | undefined;
  private closed = false;
  /** Events read since the last turn of the event loop. */
  private burst = 0;
  private burstReported = false;
  /** Links in the watched folders (never followed): one made, removed or changed is a walk. */
  private readonly links = new Set<string>();
  /** Folders that could not be watched. */
  readonly unwatchable = new Set<string>();

  constructor(
    root: string,
    private readonly o: TreeWatchOptions,
  ) {
    this.root = path.resolve(root);
    this.ignored = o.ignored ?? (() => false);
    this.burstLimit = o.burstLimit ?? defaultBurstLimit();
    this.arm();
  }

  /** Some folder could not be watched: changes in it are not seen by name. */
  get degraded(): boolean {
    return this.unwatchable.size > 0;
  }

  /** Folders watched now. */
  get folders(): number {
    return this.dirs.size;
  }

  close(): void {
    this.closed = true;
    for (const w of this.dirs.values()) w.watcher.close();
    this.dirs.clear();
    this.waiting?.watcher.close();
    this.waiting = undefined;
  }

  /** Watches the root and every folder under it, or waits for the root. */
  private arm(): void {
    if (this.closed) return;
    if (!this.rootStat()) {
      this.waitForRoot();
      return;
    }
    this.waiting?.watcher.close();
    this.waiting = undefined;
    this.sync();
  }

  /** The root is missing (or not a folder): its nearest existing ancestor is watched until it appears. */
  private waitForRoot(): void {
    let d = path.dirname(this.root);
    while (lstatOrUndefined(d) === undefined && path.dirname(d) !== d) d = path.dirname(d);
    if (this.waiting?.dir === d) return;
    this.waiting?.watcher.close();
    this.waiting = undefined;
    try {
      const watcher = watch(d, () => {
        if (this.closed) return;
        this.arm();
        if (this.dirs.size > 0) this.o.onWhole('the folder appeared');
      });
      watcher.on('error', (err) => this.watcherFailed(d, err));
      this.waiting = { dir: d, watcher };
    } catch (err) {
      this.o.onError?.(err as Error);
      return;
    }
    // it may have appeared between the look and the watch
    if (lstatOrUndefined(this.root)) {
      this.arm();
      if (this.dirs.size > 0) this.o.onWhole('the folder appeared');
    }
  }

  /**
   * Brings the watched folders in line with the disk: watches the folders not watched yet (each
   * before it is read, so what is made in it afterwards is reported), and stops watching those
   * gone or replaced (another folder under the same path).
   */
  private sync(): void {
    const seen = new Set<string>();
    const links = new Set<string>();
    const pending = [this.root];
    while (pending.length > 0) {
      const dir = pending.pop() as string;
      const st = dir === this.root ? this.rootStat() : lstatOrUndefined(dir);
      if (!st) continue;
      const had = this.dirs.get(dir);
      if (had && (had.ino !== st.ino || had.dev !== st.dev)) {
        had.watcher.close();
        this.dirs.delete(dir);
      }
      if (!this.dirs.has(dir) && !this.add(dir, st)) continue;
      seen.add(dir);
      let entries: Dirent[];
      try {
        entries = readdirSync(dir, { withFileTypes: true });
      } catch {
        continue; // unreadable: the walk of the load reports it
      }
      for (const e of entries) {
        if (this.ignored(e.name)) continue;
        if (e.isDirectory()) pending.push(path.join(dir, e.name));
        else if (e.isSymbolicLink()) links.add(path.join(dir, e.name));
      }
    }
    this.links.clear();
    for (const l of links) this.links.add(l);
    for (const [dir, w] of this.dirs) {
      if (seen.has(dir)) continue;
      w.watcher.close();
      this.dirs.delete(dir);
    }
    for (const dir of this.unwatchable) if (!seen.has(dir) && !lstatOrUndefined(dir)) this.unwatchable.delete(dir);
    if (this.dirs.size === 0) this.waitForRoot();
  }

  /** The root folder; a root that is a link to a folder is followed (it is the folder given), links under it are not. */
  private rootStat(): Stats | undefined {
    const st = lstatOrUndefined(this.root);
    if (!st?.isSymbolicLink()) return st?.isDirectory() ? st : undefined;
    try {
      const real = statSync(this.root);
      return real.isDirectory() ? real : undefined;
    } catch {
      return undefined;
    }
  }

  private add(dir: string, st: Stats): boolean {
    try {
      const entry: Watched = { watcher: undefined as unknown as FSWatcher, ino: st.ino, dev: st.dev };
      // A watcher closed or replaced can still deliver what was read with the events that closed it: only the current one counts.
      entry.watcher = watch(dir, (kind, name) => this.dirs.get(dir) === entry && this.event(dir, kind, name));
      entry.watcher.on('error', (err) => this.dirs.get(dir) === entry && this.watcherFailed(dir, err));
      this.dirs.set(dir, entry);
      this.unwatchable.delete(dir);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      if (!this.unwatchable.has(dir)) this.o.onError?.(new Error(`cannot watch ${dir}: ${(err as Error).message}`));
      this.unwatchable.add(dir);
      return false;
    }
  }

  private watcherFailed(dir: string, err: Error): void {
    if (this.closed) return;
    this.o.onError?.(new Error(`watching ${dir}: ${err.message}`));
    const w = this.dirs.get(dir);
    if (w) {
      w.watcher.close();
      this.dirs.delete(dir);
    }
    if (this.waiting?.dir === dir) {
      this.waiting.watcher.close();
      this.waiting = undefined;
    }
    this.structural(`a watch failed (${err.message})`);
  }

  /** Re-syncs the watched folders and reports that only a walk can place the change. */
  private structural(why: string): void {
    if (this.closed) return;
    this.arm();
    this.o.onWhole(why);
  }

  private event(dir: string, kind: string, name: string | Buffer | null): void {
    if (this.closed || !this.dirs.has(dir)) return;
    if (this.burst++ === 0) setImmediate(() => ((this.burst = 0), (this.burstReported = false)));
    if (this.burst >= this.burstLimit) {
      // Events may have been lost: what is on disk is what counts.
      if (!this.burstReported) this.structural(`${this.burst} events at once (the kernel's queue may have overflowed)`);
      this.burstReported = true;
      return;
    }
    if (this.burstReported) return;
    if (name === null || name === undefined) {
      this.structural('an event without a name');
      return;
    }
    const base = typeof name === 'string' ? name : name.toString('utf8');
    // An event about the watched folder itself (removed, moved) carries its own name; so does
    // one about an entry of that name. Unless such an entry is there and the folder is the one
    // watched, the folder is watched afresh: a folder made again at the path can have the old
    // one's inode number, while its watch died with the old one.
    if (base === path.basename(dir) && (!lstatOrUndefined(path.join(dir, base)) || this.replaced(dir))) {
      this.forget(dir);
      this.structural(dir === this.root ? 'the folder itself was removed, moved or replaced' : `a folder was removed or moved: ${dir}`);
      return;
    }
    if (this.ignored(base)) return;
    const abs = path.join(dir, base);
    if (this.dirs.has(abs) || this.unwatchable.has(abs)) {
      this.structural(`a folder changed: ${abs}`);
      return;
    }
    const st = lstatOrUndefined(abs);
    if (st?.isDirectory()) {
      this.structural(`a folder appeared: ${abs}`);
      return;
    }
    if (st?.isSymbolicLink() || this.links.has(abs)) {
      this.structural(`a link changed: ${abs}`);
      return;
    }
    this.o.onPath(abs, kind === 'change' ? 'change' : 'rename');
  }

  private forget(dir: string): void {
    this.dirs.get(dir)?.watcher.close();
    this.dirs.delete(dir);
  }

  /** The watched folder is gone, or another one is at its path. */
  private replaced(dir: string): boolean {
    const w = this.dirs.get(dir);
    const st = dir === this.root ? this.rootStat() : lstatOrUndefined(dir);
    return !w || !st || !st.isDirectory() || st.ino !== w.ino || st.dev !== w.dev;
  }
}

export function watchTree(root: string, o: TreeWatchOptions): TreeWatch {
  return new TreeWatch(root, o);
}

/**
 * One walk of a tree on the host (a fixture, a grader's fixture, a build context), never through a
 * link: the root's parent is opened below `/` one component at a time (no-follow.ts), and every
 * folder below is opened inside its parent's descriptor with O_NOFOLLOW, so a folder swapped for
 * a link while the walk goes on is refused (UnsafePathError), never followed. Each entry is
 * lstat'ed inside the folder that holds it (`atFd(dir, name)`): a link is seen as a link.
 *
 * The order is fixed: a folder, then its entries by name (code units), depth first. Synchronous
 * calls (a thread-pool round trip per lstat costs several times the lstat on a loaded machine),
 * the event loop given a turn by `slicer` between entries. The visitor may be async (a packer
 * streaming a large file); the walk waits for it. `more` stops the walk early.
 */
import { closeSync, lstatSync, readdirSync, type BigIntStats, type Stats } from 'node:fs';
import path from 'node:path';
import { atFd, componentsBelow, openDirAtSync, openDirBelow, UnsafePathError } from './no-follow';
import { Slicer } from './slicer';

export interface TreeEntry<S extends Stats | BigIntStats> {
  /** The open folder that holds the entry: read or open it as `atFd(dir, name)`. */
  dir: number;
  name: string;
  /** Its path from the root, forward slashes: '' for a root that is a folder; a root that is not: its name. */
  rel: string;
  /** Where it is on the host (for messages, and what must resolve a link's target); never opened by the walk. */
  abs: string;
  /** 0 for the root, 1 for its entries, ... */
  depth: number;
  st: S;
}

export interface WalkOptions {
  /** lstat as BigIntStats (nanosecond times, for identity keys). */
  bigint?: boolean;
  /** Gives the event loop back between entries (default: after a 5 ms slice). */
  slicer?: Slicer;
  /** Goes on while this says so (checked before each entry). */
  more?: () => boolean;
  /**
   * `path`: lstat each entry by its host path, not inside its folder's descriptor (half the cost
   * of a lookup through /proc/self/fd): only for a walk that reads nothing and compares identities
   * (a fixture's fingerprint), where a folder swapped for a link mid-walk shows as a changed tree
   * at worst. Its folders are listed by path too, and the root's parent is not opened (an
   * entry's `dir` is then -1).
   */
  statBy?: 'path';
  /** false: no entry's `rel` is built (a walk that needs names and depths only); each is ''. */
  rel?: false;
  /** A folder (below the root) this says true of, once visited, is not walked into (a build context's `.dockerignore`). */
  prune?: (e: { rel: string; name: string; depth: number }) => boolean;
}

export async function walkTree<S extends Stats | BigIntStats>(
  root: string,
  o: WalkOptions & (S extends BigIntStats ? { bigint: true } : { bigint?: false }),
  visit: (e: TreeEntry<S>) => void | Promise<void>,
): Promise<void> {
  const stat = { bigint: o.bigint === true };
  const slicer = o.slicer ?? new Slicer();
  const more = o.more ?? (() => true);
  const byPath = o.statBy === 'path';
  const withRel = o.rel !== false;
  let seen = 0;
  root = path.resolve(root);
  const parts = componentsBelow('/', root);
  const top = parts.pop();
  if (top === undefined) throw new UnsafePathError('a tree to walk cannot be the filesystem root');
  const parent = byPath ? undefined : await openDirBelow('/', parts);
  // folders whose entries are still to walk: their descriptor, entries' names (in order), the next one's place
  const stack: { fd: number; abs: string; rel: string; names: string[]; at: number }[] = [];
  try {
    const st = lstatSync(parent ? atFd(parent.fd, top) : root, stat) as S;
    const rootDir = st.isDirectory();
    // one entry object, filled anew for each entry: a visitor keeps what it needs, not the object
    const e: TreeEntry<S> = { dir: parent?.fd ?? -1, name: top, rel: rootDir ? '' : top, abs: root, depth: 0, st };
    const v = visit(e);
    if (v) await v;
    if (!rootDir || !more()) return;
    const fd = parent ? openDirAtSync(parent.fd, top, root) : -1;
    stack.push({ fd, abs: root, rel: '', names: readdirSync(byPath ? root : atFd(fd, '.')).sort(), at: 0 });
    while (stack.length > 0 && more()) {
      const f = stack[stack.length - 1] as (typeof stack)[number];
      if (f.at === f.names.length) {
        if (f.fd >= 0) closeSync(f.fd);
        stack.pop();
        continue;
      }
      // the clock is read every few entries (a tenth of a microsecond each, but 100,000 of them)
      if ((++seen & 15) === 0) await slicer.tick();
      const name = f.names[f.at++] as string;
      const abs = `${f.abs}/${name}`;
      const est = lstatSync(byPath ? abs : atFd(f.fd, name), stat) as S;
      e.dir = f.fd;
      e.name = name;
      e.rel = !withRel ? '' : f.rel === '' ? name : `${f.rel}/${name}`;
      e.abs = abs;
      e.depth = stack.length;
      e.st = est;
      const w = visit(e);
      if (w) await w;
      if (est.isDirectory() && !o.prune?.(e)) {
        const sub = byPath ? -1 : openDirAtSync(f.fd, name, abs);
        stack.push({ fd: sub, abs, rel: e.rel, names: readdirSync(byPath ? abs : atFd(sub, '.')).sort(), at: 0 });
      }
    }
  } finally {
    for (const f of stack) if (f.fd >= 0) closeSync(f.fd);
    await parent?.close();
  }
}

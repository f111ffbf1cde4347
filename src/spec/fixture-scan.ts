/**
 * Walks a fixture (folder or single file) with lstat, never following links, and records what
 * the fixture digest needs. Refuses links that point outside the fixture (`fixture-link`) and
 * devices, fifos and sockets (`fixture-special`). Links inside the fixture are fine; copying
 * keeps them as links.
 *
 * A file's content digest comes from its lstat when it has not changed since it was last read:
 * from memory (content-cache.ts), else from the digests kept on disk (digest-store.ts), so an
 * unchanged fixture costs a stat walk in every process. A file over DEFAULTS.maxFixtureFileBytes
 * (a sparse file counts its holes) is refused from its stat alone (`too-large`), never read: a
 * 16 TiB sparse file cannot be copied in, and finding its data without reading its holes needs
 * SEEK_DATA, which Node does not offer.
 */
import { promises as fsp, type BigIntStats, type Stats } from 'node:fs';
import { DEFAULTS } from '../constants';
import { hashFile, knownSha256, rememberSha256, statKey } from './content-cache';
import { createHash } from 'node:crypto';
import { DigestStore, readTree, writeTree } from './digest-store';
import * as path from 'node:path';
import { isWithin } from './path-util';
import type { SpecErrorCode } from './types';
import { atFd } from '../util/no-follow';
import { walkTree, type TreeEntry } from '../util/tree-walk';

export interface FixtureEntry {
  /** Relative to the fixture folder, forward slashes; '.' for the folder itself; a lone file is its base name. */
  path: string;
  type: 'dir' | 'file' | 'symlink';
  /** Permission bits (mode & 0o777). */
  mode: number;
  size: number;
  /** sha256 hex of a file's content. */
  sha256?: string;
  /** A link's target, as written. */
  target?: string;
}

export interface FixtureProblem {
  code: SpecErrorCode;
  message: string;
}

export interface FixtureScan {
  entries: FixtureEntry[];
  problems: FixtureProblem[];
}

/** At most this many problems are reported per fixture. */
const MAX_PROBLEMS = 5;

/**
 * One entry of a fixture's walk: where it is on the host (`abs`, for messages and a link's target),
 * where to read it without following a link (`at`: inside its folder's descriptor), its path from
 * the root ('.' for the root folder), its lstat (BigIntStats when the walk asks for them), its
 * name ('.' for the root folder) and depth.
 */
type Visit<S> = (abs: string, rel: string, st: S, name: string, depth: number, dir: number) => Promise<void> | void;

/**
 * Walks the fixture at `root` (util/tree-walk.ts: a folder, then its entries by name, lstat of
 * every entry inside its folder's descriptor, no link followed); `visit` sees each. `more` stops
 * it early (a scan with enough problems).
 */
async function walkFixture<S extends Stats | BigIntStats>(
  root: string,
  bigint: S extends BigIntStats ? true : false,
  visit: Visit<S>,
  o: { more?: () => boolean; statBy?: 'path'; rel?: false; prune?: (e: { rel: string }) => boolean } = {},
): Promise<void> {
  const each = (e: TreeEntry<S>): Promise<void> | void => {
    const top = e.depth === 0 && e.st.isDirectory();
    return top ? visit(e.abs, '.', e.st, '.', 0, e.dir) : visit(e.abs, e.rel, e.st, e.name, e.depth, e.dir);
  };
  if (bigint) await walkTree<BigIntStats>(root, { ...o, bigint: true }, each as (e: TreeEntry<BigIntStats>) => Promise<void> | void);
  else await walkTree<Stats>(root, o, each as (e: TreeEntry<Stats>) => Promise<void> | void);
}

/**
 * The fingerprint of a fixture's tree: every entry's depth, name, mode and identity (device,
 * inode, size, mtime, ctime), in walk order (a folder, then its entries by name: depth and name
 * in that order tell the tree's shape as the paths do, with no path built per entry). Hashed a
 * batch of entries at a time, the numbers as 64-bit words (a string per entry cost a quarter of
 * the walk's time), the names NUL-separated.
 */
class Fingerprint {
  private readonly h = createHash('sha256');
  private readonly words = new Float64Array(FP_WORDS * FP_BATCH);
  private paths: string[] = [];

  /**
   * One entry. Its numbers as Node's plain Stats give them (the times in milliseconds, from
   * seconds and nanoseconds as Node computes them), from BigIntStats as well: a scan (which
   * needs BigIntStats for the content digests' keys) and a plain stat walk fingerprint alike.
   */
  add(depth: number, name: string, st: Stats | BigIntStats): void {
    const w = this.words;
    const i = this.paths.length * FP_WORDS;
    w[i + 6] = depth;
    if (typeof st.mode === 'bigint') {
      const b = st as BigIntStats;
      w[i] = Number(b.mode);
      w[i + 1] = Number(b.dev);
      w[i + 2] = Number(b.ino);
      w[i + 3] = Number(b.size);
      w[i + 4] = msOf(b.mtimeNs);
      w[i + 5] = msOf(b.ctimeNs);
    } else {
      const p = st as Stats;
      w[i] = p.mode;
      w[i + 1] = p.dev;
      w[i + 2] = p.ino;
      w[i + 3] = p.size;
      w[i + 4] = p.mtimeMs;
      w[i + 5] = p.ctimeMs;
    }
    this.paths.push(name);
    if (this.paths.length === FP_BATCH) this.flush();
  }

  private flush(): void {
    if (this.paths.length === 0) return;
    this.h.update(new Uint8Array(this.words.buffer, 0, this.paths.length * FP_WORDS * 8));
    this.h.update(this.paths.join('\0') + '\n');
    this.paths = [];
  }

  digest(): string {
    this.flush();
    return this.h.digest('hex');
  }
}

/** Nanoseconds since the epoch as Node's plain Stats give a time: seconds × 1e3 + nanoseconds / 1e6, in doubles. */
const msOf = (ns: bigint): number => Number(ns / 1_000_000_000n) * 1e3 + Number(ns % 1_000_000_000n) / 1e6;

/** Numbers per entry in a fingerprint, and entries per hashed batch. */
const FP_WORDS = 7;
const FP_BATCH = 512;

/** Fixture digests this process knows by the fingerprint of their tree, by the fixture's real path. */
const trees = new Map<string, { fingerprint: string; digest: string }>();

/**
 * The fixture digest of `root` from its tree's fingerprint alone (a stat walk: no file opened,
 * no entry listed, no digest computed), when a scan of this very tree (every entry's identity
 * the same) found no problem and left its digest in memory or on disk (digest-store.ts);
 * undefined otherwise (the caller scans).
 */
export async function knownFixtureDigest(root: string, o: TreeScanOptions = {}): Promise<string | undefined> {
  const key = o.key ?? root;
  const kept = trees.get(key) ?? readTree(key);
  if (!kept) return undefined; // none: no walk for nothing, the scan walks
  const fp = new Fingerprint();
  const filter = o.filter;
  // plain stats: the identity the fingerprint needs, without a BigInt per number
  // by path: a stat walk that reads nothing (tree-walk.ts statBy); the scan it may lead to reads through descriptors
  if (!filter) await walkFixture<Stats>(root, false, (_abs, _rel, st, name, depth) => fp.add(depth, name, st), { statBy: 'path', rel: false });
  else {
    // a filtered tree (a build context): the entries kept, each by its path (what is left out shows no shape)
    await walkFixture<Stats>(
      root,
      false,
      (_abs, rel, st, _name, depth) => {
        if (depth === 0 || filter.keep(rel)) fp.add(depth, rel, st);
      },
      { statBy: 'path', prune: (e) => !filter.enter(e.rel) },
    );
  }
  if (kept.fingerprint !== fp.digest()) return undefined;
  trees.set(key, kept);
  return kept.digest;
}

/**
 * A tree walked as a fixture is, but only in part (a build context after its `.dockerignore`):
 * `keep` says which entries (below the root) are the tree's, `enter` whether a folder left out may
 * still hold entries that are kept (walked into) or not (pruned).
 */
export interface TreeFilter {
  keep(rel: string): boolean;
  enter(rel: string): boolean;
}

/** How a tree other than a plain fixture is scanned (a build context). */
export interface TreeScanOptions {
  /** What its digests are kept under (memory and disk), when not the root's path alone. */
  key?: string;
  filter?: TreeFilter;
  /** The regular files' sizes together may be at most this. */
  maxTotalBytes?: number;
  /** What the tree is called in problems (default `fixture`). */
  what?: string;
}

/** Forget the tree digests kept in memory (tests, bench: a new process's state). */
export function clearTreeDigests(): void {
  trees.clear();
}

/** Scans the fixture at `root` (an absolute, link-free path); `digestOf`: also keep its digest by the tree's fingerprint (knownFixtureDigest). */
export async function scanFixture(
  root: string,
  digestOf?: (entries: FixtureEntry[]) => string,
  o: TreeScanOptions = {},
): Promise<FixtureScan & { digest?: string }> {
  const entries: FixtureEntry[] = [];
  const problems: FixtureProblem[] = [];
  const key = o.key ?? root;
  const store = DigestStore.open(key);
  const fp = new Fingerprint();
  const filter = o.filter;
  const what = o.what ?? 'fixture';
  let total = 0;
  await walkFixture<BigIntStats>(
    root,
    true,
    async (abs, rel, st, name, depth, dir) => {
      if (filter && depth > 0 && !filter.keep(rel)) return;
      fp.add(depth, filter ? rel : name, st);
      const base = rel === path.basename(root) && abs === root ? path.dirname(root) : root;
      await addEntry({ abs, dir, name }, rel, st, base, entries, problems, store, what);
      if (o.maxTotalBytes !== undefined && st.isFile() && (total += Number(st.size)) > o.maxTotalBytes && problems.length === 0)
        problems.push({
          code: 'too-large',
          message: `the ${what} holds more than ${size(BigInt(o.maxTotalBytes))} of files; a ${what} may be at most that (nothing was sent)`,
        });
    },
    { more: () => problems.length < MAX_PROBLEMS, ...(filter ? { prune: (e: { rel: string }) => !filter.enter(e.rel) } : {}) },
  );
  if (problems.length > 0) return { entries: sorted(entries), problems };
  store?.save();
  if (!digestOf) return { entries: sorted(entries), problems };
  const digest = digestOf(sorted(entries));
  const tree = { fingerprint: fp.digest(), digest };
  trees.delete(key);
  if (trees.size >= 1024) trees.delete(trees.keys().next().value as string);
  trees.set(key, tree);
  writeTree(key, tree);
  return { entries, problems: [], digest };
}

function sorted(entries: FixtureEntry[]): FixtureEntry[] {
  return entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
}

/** The binary size, for messages. */
function size(n: bigint): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = Number(n);
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} bytes` : `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]}`;
}

/** The content digest of the file at `abs` whose lstat is `st`: kept (memory, then disk) or read now. */
async function contentOf(abs: string, rel: string, st: BigIntStats, store: DigestStore | undefined): Promise<string> {
  const key = statKey(st);
  const known = knownSha256(key);
  if (known !== undefined) {
    store?.set(rel, key, known);
    return known;
  }
  const stored = store?.get(rel, key);
  if (stored !== undefined) {
    rememberSha256(key, stored);
    return stored;
  }
  const read = await hashFile(abs);
  if (read.stat) store?.set(rel, statKey(read.stat), read.sha256);
  return read.sha256;
}

async function addEntry(
  { abs, dir, name }: { abs: string; dir: number; name: string },
  rel: string,
  st: BigIntStats,
  root: string,
  entries: FixtureEntry[],
  problems: FixtureProblem[],
  store: DigestStore | undefined,
  what = 'fixture',
): Promise<void> {
  const mode = Number(st.mode & 0o777n);
  if (st.isDirectory()) {
    entries.push({ path: rel, type: 'dir', mode, size: 0 });
  } else if (st.isFile()) {
    if (st.size > BigInt(DEFAULTS.maxFixtureFileBytes)) {
      const onDisk = st.blocks * 512n;
      const sparse =
        onDisk < st.size / 2n ? ` (${size(onDisk)} of it on disk: a sparse file, whose holes the copy into the container would carry as zeros)` : '';
      problems.push({
        code: 'too-large',
        message: `${what} file "${rel}" is ${size(st.size)}${sparse}; a ${what} file may be at most ${size(BigInt(DEFAULTS.maxFixtureFileBytes))}`,
      });
      return;
    }
    entries.push({ path: rel, type: 'file', mode, size: Number(st.size), sha256: await contentOf(atFd(dir, name), rel, st, store) });
  } else if (st.isSymbolicLink()) {
    const target = await fsp.readlink(atFd(dir, name));
    const resolved = path.resolve(path.dirname(abs), target);
    if (!isWithin(root, resolved) || !(await realStaysWithin(root, resolved))) {
      problems.push({ code: 'fixture-link', message: `${what} link "${rel}" points outside the ${what} (to ${JSON.stringify(target)})` });
    }
    entries.push({ path: rel, type: 'symlink', mode, size: 0, target });
  } else {
    const kind = st.isFIFO() ? 'a fifo' : st.isSocket() ? 'a socket' : 'a device';
    problems.push({ code: 'fixture-special', message: `${what} entry "${rel}" is ${kind}; only files, folders and links can be copied` });
  }
}

/** A link target that exists must also resolve (through further links) inside the fixture. */
async function realStaysWithin(root: string, resolved: string): Promise<boolean> {
  try {
    return isWithin(await fsp.realpath(root), await fsp.realpath(resolved));
  } catch {
    return true; // dangling, or a loop: it points inside lexically and is copied as a link
  }
}

/**
 * Fixture file digests kept on disk between processes: an unchanged fixture costs a `stat` walk,
 * not a read, in every new process (`plan`, `validate`, a CI job's `reconcile --once`), not only
 * in a long-running one (content-cache.ts keeps them in memory).
 *
 * Where: `$BERTH_CACHE_DIR` (empty: nothing kept on disk), else `$XDG_CACHE_HOME/berth`, else
 * `~/.cache/berth`; one file per fixture (by its real path) in `fixture-digests/`, mode 0600 in a
 * 0700 folder. A digest is a property of a file's bytes and the file is named by its identity, so
 * one cache serves every specs folder, state folder and instance of the user.
 *
 * Each entry is a file of the fixture by its relative path: device, inode, size, mtime and ctime
 * (nanoseconds), and its sha256. It is used only when all five equal the file's `lstat` now (any
 * write changes the ctime, which no one can set back), and only to skip reading the file: it is
 * plain data, checked for its shape; a file that is damaged, of another format or for another
 * fixture is ignored and replaced by the next write.
 *
 * Written atomically (a temp file, then a rename), only when an entry was added or changed or a
 * file of the fixture has gone; two processes writing at once each write a whole, correct file
 * (the last rename wins; what the other learnt is learnt again). Bounded: a fixture's file holds
 * the entries of its files as last scanned (at most MAX_ENTRIES); at most MAX_FILES fixtures are
 * kept, the least recently used (by the file's mtime, touched when used) removed first.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, utimesSync, writeSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import type { StatKey } from './content-cache';
import { pruneOldest } from '../util/prune-folder';
import { sha256Hex } from './hash';

const FORMAT = 1;
/** Files kept: two per fixture (its entries, its tree digest). */
const MAX_FILES = 1024;
/** Files of one fixture kept. */
const MAX_ENTRIES = 500_000;
const SHA = /^[0-9a-f]{64}$/;

/** `dev:ino:size:mtimeNs:ctimeNs`, and the sha256. */
type Entry = [string, string];

interface StoreFile {
  format: number;
  root: string;
  entries: Record<string, Entry>;
}

const stats = { hits: 0, loads: 0, writes: 0, ignored: 0 };

/** The folder berth keeps caches in, or undefined when none is to be kept. */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const own = env.BERTH_CACHE_DIR;
  if (own !== undefined) return own === '' ? undefined : path.resolve(own);
  const xdg = env.XDG_CACHE_HOME;
  if (xdg && path.isAbsolute(xdg)) return path.join(xdg, 'berth');
  let home = '';
  try {
    home = os.homedir();
  } catch {
    return undefined;
  }
  return home ? path.join(home, '.cache', 'berth') : undefined;
}

const signature = (k: StatKey) => `${k.id}:${k.version}`;

/** One fixture's kept digests: read once per scan, looked up per file, written back when they changed. */
export class DigestStore {
  private readonly kept: Map<string, Entry> = new Map();
  private readonly live = new Map<string, Entry>();
  private changed = false;

  private constructor(
    private readonly file: string,
    private readonly root: string,
  ) {}

  /** The store for the fixture at `root` (its real path), or undefined when no cache is kept. */
  static open(root: string, dir = cacheDir()): DigestStore | undefined {
    if (dir === undefined) return undefined;
    const file = path.join(dir, 'fixture-digests', `${sha256Hex(root).slice(0, 32)}.json`);
    const store = new DigestStore(file, root);
    store.read();
    return store;
  }

  private read(): void {
    let raw: string;
    try {
      raw = readFileSync(this.file, 'utf8');
    } catch {
      return; // none yet
    }
    stats.loads++;
    try {
      const parsed = JSON.parse(raw) as Partial<StoreFile>;
      if (typeof parsed !== 'object' || parsed === null || parsed.format !== FORMAT || parsed.root !== this.root) throw new Error('not this fixture');
      const entries = parsed.entries;
      if (typeof entries !== 'object' || entries === null) throw new Error('no entries');
      for (const [rel, e] of Object.entries(entries)) {
        if (Array.isArray(e) && e.length === 2 && typeof e[0] === 'string' && typeof e[1] === 'string' && SHA.test(e[1])) this.kept.set(rel, [e[0], e[1]]);
      }
      // Used: the least recently used fixture goes first.
      const now = new Date();
      utimesSync(this.file, now, now);
    } catch {
      stats.ignored++;
      this.kept.clear();
      this.changed = true; // rewritten whole
    }
  }

  /** The digest kept for the fixture file `rel` if its lstat (`key`) is the one it was taken at. */
  get(rel: string, key: StatKey): string | undefined {
    const e = this.kept.get(rel);
    if (!e || e[0] !== signature(key)) return undefined;
    stats.hits++;
    this.live.set(rel, e);
    return e[1];
  }

  /** Keeps the digest of `rel`, read from the file whose stat (held through the read) gives `key`. */
  set(rel: string, key: StatKey, sha256: string): void {
    if (this.live.size >= MAX_ENTRIES) return;
    const sig = signature(key);
    const old = this.kept.get(rel);
    if (old && old[0] === sig && old[1] === sha256) {
      this.live.set(rel, old);
      return;
    }
    this.changed = true;
    this.live.set(rel, [sig, sha256]);
  }

  /** Writes the file back if an entry was added or changed, or a kept one was not met; never throws. */
  save(): void {
    if (!this.changed && [...this.kept.keys()].every((k) => this.live.has(k))) return;
    const data: StoreFile = { format: FORMAT, root: this.root, entries: Object.fromEntries(this.live) };
    if (writeAtomic(this.file, JSON.stringify(data))) this.changed = false;
  }
}

/** A fixture's tree fingerprint and digest (fixture-scan.ts `knownFixtureDigest`), in a small file of its own beside its entries. */
export interface TreeDigest {
  fingerprint: string;
  digest: string;
}

const treeFile = (dir: string, root: string) => path.join(dir, 'fixture-digests', `${sha256Hex(root).slice(0, 32)}.tree`);

/** The tree digest kept for the fixture at `root`, if any (a damaged file is none). */
export function readTree(root: string, dir = cacheDir()): TreeDigest | undefined {
  if (dir === undefined) return undefined;
  try {
    const t = JSON.parse(readFileSync(treeFile(dir, root), 'utf8')) as Partial<TreeDigest & { format: number; root: string }>;
    if (
      t.format !== FORMAT ||
      t.root !== root ||
      typeof t.fingerprint !== 'string' ||
      typeof t.digest !== 'string' ||
      !SHA.test(t.fingerprint) ||
      !SHA.test(t.digest)
    )
      return undefined;
    return { fingerprint: t.fingerprint, digest: t.digest };
  } catch {
    return undefined;
  }
}

/** Keeps the tree digest of the fixture at `root` (atomically; never throws). */
export function writeTree(root: string, tree: TreeDigest, dir = cacheDir()): void {
  if (dir === undefined) return;
  const file = treeFile(dir, root);
  if (readTree(root, dir)?.fingerprint === tree.fingerprint) return;
  writeAtomic(file, JSON.stringify({ format: FORMAT, root, ...tree }));
}

/** Writes `data` to `file` through a temp file and a rename; false when it could not. */
function writeAtomic(file: string, data: string): boolean {
  const dir = path.dirname(file);
  const temp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const fd = openSync(temp, 'wx', 0o600);
    try {
      writeSync(fd, data);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, file);
    stats.writes++;
    pruneOldest(dir, MAX_FILES); // (temp files left by a process that died count, and go first)
    return true;
  } catch {
    rmSync(temp, { force: true });
    return false;
  }
}

/** Reads of kept files, hits, writes and damaged files ignored so far (tests, bench). */
export function digestStoreStats(): { hits: number; loads: number; writes: number; ignored: number } {
  return { ...stats };
}

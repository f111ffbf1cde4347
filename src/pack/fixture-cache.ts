/**
 * Packed fixture layers, kept on disk so a layer is packed once and copied into every attempt
 * that uses it (`<state>/cache/fixtures/`). Each entry is a folder named by its key (the layer's
 * digest, the working dir and the owner, hashed: what the archive's bytes depend on) holding
 * `archive.tar` (the layer's entries, named below the working dir) and `meta.json` (its size,
 * its sha256, where each entry lies in it and what the workspace export compares with).
 *
 * - Written atomically: an entry is made in a temp folder beside the others and renamed into
 *   place; two processes packing the same layer at once both succeed, one rename wins and the
 *   other's folder is its own to use and remove. Within a process, one packing per key at a time.
 * - Only what the spec was loaded with is kept: a layer whose files, read now with no link
 *   followed, do not have the digest the spec names is used for this copy only.
 * - Checked before it is copied in: the archive's size against meta.json, then its sha256 (once
 *   per process for a file that has not changed since: device, inode, size, mtime, ctime). A
 *   damaged entry (truncated, garbage, a meta.json that does not parse) is removed and packed
 *   again, never copied in.
 * - Bounded: at most `maxBytes` in all; the least recently used entries (their folder's mtime,
 *   set at every use) are removed first. A layer larger than the bound is packed for its copy
 *   only. An entry is removed by renaming it away first: a copy already reading it keeps its
 *   open file and finishes.
 * - Never held in memory: archives are written and read in chunks; every attempt reads its own
 *   open handle (positioned reads), so any number stream the same entry at once.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createWriteStream, promises as fsp } from 'node:fs';
import path from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pack, type Pack } from 'tar-stream';
import { canonicalJson } from '../spec/canonical-json';
import { fixtureDigest } from '../spec/fixture-digest';
import type { FixtureEntry } from '../spec/fixture-scan';
import { sha256Hex } from '../spec/hash';
import { isCode } from '../status/atomic-file';
import type { LayerPath } from './fixture-layers';
import { TarSpans, type Span } from './tar-spans';

/** Bumped when what an entry holds changes: entries of another version are never read. */
const CACHE_VERSION = 1;
const ARCHIVE = 'archive.tar';
const META = 'meta.json';
const TEMP_PREFIX = '.tmp-';
const TRASH_PREFIX = '.trash-';
/** meta.json larger than this is damage (a layer of millions of entries is far below it). */
const MAX_META_BYTES = 512 * 1024 * 1024;
/** Read size for checking and streaming archives. */
const READ_BYTES = 1024 * 1024;
/** A temp or trash folder older than this is left from a process that died: removed. */
const STALE_MS = 60 * 60 * 1000;

/** What an entry records of its layer. */
export interface LayerMeta {
  version: number;
  key: string;
  bytes: number;
  sha256: string;
  /** The layer as read, in the loader's terms (spec/fixture-scan.ts): the workspace export compares with it. */
  index: FixtureEntry[];
  /** The archive's entries, in order, with their place in it. */
  entries: (LayerPath & Span)[];
}

/** A packed layer ready to be read: its meta and an open handle on its archive. `release` closes it (and removes an entry kept for this copy only). */
export interface Lease {
  meta: LayerMeta;
  file: fsp.FileHandle;
  release(): Promise<void>;
}

/** What a layer's packing gives: the index and every packed entry's path and type, in archive order. */
export type PackLayer = (p: Pack) => Promise<{ index: FixtureEntry[]; packed: LayerPath[] }>;

/** How the cache has been used in this process (tests, the bench). */
export interface CacheStats {
  /** Layers packed (kept or not). */
  packs: number;
  /** Copies served by an entry already on disk. */
  hits: number;
  /** Entries found damaged and removed. */
  damaged: number;
}

const stats: CacheStats = { packs: 0, hits: 0, damaged: 0 };

export function fixtureCacheStats(): CacheStats {
  return { ...stats };
}

/** The key of a layer's packed archive: everything its bytes depend on. */
export function layerKey(digest: string, workingDir: string, uid: number, gid: number): string {
  return sha256Hex(canonicalJson({ version: CACHE_VERSION, digest, workingDir, uid, gid }));
}

/** Files whose sha256 was checked in this process, by identity: not read again while unchanged. */
const checked = new Set<string>();

const identity = (st: { dev: bigint; ino: bigint; size: bigint; mtimeNs: bigint; ctimeNs: bigint }): string =>
  [st.dev, st.ino, st.size, st.mtimeNs, st.ctimeNs].join(':');

class Damaged extends Error {}

export class FixtureCache {
  private readonly packing = new Map<string, Promise<void>>();

  constructor(
    readonly dir: string,
    readonly maxBytes: number,
  ) {}

  /**
   * The layer packed for `key`: from the cache when it holds a sound entry, else packed now with
   * `packLayer` (kept when `digest` is what was read and it fits).
   */
  async lease(key: string, digest: string, packLayer: PackLayer): Promise<Lease> {
    for (let tries = 0; tries < 3; tries++) {
      const found = await this.open(key);
      if (found) {
        stats.hits++;
        return found;
      }
      let making = this.packing.get(key);
      if (!making) {
        let own: Lease | undefined;
        making = this.make(key, digest, packLayer).then((lease) => {
          own = lease;
        });
        this.packing.set(key, making);
        try {
          await making;
        } finally {
          this.packing.delete(key);
        }
        if (own) return own; // not kept: this copy's own
        continue;
      }
      // another copy of this process is packing it: use what it keeps
      await making.catch(() => undefined);
    }
    // kept and removed again meanwhile (a cache too small for what runs at once): this copy's own
    const own = await this.make(key, digest, packLayer, false);
    return own as Lease;
  }

  /** A sound entry for `key`, opened; undefined when there is none (a damaged one is removed). */
  private async open(key: string): Promise<Lease | undefined> {
    const at = path.join(this.dir, key);
    let file: fsp.FileHandle | undefined;
    try {
      const meta = await readMeta(at, key);
      file = await fsp.open(path.join(at, ARCHIVE), 'r');
      await check(file, meta);
      // most recently used: the folder's mtime
      const now = new Date();
      await fsp.utimes(at, now, now).catch(() => undefined);
      const f = file;
      return { meta, file: f, release: () => f.close() };
    } catch (err) {
      await file?.close().catch(() => undefined);
      // none there (or removed meanwhile); but an entry missing one of its files, or not a folder, is damaged
      const missing = isCode(err, 'ENOENT') || isCode(err, 'ENOTDIR');
      if (missing && !(await fsp.lstat(at).catch(() => undefined))) return undefined;
      if (missing || err instanceof Damaged || err instanceof SyntaxError) {
        stats.damaged++;
        await this.remove(key);
        return undefined;
      }
      throw err;
    }
  }

  /**
   * Packs the layer into a temp folder of the cache, then keeps it (renamed into place) when it
   * is what the spec names and fits; returns a lease only when it was not kept (the copy's own).
   */
  private async make(key: string, digest: string, packLayer: PackLayer, mayKeep = true): Promise<Lease | undefined> {
    await fsp.mkdir(this.dir, { recursive: true, mode: 0o700 });
    const temp = path.join(this.dir, `${TEMP_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`);
    await fsp.mkdir(temp, { mode: 0o700 });
    try {
      const meta = await packInto(temp, key, packLayer);
      stats.packs++;
      if (mayKeep && this.maxBytes > 0 && meta.bytes <= this.maxBytes && fixtureDigest(meta.index) === digest) {
        try {
          // written and hashed just now: its first use need not read it again
          const made = await fsp.stat(path.join(temp, ARCHIVE), { bigint: true });
          await fsp.rename(temp, path.join(this.dir, key));
          checked.add(identity(made));
          await this.evict(key);
          return undefined;
        } catch (err) {
          // another process kept it first (the same bytes): this folder is this copy's own
          if (!isCode(err, 'ENOTEMPTY') && !isCode(err, 'EEXIST')) throw err;
        }
      }
      const file = await fsp.open(path.join(temp, ARCHIVE), 'r');
      return {
        meta,
        file,
        release: async () => {
          await file.close().catch(() => undefined);
          await fsp.rm(temp, { recursive: true, force: true });
        },
      };
    } catch (err) {
      await fsp.rm(temp, { recursive: true, force: true }).catch(() => undefined);
      throw err;
    }
  }

  /** Removes an entry: renamed away first (a copy reading it keeps its open file), then deleted. */
  async remove(key: string): Promise<void> {
    const trash = path.join(this.dir, `${TRASH_PREFIX}${process.pid}-${randomBytes(6).toString('hex')}`);
    try {
      await fsp.rename(path.join(this.dir, key), trash);
    } catch (err) {
      if (isCode(err, 'ENOENT')) return;
      throw err;
    }
    await fsp.rm(trash, { recursive: true, force: true });
  }

  /** Least recently used entries removed until the cache fits its bound (never `keep`, just made); stale temp folders too. */
  async evict(keep?: string): Promise<void> {
    const names = await fsp.readdir(this.dir).catch(() => [] as string[]);
    const entries: { key: string; bytes: number; used: number }[] = [];
    let total = 0;
    for (const n of names) {
      const at = path.join(this.dir, n);
      const st = await fsp.stat(at).catch(() => undefined);
      if (!st) continue;
      if (n.startsWith(TEMP_PREFIX) || n.startsWith(TRASH_PREFIX)) {
        if (Date.now() - st.mtimeMs > STALE_MS) await fsp.rm(at, { recursive: true, force: true }).catch(() => undefined);
        continue;
      }
      if (!/^[0-9a-f]{64}$/.test(n)) continue;
      const tar = await fsp.stat(path.join(at, ARCHIVE)).catch(() => undefined);
      const bytes = tar?.size ?? 0;
      total += bytes;
      entries.push({ key: n, bytes, used: st.mtimeMs });
    }
    entries.sort((a, b) => a.used - b.used || (a.key < b.key ? -1 : 1));
    for (const e of entries) {
      if (total <= this.maxBytes) break;
      if (e.key === keep) continue;
      await this.remove(e.key);
      total -= e.bytes;
    }
  }
}

/** meta.json files parsed in this process, by path and identity: a layer copied into many attempts is parsed once (a few at most: each can be large). */
const parsed = new Map<string, { id: string; meta: LayerMeta }>();
const PARSED_KEPT = 16;

/** meta.json of the entry at `at`, bounded and checked to be of this version and key. */
async function readMeta(at: string, key: string): Promise<LayerMeta> {
  const file = path.join(at, META);
  const fh = await fsp.open(file, 'r');
  try {
    const st = await fh.stat({ bigint: true });
    const id = identity(st);
    const kept = parsed.get(file);
    if (kept?.id === id) return kept.meta;
    if (st.size > MAX_META_BYTES) throw new Damaged(`${META} is ${st.size} bytes`);
    const meta = JSON.parse(await fh.readFile('utf8')) as LayerMeta;
    if (meta?.version !== CACHE_VERSION || meta.key !== key || !Array.isArray(meta.entries) || !Array.isArray(meta.index))
      throw new Damaged(`${META} is not this cache's`);
    if (typeof meta.bytes !== 'number' || typeof meta.sha256 !== 'string') throw new Damaged(`${META} lacks the archive's size or digest`);
    parsed.delete(file);
    if (parsed.size >= PARSED_KEPT) parsed.delete(parsed.keys().next().value as string);
    parsed.set(file, { id, meta });
    return meta;
  } finally {
    await fh.close();
  }
}

/** The archive is the one meta.json describes: its size, then its sha256 (once per process per unchanged file). */
async function check(file: fsp.FileHandle, meta: LayerMeta): Promise<void> {
  const st = await file.stat({ bigint: true });
  if (Number(st.size) !== meta.bytes) throw new Damaged(`${ARCHIVE} is ${st.size} bytes, not ${meta.bytes}`);
  const id = identity(st);
  if (checked.has(id)) return;
  const hash = createHash('sha256');
  const buf = Buffer.allocUnsafe(READ_BYTES);
  for (let pos = 0; pos < meta.bytes;) {
    const { bytesRead } = await file.read(buf, 0, Math.min(READ_BYTES, meta.bytes - pos), pos);
    if (bytesRead === 0) throw new Damaged(`${ARCHIVE} ended early`);
    hash.update(buf.subarray(0, bytesRead));
    pos += bytesRead;
  }
  if (hash.digest('hex') !== meta.sha256) throw new Damaged(`${ARCHIVE} does not have the sha256 ${META} records`);
  checked.add(id);
}

/** Packs a layer into `temp/archive.tar` (sha256 and entry spans taken as it is written) and writes its meta.json. */
async function packInto(temp: string, key: string, packLayer: PackLayer): Promise<LayerMeta> {
  const p = pack();
  const spans = new TarSpans();
  const hash = createHash('sha256');
  let bytes = 0;
  const tap = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      bytes += chunk.length;
      cb(null, chunk);
    },
  });
  const written = pipeline(p, spans, tap, createWriteStream(path.join(temp, ARCHIVE), { mode: 0o600 }));
  let got: Awaited<ReturnType<PackLayer>>;
  try {
    got = await packLayer(p);
    p.finalize();
  } catch (err) {
    p.destroy(err as Error);
    await written.catch(() => undefined);
    throw err;
  }
  await written;
  if (spans.spans.length !== got.packed.length)
    throw new Error(`a fixture layer's archive holds ${spans.spans.length} entries, not the ${got.packed.length} packed`);
  const meta: LayerMeta = {
    version: CACHE_VERSION,
    key,
    bytes,
    sha256: hash.digest('hex'),
    index: got.index,
    entries: got.packed.map((e, i) => ({ ...e, ...(spans.spans[i] as Span) })),
  };
  await fsp.writeFile(path.join(temp, META), JSON.stringify(meta), { mode: 0o600 });
  return meta;
}

/** The cache at `dir`: one per folder in a process (its packings are shared by every executor). */
const caches = new Map<string, FixtureCache>();

export function fixtureCacheAt(dir: string, maxBytes: number): FixtureCache {
  const k = `${path.resolve(dir)}\0${maxBytes}`;
  let c = caches.get(k);
  if (!c) caches.set(k, (c = new FixtureCache(path.resolve(dir), maxBytes)));
  return c;
}

/** Forgets the checked files (tests: a file damaged in place, with its identity kept, is checked again). */
export function forgetChecked(): void {
  checked.clear();
}

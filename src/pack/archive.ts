/**
 * Tar archives that berth copies into a container before it starts, with the engine's archive
 * API (never a mount): the fixture (files, folders and links as links; nothing followed) and
 * the secrets (files /run/secrets/<name>, mode 0400, owned by the container's user).
 */
import { createHash } from 'node:crypto';
import { promises as fsp, type Stats } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pack, type Pack } from 'tar-stream';
import { DEFAULTS } from '../constants';
import type { FixtureEntry } from '../spec/fixture-scan';
import type { FixtureLayer } from '../spec/types';
import { FixtureCache, fixtureCacheAt, layerKey, type Lease } from './fixture-cache';
import { keptEntries, mergedIndex, type LayerPath } from './fixture-layers';
import type { Span } from './tar-spans';
import { atFd, openFileAt, readFileAtSync, UnsafePathError } from '../util/no-follow';
import { Slicer } from '../util/slicer';
import { walkTree } from '../util/tree-walk';

function entry(p: Pack, header: Parameters<Pack['entry']>[0], body?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const cb = (err?: Error | null) => (err ? reject(err) : resolve());
    if (body !== undefined) p.entry(header, body, cb);
    else p.entry(header, cb);
  });
}

function collect(p: Pack): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    p.on('data', (c: unknown) => chunks.push(c as Buffer));
    p.on('end', () => resolve(Buffer.concat(chunks)));
    p.on('error', reject);
  });
}

/** An entry of the merged working dir: its layer's entry, and which layer (none for a single fixture). */
export type LayerEntry = FixtureEntry & { layer?: number };

/**
 * A fixture's archive ready to copy in, in bounded memory whatever its size: it streams from its
 * packed layers (fixtureTar). `dispose` closes and removes what it holds.
 */
export interface Archive {
  readonly bytes: number;
  /**
   * What the archive holds of the fixture, entry by entry in the loader's terms (spec/fixture-scan.ts,
   * every file with its sha256; with layers, the merged tree): the exported workspace is compared with it. Empty without a fixture.
   */
  readonly index: readonly LayerEntry[];
  body(): Buffer | Readable;
  dispose(): Promise<void>;
}

/**
 * A file's entry: read whole while small, else streamed from its open handle (exactly the size
 * its stat gave), hashed as it passes. Returns its size and sha256 as archived.
 */
async function fileEntry(p: Pack, header: Parameters<Pack['entry']>[0], fh: fsp.FileHandle, size: number): Promise<{ size: number; sha256: string }> {
  if (size <= DEFAULTS.fixtureInlineFileBytes) {
    const body = await fh.readFile();
    await entry(p, { ...header, size: body.length }, body);
    return { size: body.length, sha256: createHash('sha256').update(body).digest('hex') };
  }
  const hash = createHash('sha256');
  await new Promise<void>((resolve, reject) => {
    const sink = p.entry({ ...header, size }, (err?: Error | null) => (err ? reject(err) : resolve()));
    const source = fh.createReadStream({ start: 0, end: size - 1, autoClose: false });
    source.on('data', (c) => hash.update(c));
    pipeline(source, sink).catch(reject);
  });
  return { size, sha256: hash.digest('hex') };
}

/** Folder entries for every component of `dir` ("workspace", "workspace/sub"), so extraction at / works. */
async function parents(p: Pack, dir: string, mode = 0o755, uid = 0, gid = 0): Promise<void> {
  const parts = dir.split('/').filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    await entry(p, { name: parts.slice(0, i).join('/') + '/', type: 'directory', mode, uid, gid });
  }
}

/** Packing a layer yields the event loop at least this often (ms). */
const PACK_SLICE_MS = 10;
/** tar's end-of-archive: two zero blocks. */
const END_OF_ARCHIVE = Buffer.alloc(1024);
/** Bytes read at a time from a packed layer as it streams to the engine. */
const STREAM_READ_BYTES = 1024 * 1024;

/** The folders leading to `workingDir` and the working dir itself (owned by uid:gid: the attempt's user may write there), with no end-of-archive. */
export async function workingDirTar(workingDir: string, uid: number, gid: number): Promise<Buffer> {
  const p = pack();
  const done = collect(p);
  const base = workingDir.replace(/^\/+/, '');
  const upper = path.posix.dirname(base);
  if (upper !== '.') await parents(p, upper);
  await entry(p, { name: base + '/', type: 'directory', mode: 0o755, uid, gid });
  p.finalize();
  const all = await done;
  return all.subarray(0, all.length - END_OF_ARCHIVE.length);
}

/** Where packed fixture layers are kept, and the bound on them (ExecutorDeps.fixtureCache). */
export interface FixtureCacheConfig {
  dir: string;
  maxBytes: number;
}

/**
 * The fixture as a tar to extract at `/`, landing in `workingDir`, owned by `uid:gid` (the working
 * dir too; no layers: only the working dir). Its layers are copied in order, each over the ones
 * before (fixture-layers.ts): the archive holds, of each layer, what the merged working dir keeps
 * of it, so no entry replaces another of another type. Each layer is packed once and kept on disk
 * (fixture-cache.ts, under `cache`; without one, in a temp folder for this copy only); the
 * archive streams from there, never held in memory. `index` is the merged working dir, each entry
 * marked with its layer (the workspace export compares with it).
 *
 * A layer is read where the loader checked it (its real path), one open folder at a time and never
 * through a link (util/no-follow.ts): a folder or file swapped for a link since is refused
 * (UnsafePathError). A layer that is a single file lands as `workingDir/<its name>`. A link inside
 * a layer is copied as a link (its target as written; the loader refused targets outside the
 * layer, and one changed since to point outside is refused here). Anything that is not a file,
 * folder or link is refused too.
 */
export async function fixtureTar(layers: readonly FixtureLayer[], workingDir: string, uid = 0, gid = 0, cache?: FixtureCacheConfig): Promise<Archive> {
  const head = await workingDirTar(workingDir, uid, gid);
  const leased = await leaseLayers(layers, workingDir, uid, gid, cache);
  const leases = leased.leases;
  const keep = keptEntries(leases.map((x) => x.meta.entries));
  let bytes = head.length + END_OF_ARCHIVE.length;
  const ranges: Range[] = [];
  leases.forEach((x, i) => {
    const entries = x.meta.entries;
    const k = keep[i] as boolean[];
    for (let j = 0; j < entries.length;) {
      if (!k[j]) {
        j++;
        continue;
      }
      const start = (entries[j] as Span).start;
      let end = (entries[j] as Span).end;
      for (j++; j < entries.length && k[j] && (entries[j] as Span).start === end; j++) end = (entries[j] as Span).end;
      ranges.push({ file: x.file, start, end });
      bytes += end - start;
    }
  });
  // one layer: its own index, as the loader scans it; more: the merged tree, each entry with its layer
  const index = leases.length === 1 ? (leases[0] as Lease).meta.index : mergedIndex(leases.map((x) => x.meta.index));
  return {
    bytes,
    index,
    body: () => Readable.from(stream(head, ranges), { objectMode: false }),
    dispose: leased.dispose,
  };
}

/** A fixture's layers packed (fixture-cache.ts), each open for reading; `dispose` closes them (and removes what was packed for this use only). */
export interface LeasedLayers {
  /** One per layer, in order. */
  readonly leases: readonly Lease[];
  dispose(): Promise<void>;
}

/**
 * Each of `layers` packed below `workingDir`, owned by `uid:gid`: from the cache at `cache` when it
 * holds it, else packed now (and kept there when it may be); without a cache, in a temp folder for
 * this use only. Read as fixtureTar says (no link followed; a layer that is no longer what its
 * digest names is packed for this use only).
 */
export async function leaseLayers(
  layers: readonly FixtureLayer[],
  workingDir: string,
  uid: number,
  gid: number,
  cache?: FixtureCacheConfig,
): Promise<LeasedLayers> {
  const base = workingDir.replace(/^\/+/, '');
  let own: string | undefined;
  const store = cache ? fixtureCacheAt(cache.dir, cache.maxBytes) : undefined;
  const leases: Lease[] = [];
  try {
    let c = store;
    if (!c && layers.length) {
      // no cache: the layers are packed for this copy only, in a temp folder of their own
      own = await fsp.mkdtemp(path.join(os.tmpdir(), 'berth-fixture-'));
      c = new FixtureCache(own, 0);
    }
    for (const l of layers) {
      const key = layerKey(l.digest, workingDir, uid, gid);
      leases.push(await (c as FixtureCache).lease(key, l.digest, (p) => packLayer(p, l.path, base, uid, gid)));
    }
  } catch (err) {
    await Promise.all(leases.map((x) => x.release().catch(() => undefined)));
    if (own) await fsp.rm(own, { recursive: true, force: true });
    throw err;
  }
  let released = false;
  return {
    leases,
    dispose: async () => {
      if (released) return;
      released = true;
      await Promise.all(leases.map((x) => x.release().catch(() => undefined)));
      if (own) await fsp.rm(own, { recursive: true, force: true });
    },
  };
}

/** Bytes `start` to `end` of an open file (a packed layer). */
export interface Range {
  file: fsp.FileHandle;
  start: number;
  end: number;
}

/** The bytes of `ranges`, in order, read in chunks of at most STREAM_READ_BYTES (positioned reads: any number of readers share a handle). */
export async function* rangeBytes(ranges: readonly Range[]): AsyncGenerator<Buffer> {
  for (const r of ranges) {
    for (let pos = r.start; pos < r.end;) {
      const want = Math.min(STREAM_READ_BYTES, r.end - pos);
      const buf = Buffer.allocUnsafe(want);
      const { bytesRead } = await r.file.read(buf, 0, want, pos);
      if (bytesRead === 0) throw new Error('a packed fixture layer ended early');
      pos += bytesRead;
      yield bytesRead === want ? buf : buf.subarray(0, bytesRead);
    }
  }
}

async function* stream(head: Buffer, ranges: readonly Range[]): AsyncGenerator<Buffer> {
  yield head;
  yield* rangeBytes(ranges);
  yield END_OF_ARCHIVE;
}

/**
 * Packs one layer into `p`, its entries named below `base` (the working dir, no leading slash;
 * the working dir itself is not an entry). Returns what was read, in the loader's terms, and each
 * packed entry's path (relative to the working dir) and type, in archive order.
 */
async function packLayer(p: Pack, fixture: string, base: string, uid: number, gid: number): Promise<{ index: FixtureEntry[]; packed: LayerPath[] }> {
  const read: FixtureEntry[] = [];
  const packed: LayerPath[] = [];
  const own = { uid, gid };
  // small files and stats are read synchronously (microseconds each from the page cache); the event loop gets a turn every few ms
  await walkTree<Stats>(fixture, { slicer: new Slicer(PACK_SLICE_MS) }, async ({ dir, name, rel, abs, depth, st }) => {
    const shown = abs;
    const tarName = path.posix.join(base, rel);
    if (depth === 0 && st.isSymbolicLink()) throw new UnsafePathError(`fixture ${fixture} is a symbolic link; berth never follows one there`);
    if (st.isDirectory()) {
      read.push({ path: rel || '.', type: 'dir', mode: st.mode & 0o777, size: 0 });
      if (rel) {
        await entry(p, { name: tarName + '/', type: 'directory', mode: st.mode & 0o7777, mtime: st.mtime, ...own });
        packed.push({ path: rel, type: 'dir' });
      }
    } else if (st.isFile()) {
      const small = readFileAtSync(dir, name, shown, DEFAULTS.fixtureInlineFileBytes);
      if (small) {
        const { st: fst, body } = small;
        await entry(p, { name: tarName, type: 'file', mode: fst.mode & 0o7777, mtime: fst.mtime, ...own, size: body.length }, body);
        read.push({ path: rel, type: 'file', mode: fst.mode & 0o777, size: body.length, sha256: createHash('sha256').update(body).digest('hex') });
        packed.push({ path: rel, type: 'file' });
        return;
      }
      const fh = await openFileAt(dir, name, shown);
      try {
        const fst = await fh.stat();
        const got = await fileEntry(p, { name: tarName, type: 'file', mode: fst.mode & 0o7777, mtime: fst.mtime, ...own }, fh, fst.size);
        read.push({ path: rel, type: 'file', mode: fst.mode & 0o777, ...got });
        packed.push({ path: rel, type: 'file' });
      } finally {
        await fh.close();
      }
    } else if (st.isSymbolicLink()) {
      const target = await fsp.readlink(atFd(dir, name));
      // Lexically inside the fixture (as the loader checked): the link's place in it is its path.
      const lands = path.posix.join(path.posix.dirname(rel), target);
      if (path.posix.isAbsolute(target) || lands === '..' || lands.startsWith('../')) {
        throw new UnsafePathError(`fixture link ${shown} points outside the fixture (to ${JSON.stringify(target)})`);
      }
      read.push({ path: rel, type: 'symlink', mode: st.mode & 0o777, size: 0, target });
      await entry(p, { name: tarName, type: 'symlink', linkname: target, mode: st.mode & 0o7777, mtime: st.mtime, ...own });
      packed.push({ path: rel, type: 'symlink' });
    } else {
      throw new UnsafePathError(`fixture entry ${shown} is not a file, folder or link`);
    }
  });
  return { index: read, packed };
}

/** Secret files to extract at `/`: run/secrets/<name>, 0400, owned by uid:gid; the folder 0500. */
export async function secretsTar(secrets: { name: string; value: Buffer }[], secretsDir: string, uid: number, gid: number): Promise<Buffer> {
  const p = pack();
  const done = collect(p);
  const dir = secretsDir.replace(/^\/+/, '');
  const parts = dir.split('/');
  for (let i = 1; i < parts.length; i++) await entry(p, { name: parts.slice(0, i).join('/') + '/', type: 'directory', mode: 0o755 });
  await entry(p, { name: dir + '/', type: 'directory', mode: 0o500, uid, gid });
  for (const s of secrets) {
    await entry(p, { name: `${dir}/${s.name}`, type: 'file', mode: 0o400, uid, gid, size: s.value.length }, s.value);
  }
  p.finalize();
  return done;
}

/** One entry into a pack, and a file's entry from its open handle (read whole while small, else streamed): the build context's archive's too. */
export { entry as tarEntry, fileEntry as tarFileEntry };

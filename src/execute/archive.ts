/**
 * Tar archives that berth copies into a container before it starts, with the engine's archive
 * API (never a mount): the fixture (files, folders and links as links; nothing followed) and
 * the secrets (files /run/secrets/<name>, mode 0400, owned by the container's user).
 */
import { createHash } from 'node:crypto';
import { createReadStream, createWriteStream, promises as fsp, type WriteStream } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pack, type Pack } from 'tar-stream';
import { DEFAULTS } from '../constants';
import { fixtureDigest } from '../spec/fixture-digest';
import type { FixtureEntry } from '../spec/fixture-scan';
import { atFd, componentsBelow, openDirAt, openDirBelow, openFileAt, UnsafePathError } from '../util/no-follow';

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

/**
 * A fixture's archive, ready to copy in: kept in memory while it is small, else spooled to a
 * temp file (0600, in a 0700 folder of its own) as it is made, so berth's memory stays bounded
 * whatever the fixture's size. `dispose` removes the spool.
 */
export interface Archive {
  readonly bytes: number;
  /**
   * What the archive holds of the fixture, entry by entry in the loader's terms (spec/fixture-scan.ts,
   * every file with its sha256): the exported workspace is compared with it. Empty without a fixture.
   */
  readonly index: readonly FixtureEntry[];
  body(): Buffer | Readable;
  dispose(): Promise<void>;
}

/** A spooled archive is read back to the engine in chunks of this size (not the stream default, 64 KiB): fewer writes to the socket, memory still bounded. */
const SPOOL_READ_BYTES = 1024 * 1024;

/** Spools what `p` packs (see Archive): in memory up to `limit` bytes, then into a temp file. */
export function spoolArchive(p: Pack, limit: number): Promise<Archive> {
  return new Promise((resolve, reject) => {
    let chunks: Buffer[] = [];
    let bytes = 0;
    let dir: string | undefined;
    let file: WriteStream | undefined;
    let opening: Promise<void> | undefined;
    const dispose = async () => {
      if (dir) await fsp.rm(dir, { recursive: true, force: true });
    };
    const fail = (err: unknown) => {
      p.destroy();
      file?.destroy();
      void dispose().finally(() => reject(err));
    };
    p.on('data', (data: unknown) => {
      const c = data as Buffer;
      bytes += c.length;
      if (file) {
        if (!file.write(c)) {
          p.pause();
          file.once('drain', () => p.resume());
        }
        return;
      }
      chunks.push(c);
      if (bytes <= limit || opening) return;
      // Over the limit: what is held goes to a temp file, and the rest follows it there.
      p.pause();
      opening = fsp.mkdtemp(path.join(os.tmpdir(), 'berth-fixture-')).then((d) => {
        dir = d;
        file = createWriteStream(path.join(d, 'fixture.tar'), { mode: 0o600 });
        file.on('error', fail);
        for (const held of chunks) file.write(held);
        chunks = [];
        p.resume();
      }, fail);
    });
    p.on('error', fail);
    p.on('end', () => {
      if (!file) {
        const body = Buffer.concat(chunks);
        resolve({ bytes, index: [], body: () => body, dispose: async () => undefined });
        return;
      }
      const f = file;
      const where = path.join(dir as string, 'fixture.tar');
      f.end(() => resolve({ bytes, index: [], body: () => createReadStream(where, { highWaterMark: SPOOL_READ_BYTES }), dispose }));
    });
  });
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

/**
 * The fixture as a tar to extract at `/`, landing in `workingDir`, owned by `uid:gid` (the working
 * dir too; null: only the working dir). A fixture
 * that is a single file lands as `workingDir/<its name>`. It is read where the loader checked it
 * (its real path), one open folder at a time and never through a link (util/no-follow.ts): a
 * folder or file swapped for a link since is refused (UnsafePathError). A link inside the
 * fixture is copied as a link (its target as written; the loader refused targets outside the
 * fixture, and one changed since to point outside is refused here). Anything that is not a
 * file, folder or link is refused too.
 */
export async function fixtureTar(
  fixture: string | null,
  workingDir: string,
  uid = 0,
  gid = 0,
  spoolOver = DEFAULTS.fixtureSpoolBytes,
  digest?: string | null,
): Promise<Archive> {
  const key = fixture !== null && digest ? [fixture, workingDir, uid, gid, digest].join('\0') : undefined;
  const hit = key !== undefined ? keptArchives.get(key) : undefined;
  if (hit) return { bytes: hit.body.length, index: hit.index, body: () => hit.body, dispose: async () => undefined };
  const p = pack();
  const done = spoolArchive(p, spoolOver);
  // what the archive holds, in the loader's terms (spec/fixture-scan.ts)
  const read: FixtureEntry[] = [];
  try {
    await fixtureEntries(p, fixture, workingDir, uid, gid, read);
  } catch (err) {
    // the spool ends with the error (and removes its temp file, if it made one)
    p.destroy(err as Error);
    await done.then(
      (a) => a.dispose(),
      () => undefined,
    );
    throw err;
  }
  const archive = { ...(await done), index: read };
  const body = archive.body();
  if (key !== undefined && Buffer.isBuffer(body) && fixtureDigest(read) === digest) keep(key, body, read);
  return archive;
}

/**
 * Fixture archives held in memory, by the fixture's real path, working dir, owner and digest: a
 * fleet's attempts that share a fixture copy in one archive, made once, instead of reading and
 * packing the same files for each (~5% of berth's CPU in a fleet of 300). An archive is kept
 * only when what it was made from, read here with no link followed, has exactly the digest the
 * spec was loaded with, so a kept one holds what a new one would (but its files' times); a
 * changed fixture has another digest, and gets an archive of its own. At most
 * KEPT_ARCHIVES, of at most KEPT_ARCHIVE_BYTES in all; the oldest go first.
 */
const keptArchives = new Map<string, { body: Buffer; index: readonly FixtureEntry[] }>();
const KEPT_ARCHIVES = 8;
const KEPT_ARCHIVE_BYTES = 32 * 1024 * 1024;

function keep(key: string, body: Buffer, index: readonly FixtureEntry[]): void {
  if (body.length > KEPT_ARCHIVE_BYTES) return;
  keptArchives.delete(key);
  keptArchives.set(key, { body, index });
  let total = 0;
  for (const b of keptArchives.values()) total += b.body.length;
  for (const [k, b] of keptArchives) {
    if (keptArchives.size <= KEPT_ARCHIVES && total <= KEPT_ARCHIVE_BYTES) break;
    keptArchives.delete(k);
    total -= b.body.length;
  }
}

/** Forget every kept archive (tests). */
export function clearKeptArchives(): void {
  keptArchives.clear();
}

/** Packs the fixture into `p`; `read` hears of each entry as the loader describes it. */
async function fixtureEntries(p: Pack, fixture: string | null, workingDir: string, uid: number, gid: number, read: FixtureEntry[]): Promise<void> {
  const base = workingDir.replace(/^\/+/, '');
  const upper = path.posix.dirname(base);
  if (upper !== '.') await parents(p, upper);
  // The working dir itself is the attempt's user's: it may write there.
  await entry(p, { name: base + '/', type: 'directory', mode: 0o755, uid, gid });
  if (fixture === null) {
    p.finalize();
    return;
  }
  const own = { uid, gid };
  const add = async (dir: fsp.FileHandle, name: string, shown: string, rel: string, inside: string): Promise<void> => {
    const at = atFd(dir.fd, name);
    const lst = await fsp.lstat(at);
    const tarName = path.posix.join(base, rel);
    if (lst.isDirectory()) {
      const sub = await openDirAt(dir, name, shown);
      try {
        const st = await sub.stat();
        read.push({ path: rel || '.', type: 'dir', mode: st.mode & 0o777, size: 0 });
        if (rel) await entry(p, { name: tarName + '/', type: 'directory', mode: st.mode & 0o7777, mtime: st.mtime, ...own });
        for (const child of (await fsp.readdir(atFd(sub.fd, '.'))).sort()) {
          await add(sub, child, path.join(shown, child), rel ? `${rel}/${child}` : child, path.posix.join(inside, child));
        }
      } finally {
        await sub.close();
      }
    } else if (lst.isFile()) {
      const fh = await openFileAt(dir, name, shown);
      try {
        const st = await fh.stat();
        const got = await fileEntry(p, { name: tarName, type: 'file', mode: st.mode & 0o7777, mtime: st.mtime, ...own }, fh, st.size);
        read.push({ path: rel, type: 'file', mode: st.mode & 0o777, ...got });
      } finally {
        await fh.close();
      }
    } else if (lst.isSymbolicLink()) {
      const target = await fsp.readlink(at);
      // Lexically inside the fixture (as the loader checked): `inside` is the link's place in it.
      const lands = path.posix.join(path.posix.dirname(inside), target);
      if (path.posix.isAbsolute(target) || lands === '..' || lands.startsWith('../')) {
        throw new UnsafePathError(`fixture link ${shown} points outside the fixture (to ${JSON.stringify(target)})`);
      }
      read.push({ path: rel, type: 'symlink', mode: lst.mode & 0o777, size: 0, target });
      await entry(p, { name: tarName, type: 'symlink', linkname: target, mode: lst.mode & 0o7777, mtime: lst.mtime, ...own });
    } else {
      throw new UnsafePathError(`fixture entry ${shown} is not a file, folder or link`);
    }
  };
  const parts = componentsBelow('/', fixture);
  const name = parts.pop();
  if (name === undefined) throw new UnsafePathError('the fixture cannot be the filesystem root');
  const parent = await openDirBelow('/', parts);
  try {
    const top = await fsp.lstat(atFd(parent.fd, name));
    if (top.isSymbolicLink()) throw new UnsafePathError(`fixture ${fixture} is a symbolic link; berth never follows one there`);
    const single = !top.isDirectory();
    await add(parent, name, fixture, single ? name : '', single ? name : '.');
  } finally {
    await parent.close();
  }
  p.finalize();
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

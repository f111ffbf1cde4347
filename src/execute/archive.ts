/**
 * Tar archives that berth copies into a container before it starts, with the engine's archive
 * API (never a mount): the fixture (regular files and folders only, links never followed) and
 * the secrets (files /run/secrets/<name>, mode 0400, owned by the container's user).
 */
import { constants, promises as fs } from 'node:fs';
import path from 'node:path';
import { Readable } from 'node:stream';
import { pack, type Pack } from 'tar-stream';

function entry(p: Pack, header: Parameters<Pack['entry']>[0], body?: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const cb = (err?: Error | null) => (err ? reject(err) : resolve());
    if (body !== undefined) p.entry(header, body, cb);
    else p.entry(header, cb);
  });
}

/** A file's entry, its content streamed from the file (opened without following a link), never held whole. */
async function fileEntry(p: Pack, header: Parameters<Pack['entry']>[0], file: string): Promise<void> {
  const handle = await fs.open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    await new Promise<void>((resolve, reject) => {
      const sink = p.entry(header, (err?: Error | null) => (err ? reject(err) : resolve()));
      const src = handle.createReadStream({ autoClose: false });
      src.on('error', (err) => {
        sink.destroy(err);
        reject(err);
      });
      src.pipe(sink as unknown as NodeJS.WritableStream);
    });
  } finally {
    await handle.close();
  }
}

function collect(p: Pack): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    p.on('data', (c: unknown) => chunks.push(c as Buffer));
    p.on('end', () => resolve(Buffer.concat(chunks)));
    p.on('error', reject);
  });
}

/** Folder entries for every component of `dir` ("workspace", "workspace/sub"), so extraction at / works. */
async function parents(p: Pack, dir: string, mode = 0o755, uid = 0, gid = 0): Promise<void> {
  const parts = dir.split('/').filter(Boolean);
  for (let i = 1; i <= parts.length; i++) {
    await entry(p, { name: parts.slice(0, i).join('/') + '/', type: 'directory', mode, uid, gid });
  }
}

/**
 * The fixture as a tar stream to extract at `/`, landing in `workingDir`: produced as the engine
 * reads it, each file's content streamed from disk (a 1.2 GiB fixture is never in memory). A
 * fixture that is a single file lands as `workingDir/<its name>`. Symlinks and special files are
 * skipped (the loader already rejects those that matter); nothing is ever followed. A file that
 * cannot be read, or changed size since it was listed, ends the stream with that error.
 */
export function fixtureTar(fixture: string, workingDir: string): Readable {
  const p = pack();
  const base = workingDir.replace(/^\/+/, '');
  const add = async (abs: string, rel: string): Promise<void> => {
    const st = await fs.lstat(abs);
    const name = path.posix.join(base, rel);
    if (st.isDirectory()) {
      if (rel) await entry(p, { name: name + '/', type: 'directory', mode: st.mode & 0o7777, mtime: st.mtime });
      for (const child of (await fs.readdir(abs)).sort()) await add(path.join(abs, child), rel ? `${rel}/${child}` : child);
    } else if (st.isFile()) {
      await fileEntry(p, { name, type: 'file', mode: st.mode & 0o7777, mtime: st.mtime, size: st.size }, abs);
    }
  };
  void (async () => {
    await parents(p, base);
    const st = await fs.lstat(fixture);
    if (st.isDirectory()) await add(fixture, '');
    else await add(fixture, path.basename(fixture));
    p.finalize();
  })().catch((err: unknown) => p.destroy(err as Error));
  // tar-stream's streams are streamx's: read through their async iterator, as a node stream.
  return Readable.from(p as unknown as AsyncIterable<Buffer>, { objectMode: false });
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

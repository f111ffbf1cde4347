/**
 * Tar archives that berth copies into a container before it starts, with the engine's archive
 * API (never a mount): the fixture (files, folders and links as links; nothing followed) and
 * the secrets (files /run/secrets/<name>, mode 0400, owned by the container's user).
 */
import { promises as fsp } from 'node:fs';
import path from 'node:path';
import { pack, type Pack } from 'tar-stream';
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
export async function fixtureTar(fixture: string | null, workingDir: string, uid = 0, gid = 0): Promise<Buffer> {
  const p = pack();
  const done = collect(p);
  const base = workingDir.replace(/^\/+/, '');
  const upper = path.posix.dirname(base);
  if (upper !== '.') await parents(p, upper);
  // The working dir itself is the attempt's user's: it may write there.
  await entry(p, { name: base + '/', type: 'directory', mode: 0o755, uid, gid });
  if (fixture === null) {
    p.finalize();
    return done;
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
        const body = await fh.readFile();
        await entry(p, { name: tarName, type: 'file', mode: st.mode & 0o7777, mtime: st.mtime, size: body.length, ...own }, body);
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
  return done;
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

/**
 * Copies into and out of a running attempt (`berth cp`, the API's files), as `docker cp` does,
 * through the engine's archive API (on a swarm, the node's engine), each recorded as an exec is
 * (record.ts, target.ts).
 *
 * - Out of the container: the archive the engine reads out is written on the host below the
 *   destination folder one component at a time with no link followed (util/no-follow.ts): a link
 *   in the container is written as a link and never followed by a later entry (one that would
 *   be is refused), and a destination that is a link planted there is refused, never followed.
 *   Hard links, devices and pipes are left out (said so).
 * - Into the container: a host file or folder, walked with no link followed (a link is copied as
 *   a link), packed as the engine reads it; the files are the attempt's user's (a numeric user of
 *   the container, or one its /etc/passwd names; else root's, as the fixture's), modes kept.
 */
import { createReadStream, promises as fsp, constants as C } from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable, type Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { extract, pack, type Header } from 'tar-stream';
import { describeEngineError, isNotFound } from '../engine/errors';
import type { ContainerClient, Reached } from '../engine/types';
import { atFd, openDirBelow, UnsafePathError } from '../util/no-follow';
import { walkTree } from '../util/tree-walk';
import { appendLine, type TouchKind } from './record';
import { enter, type Refusal, type Target } from './target';
import { randomBytes } from 'node:crypto';

export interface CopyResult {
  bytes: number;
  /** What was left out, in words (hard links, devices). */
  notes: string[];
}

/** A path in the container: absolute, no `..` (a path that climbs is refused, never resolved). */
export function containerPath(p: string, workingDir?: string): string | undefined {
  if (p === '' || p.includes('\0')) return undefined;
  const full = p.startsWith('/') ? p : workingDir ? `${workingDir.replace(/\/+$/, '')}/${p}` : undefined;
  if (!full) return undefined;
  if (full.split('/').some((s) => s === '..')) return undefined;
  return path.posix.normalize(full).replace(/(.)\/+$/, '$1');
}

/** What is at `p` in the container: its first archive entry's type (undefined: nothing there). */
export async function statIn(c: ContainerClient, id: string, p: string): Promise<{ type: string; size: number; linkname?: string } | undefined> {
  let tar: Readable;
  try {
    tar = await c.getArchive(id, p);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const x = extract();
  try {
    return await new Promise((resolve, reject) => {
      x.once('entry', (h: Header, stream) => {
        const body = stream as unknown as Readable;
        resolve({ type: h.type ?? 'file', size: h.size ?? 0, ...(h.linkname ? { linkname: h.linkname } : {}) });
        body.resume();
      });
      x.once('finish', () => resolve(undefined));
      x.once('error', reject);
      tar.on('error', reject);
      tar.pipe(x);
    });
  } finally {
    tar.destroy();
    x.destroy();
  }
}

/** The numeric owner files copied in get: the container's user (numeric, or found in its /etc/passwd and /etc/group), else root. */
export async function ownerIn(c: ContainerClient, id: string): Promise<{ uid: number; gid: number }> {
  const user = (await c.inspect(id)).config.user;
  if (!user) return { uid: 0, gid: 0 };
  const [u, g] = user.split(':');
  const num = (s: string | undefined) => (s !== undefined && /^\d+$/.test(s) ? Number(s) : undefined);
  const byName = async (file: string, name: string | undefined, col: number): Promise<number | undefined> => {
    if (name === undefined || num(name) !== undefined) return num(name);
    const text = await fileIn(c, id, file, 256 * 1024).catch(() => undefined);
    const line = text?.split('\n').find((l) => l.split(':')[0] === name);
    return num(line?.split(':')[col]);
  };
  const uid = (await byName('/etc/passwd', u, 2)) ?? 0;
  const gid = g !== undefined ? ((await byName('/etc/group', g, 2)) ?? 0) : ((await byName('/etc/passwd', u, 3)) ?? 0);
  return { uid, gid };
}

/** A small regular file of the container, as text (at most `max` bytes). */
async function fileIn(c: ContainerClient, id: string, p: string, max: number): Promise<string | undefined> {
  const tar = await c.getArchive(id, p);
  const x = extract();
  try {
    return await new Promise((resolve, reject) => {
      x.once('entry', (h: Header, stream) => {
        const body = stream as unknown as Readable;
        if (h.type !== 'file' || (h.size ?? 0) > max) {
          body.resume();
          return resolve(undefined);
        }
        const chunks: Buffer[] = [];
        body.on('data', (d: Buffer) => chunks.push(d));
        body.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      });
      x.once('finish', () => resolve(undefined));
      x.once('error', reject);
      tar.on('error', reject);
      tar.pipe(x);
    });
  } finally {
    tar.destroy();
    x.destroy();
  }
}

/** Records the copy around `work` (begin, the container found running, end); the refusal when it is not. */
async function recorded<T extends { bytes: number }>(
  t: Target,
  kind: TouchKind,
  by: 'cli' | 'api',
  from: string,
  to: string,
  work: (r: Reached) => Promise<T>,
): Promise<T | Refusal> {
  const id = randomBytes(8).toString('hex');
  const began = Date.now();
  const reached = await enter(t, { id, at: new Date(began).toISOString(), event: 'begin', kind, by, from, to });
  if ('refused' in reached) return reached;
  const end = (exitCode: number, extra: { bytes?: number; error?: string }) =>
    appendLine(
      t.where,
      t.redaction.redactor.redactJson({ id, at: new Date().toISOString(), event: 'end' as const, kind, exitCode, durationMs: Date.now() - began, ...extra }),
    );
  try {
    const r = await work(reached);
    await end(0, { bytes: r.bytes });
    return r;
  } catch (err) {
    await end(1, { error: err instanceof Error ? err.message : String(err) });
    throw err;
  }
}

export class CopyError extends Error {
  constructor(
    message: string,
    readonly kind: 'not-found' | 'bad-request' | 'conflict',
  ) {
    super(message);
  }
}

// ---- into the container ----

/** One file's bytes to `dest` in the container (the API's PUT): missing folders on the way made, the attempt's user's. */
export async function putFile(t: Target, dest: string, body: Readable, size: number, by: 'cli' | 'api'): Promise<CopyResult | Refusal> {
  return recorded(t, 'copy-in', by, `(${size} bytes)`, `${t.name}:${dest}`, async (r) => {
    const c = r.engine.containers;
    const owner = await ownerIn(c, r.id);
    // the deepest folder on the way that exists; the ones below it are made by the archive
    const parts = dest.split('/').filter(Boolean);
    const name = parts.pop();
    if (!name) throw new CopyError(`${dest}: a file path expected`, 'bad-request');
    let at = parts.length;
    for (; at > 0; at--) {
      const s = await statIn(c, r.id, '/' + parts.slice(0, at).join('/'));
      if (!s) continue;
      if (s.type !== 'directory') throw new CopyError(`/${parts.slice(0, at).join('/')} is not a folder in the container`, 'conflict');
      break;
    }
    const base = '/' + parts.slice(0, at).join('/');
    const p = pack();
    for (let i = at; i < parts.length; i++) p.entry({ name: parts.slice(at, i + 1).join('/') + '/', type: 'directory', mode: 0o755, ...owner });
    const rel = [...parts.slice(at), name].join('/');
    let bytes = 0;
    const entry = p.entry({ name: rel, type: 'file', mode: 0o644, size, ...owner }, (err) => {
      if (err) p.destroy(err);
      else p.finalize();
    });
    const counted = new PassThrough();
    counted.on('data', (d: Buffer) => (bytes += d.length));
    const fed = pipeline(body, counted, entry);
    const put = c.putArchive(r.id, base, p as unknown as Readable);
    await Promise.all([fed, put]);
    return { bytes, notes: [] };
  });
}

/** A host file or folder into the container, `docker cp SRC NAME:DEST`'s way. */
export async function copyIn(t: Target, src: string, dest: string, by: 'cli' | 'api'): Promise<CopyResult | Refusal> {
  return recorded(t, 'copy-in', by, src, `${t.name}:${dest}`, async (r) => {
    const c = r.engine.containers;
    const st = await fsp.lstat(src);
    const there = await statIn(c, r.id, dest);
    // into an existing folder under the source's name; else it becomes `dest`
    let base: string;
    let rootName: string;
    if (there?.type === 'directory') {
      base = dest;
      rootName = path.basename(path.resolve(src));
    } else {
      if (there && st.isDirectory()) throw new CopyError(`cannot copy a folder over the file ${dest}`, 'conflict');
      if (dest.endsWith('/')) throw new CopyError(`${dest}: no such folder in the container`, 'not-found');
      base = path.posix.dirname(dest);
      rootName = path.posix.basename(dest);
      if (!(await statIn(c, r.id, base))) throw new CopyError(`${base}: no such folder in the container`, 'not-found');
    }
    const owner = await ownerIn(c, r.id);
    const p = pack();
    const notes: string[] = [];
    let bytes = 0;
    const packing = walkTree(path.resolve(src), {}, async (e) => {
      const name = e.rel === '' || e.depth === 0 ? rootName : `${rootName}/${e.rel}`;
      const mode = Number(e.st.mode) & 0o7777 & ~0o6000;
      if (e.st.isDirectory()) p.entry({ name: `${name}/`, type: 'directory', mode, ...owner, mtime: e.st.mtime });
      else if (e.st.isSymbolicLink()) p.entry({ name, type: 'symlink', linkname: await fsp.readlink(atFd(e.dir, e.name)), mode, ...owner, mtime: e.st.mtime });
      else if (e.st.isFile()) {
        const fh = await fsp.open(atFd(e.dir, e.name), C.O_RDONLY | C.O_NOFOLLOW);
        try {
          const size = (await fh.stat()).size;
          await new Promise<void>((resolve, reject) => {
            const w = p.entry({ name, type: 'file', mode, size, ...owner, mtime: e.st.mtime }, (err) => (err ? reject(err) : resolve()));
            createReadStream('', { fd: fh.fd, autoClose: false, start: 0, end: size - 1 })
              .on('error', reject)
              .pipe(w);
          });
          bytes += size;
        } finally {
          await fh.close();
        }
      } else notes.push(`${e.abs}: not a file, folder or link; left out`);
    }).then(
      () => p.finalize(),
      (err: unknown) => p.destroy(err as Error),
    );
    await Promise.all([packing, c.putArchive(r.id, base, p as unknown as Readable)]);
    return { bytes, notes };
  });
}

/** A tar on `input` (`berth cp - NAME:DEST`) extracted at `dest`, a folder of the container. */
export async function copyTarIn(t: Target, input: Readable, dest: string, by: 'cli' | 'api'): Promise<CopyResult | Refusal> {
  return recorded(t, 'copy-in', by, '-', `${t.name}:${dest}`, async (r) => {
    let bytes = 0;
    const counted = new PassThrough();
    counted.on('data', (d: Buffer) => (bytes += d.length));
    input.pipe(counted);
    await r.engine.containers.putArchive(r.id, dest, counted);
    return { bytes, notes: [] };
  });
}

// ---- out of the container ----

/** One regular file's bytes out of the container (the API's GET): its size, and its body as it streams. */
export async function getFile(t: Target, src: string, by: 'cli' | 'api', into: (size: number, body: Readable) => Promise<void>): Promise<CopyResult | Refusal> {
  return recorded(t, 'copy-out', by, `${t.name}:${src}`, '(the answer)', async (r) => {
    const tar = await r.engine.containers.getArchive(r.id, src).catch((err: unknown) => {
      if (isNotFound(err)) throw new CopyError(`${src}: no such file in the container`, 'not-found');
      throw err;
    });
    const x = extract();
    let bytes = 0;
    try {
      await new Promise<void>((resolve, reject) => {
        x.once('entry', (h: Header, stream) => {
          const body = stream as unknown as Readable;
          if (h.type !== 'file') {
            body.resume();
            const what =
              h.type === 'symlink' ? `a link to ${h.linkname ?? '?'}; berth never follows one` : h.type === 'directory' ? 'a folder' : `a ${h.type ?? '?'}`;
            return reject(new CopyError(`${src} is ${what}, not a regular file`, 'bad-request'));
          }
          bytes = h.size ?? 0;
          into(bytes, body).then(() => resolve(), reject);
        });
        x.once('finish', () => reject(new CopyError(`${src}: no such file in the container`, 'not-found')));
        x.once('error', reject);
        tar.on('error', reject);
        tar.pipe(x);
      });
    } finally {
      tar.destroy();
      x.destroy();
    }
    return { bytes, notes: [] };
  });
}

/** `docker cp NAME:SRC DEST`: onto the host, below DEST's folder, no link followed. `-`: the archive itself to `stdout`. */
export async function copyOut(t: Target, src: string, dest: string, by: 'cli' | 'api', stdout?: Writable): Promise<CopyResult | Refusal> {
  return recorded(t, 'copy-out', by, `${t.name}:${src}`, dest, async (r) => {
    const contentsOnly = /\/\.$/.test(src);
    const from = contentsOnly ? src.slice(0, -2) || '/' : src;
    const tar = await r.engine.containers.getArchive(r.id, from).catch((err: unknown) => {
      if (isNotFound(err)) throw new CopyError(`${from}: no such file or folder in the container`, 'not-found');
      throw err;
    });
    if (dest === '-') {
      let bytes = 0;
      tar.on('data', (d: Buffer) => (bytes += d.length));
      await pipeline(tar, stdout as Writable, { end: false });
      return { bytes, notes: [] };
    }
    const target = path.resolve(dest);
    const st = await fsp.lstat(target).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (st?.isSymbolicLink()) throw new UnsafePathError(`${target} is a symbolic link; berth never follows one there`);
    // into an existing folder (under the source's name, or its contents with `SRC/.`); else it becomes DEST
    const into = st?.isDirectory() ? { base: target, rename: contentsOnly ? '' : undefined } : { base: path.dirname(target), rename: path.basename(target) };
    if (!st && dest.endsWith('/')) throw new CopyError(`${dest}: no such folder`, 'not-found');
    return writeTar(tar, into.base, into.rename);
  });
}

/**
 * Writes an archive's entries below `base` (trusted as given): its first component renamed to
 * `rename` ('' : dropped, the contents land in `base`), each entry's folders opened one at a time
 * with no link followed (so a link an earlier entry made is never gone through), files written
 * with O_NOFOLLOW over what is there.
 */
async function writeTar(tar: Readable, base: string, rename: string | undefined): Promise<CopyResult> {
  const x = extract();
  const notes: string[] = [];
  let bytes = 0;
  x.on('entry', (h: Header, stream, next) => {
    const body = stream as unknown as Readable;
    writeEntry(base, h, body, rename)
      .then((n) => {
        if (typeof n === 'string') notes.push(n);
        else bytes += n;
        next();
      })
      .catch((err: unknown) => {
        body.resume();
        next(err as Error);
      });
  });
  await pipeline(tar, x);
  return { bytes, notes };
}

async function writeEntry(base: string, h: Header, body: Readable, rename: string | undefined): Promise<number | string> {
  const parts = h.name
    .replace(/^\.?\/+/, '')
    .split('/')
    .filter((s: string) => s !== '');
  if (parts.some((p: string) => p === '..' || p === '.')) throw new UnsafePathError(`archive entry ${h.name} climbs out; refused`);
  if (rename === '') parts.shift();
  else if (rename !== undefined && parts.length) parts[0] = rename;
  const name = parts.pop();
  if (name === undefined) {
    body.resume();
    return 0;
  }
  const shown = path.join(base, ...parts, name);
  const mode = (h.mode ?? 0o644) & 0o777;
  const dir = await openDirBelow(base, parts, { create: true });
  try {
    const at = atFd(dir.fd, name);
    switch (h.type) {
      case 'directory': {
        await fsp.mkdir(at, mode | 0o700).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
        const sub = await openDirBelow(base, [...parts, name]);
        await sub.close();
        body.resume();
        return 0;
      }
      case 'symlink': {
        const existing = await fsp.lstat(at).catch(() => undefined);
        if (existing && !existing.isDirectory()) await fsp.unlink(at);
        await fsp.symlink(h.linkname ?? '', at);
        body.resume();
        return 0;
      }
      case 'file':
      case 'contiguous-file': {
        const fh = await fsp.open(at, C.O_WRONLY | C.O_CREAT | C.O_TRUNC | C.O_NOFOLLOW, mode).catch((err: NodeJS.ErrnoException) => {
          if (err.code === 'ELOOP') throw new UnsafePathError(`${shown} is a symbolic link; berth never follows one there`);
          throw err;
        });
        let n = 0;
        try {
          for await (const chunk of body) {
            await fh.write(chunk as Buffer);
            n += (chunk as Buffer).length;
          }
          await fh.chmod(mode);
        } finally {
          await fh.close();
        }
        return n;
      }
      default:
        body.resume();
        return `${shown}: a ${h.type ?? 'special file'} in the container; left out`;
    }
  } finally {
    await dir.close();
  }
}

/** An engine error of a copy, in words. */
export function copyErrorText(err: unknown): string {
  return err instanceof CopyError || err instanceof UnsafePathError ? err.message : describeEngineError(err);
}

export { Readable };

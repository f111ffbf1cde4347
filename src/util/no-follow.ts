/**
 * Filesystem access that never follows a symbolic link below a trusted base folder. Node has no
 * openat(2); on Linux, a path through `/proc/self/fd/<fd>/<name>` resolves `<fd>` to exactly the
 * folder that is open (not to a path looked up again) and then `<name>` inside it, so opening one
 * component at a time with O_NOFOLLOW behaves as openat does: a folder swapped for a link after
 * it was checked is refused (ELOOP), never followed. The base itself is trusted as given (the
 * user's specs or results root may sit behind a link of their own making).
 */
import { closeSync, constants as C, fstatSync, lstatSync, openSync, promises as fsp, readSync, type Stats } from 'node:fs';
import path from 'node:path';

/** A path below a base that holds a link or something else that does not qualify; names the path. */
export class UnsafePathError extends Error {
  readonly code = 'UNSAFE_PATH';
}

const DIR_FLAGS = C.O_RDONLY | C.O_DIRECTORY | C.O_NOFOLLOW;

/** `/proc/self/fd/<fd>/<name>`: `name` inside the open folder `fd`, as openat would find it. */
export function atFd(fd: number, name: string): string {
  return `/proc/self/fd/${fd}/${name}`;
}

/** The components of `p` below `base` ([] when equal); throws when `p` is not at or below it. */
export function componentsBelow(base: string, p: string): string[] {
  const rel = path.relative(path.resolve(base), path.resolve(p));
  if (rel === '') return [];
  if (rel === '..' || rel.startsWith(`..${path.sep}`) || path.isAbsolute(rel)) throw new UnsafePathError(`${p} is not inside ${base}`);
  return rel.split(path.sep);
}

function isErr(err: unknown, ...codes: string[]): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && codes.includes(code);
}

/** Why opening `at` (shown as `shown`) failed, in words: a link is named as one. */
async function refusal(at: string, shown: string, err: unknown): Promise<Error> {
  // O_NOFOLLOW on a link gives ELOOP, or ENOTDIR with O_DIRECTORY: ask which it is.
  const link =
    isErr(err, 'ELOOP') ||
    (isErr(err, 'ENOTDIR') &&
      (await fsp.lstat(at).then(
        (st) => st.isSymbolicLink(),
        () => false,
      )));
  if (link) return new UnsafePathError(`${shown} is a symbolic link; berth never follows one there`);
  if (isErr(err, 'ENOTDIR')) return new UnsafePathError(`${shown} is not a folder`);
  return err instanceof Error ? err : new Error(String(err));
}

/** Opens the folder `name` inside the open folder `dir`, never through a link (`shown` names it in errors). */
export async function openDirAt(dir: fsp.FileHandle, name: string, shown: string): Promise<fsp.FileHandle> {
  const at = atFd(dir.fd, name);
  try {
    return await fsp.open(at, DIR_FLAGS);
  } catch (err) {
    throw await refusal(at, shown, err);
  }
}

/** Opens the regular file `name` inside the open folder `dir` (a handle or a descriptor) for reading, never through a link. */
export async function openFileAt(dir: fsp.FileHandle | number, name: string, shown: string): Promise<fsp.FileHandle> {
  let fh: fsp.FileHandle;
  const at = atFd(typeof dir === 'number' ? dir : dir.fd, name);
  try {
    fh = await fsp.open(at, C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    throw await refusal(at, shown, err);
  }
  const st = await fh.stat().catch(async (err: unknown) => {
    await fh.close();
    throw err;
  });
  if (!st.isFile()) {
    await fh.close();
    throw new UnsafePathError(`${shown} is not a regular file`);
  }
  return fh;
}

/**
 * The file `name` inside the open folder `dir` (a descriptor), read whole and synchronously, never
 * through a link; undefined when it is larger than `max` bytes (the caller streams it instead).
 * For packing thousands of small files: page-cached reads cost microseconds, where a thread-pool
 * round trip per call (open, stat, read, close) costs far more; the caller yields between files.
 */
export function readFileAtSync(dir: number, name: string, shown: string, max: number): { st: Stats; body: Buffer } | undefined {
  let fd: number;
  try {
    fd = openSync(atFd(dir, name), C.O_RDONLY | C.O_NOFOLLOW | C.O_NONBLOCK);
  } catch (err) {
    if (isErr(err, 'ELOOP')) throw new UnsafePathError(`${shown} is a symbolic link; berth never follows one there`);
    throw err;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile()) throw new UnsafePathError(`${shown} is not a regular file`);
    if (st.size > max) return undefined;
    const body = Buffer.allocUnsafe(st.size);
    let got = 0;
    while (got < st.size) {
      const n = readSync(fd, body, got, st.size - got, got);
      if (n === 0) break;
      got += n;
    }
    return { st, body: got === st.size ? body : body.subarray(0, got) };
  } finally {
    closeSync(fd);
  }
}

/**
 * Opens the folder `base/<parts...>` one component at a time, no link followed below `base`,
 * and returns its handle (the caller closes it). `create`: missing folders are made (mode 0o755
 * before the umask); `exclusive` names a component index that must be made here, not found.
 */
export async function openDirBelow(base: string, parts: readonly string[], opts: { create?: boolean; exclusive?: number } = {}): Promise<fsp.FileHandle> {
  let dir = await fsp.open(base, C.O_RDONLY | C.O_DIRECTORY);
  let shown = base;
  try {
    for (const [i, name] of parts.entries()) {
      if (name === '' || name === '.' || name === '..') throw new UnsafePathError(`${path.join(shown, name)}: "${name}" is not a folder name`);
      shown = path.join(shown, name);
      const at = atFd(dir.fd, name);
      if (opts.create) {
        try {
          await fsp.mkdir(at, 0o755);
        } catch (err) {
          if (!isErr(err, 'EEXIST')) throw err;
          if (opts.exclusive === i) throw Object.assign(new Error(`${shown} already exists`), { code: 'EEXIST' });
        }
      }
      let next: fsp.FileHandle;
      try {
        next = await fsp.open(at, DIR_FLAGS);
      } catch (err) {
        throw await refusal(at, shown, err);
      }
      await dir.close();
      dir = next;
    }
    return dir;
  } catch (err) {
    await dir.close().catch(() => undefined);
    throw err;
  }
}

/**
 * Makes folder `p` and every missing folder between `base` and it, following no link below
 * `base`; `owner`: `p` itself is then owned by that uid:gid (through its open handle).
 */
export async function mkdirBelow(base: string, p: string, opts: { exclusiveLast?: boolean; owner?: { uid: number; gid: number } } = {}): Promise<void> {
  const parts = componentsBelow(base, p);
  const h = await openDirBelow(base, parts, { create: true, ...(opts.exclusiveLast ? { exclusive: parts.length - 1 } : {}) });
  try {
    if (opts.owner) await h.chown(opts.owner.uid, opts.owner.gid);
  } finally {
    await h.close();
  }
}

/** Throws UnsafePathError unless every component of `p` below `base` is a real folder (no link). */
export async function assertFoldersBelow(base: string, p: string): Promise<void> {
  const h = await openDirBelow(base, componentsBelow(base, p));
  await h.close();
}

/**
 * Opens the regular file `base/<rel>` for reading, following no link below `base` (the file
 * itself included). Throws UnsafePathError when a component is a link or the file is not a
 * regular file.
 */
export async function openFileBelow(base: string, rel: string): Promise<fsp.FileHandle> {
  const parts = componentsBelow(base, path.resolve(base, rel));
  const name = parts.pop();
  if (name === undefined) throw new UnsafePathError(`${base} is not a file`);
  const dir = await openDirBelow(base, parts);
  try {
    return await openFileAt(dir, name, path.join(base, ...parts, name));
  } finally {
    await dir.close();
  }
}

/**
 * Small files below trusted roots, read synchronously with no link followed below a root
 * (readFileAtSync), the folders on the way kept open: a run of files in one folder costs one
 * open each, not a walk from the root. For reading hundreds of files of a tree berth wrote or
 * was given (an export's files/, a fixture): every call is synchronous (microseconds from the
 * page cache, where each async call is a thread-pool round trip), so no folder is closed while
 * a read uses it; the caller yields between files. Holds at most `keep` folders open (at least
 * 2), the least recently used closed first. `close()` when done.
 */
export class SyncFolders {
  private readonly fds = new Map<string, number>();
  private readonly keep: number;

  constructor(keep = 32) {
    this.keep = Math.max(2, keep);
  }

  /**
   * `rel`'s bytes below `root` and its stat, or undefined when it is larger than `max`. Throws
   * UnsafePathError when a component is a link or not a folder, or the file is not a regular
   * file; ENOENT when something is missing.
   */
  read(root: string, rel: string, max: number): { st: Stats; body: Buffer } | undefined {
    const parts = componentsBelow(root, path.resolve(root, rel));
    const name = parts.pop();
    if (name === undefined) throw new UnsafePathError(`${root} is not a file`);
    return readFileAtSync(this.dir(root, parts), name, path.join(root, ...parts, name), max);
  }

  /** The folder `root/<parts...>`, opened one component at a time (or found open). */
  private dir(root: string, parts: readonly string[]): number {
    const key = (n: number): string => `${root}\0${parts.slice(0, n).join('/')}`;
    let i = parts.length;
    let fd: number | undefined;
    for (; i >= 0 && fd === undefined; i--) fd = this.take(key(i));
    i++;
    if (fd === undefined) {
      fd = openSync(root, C.O_RDONLY | C.O_DIRECTORY);
      this.put(key(0), fd);
      i = 0;
    }
    let shown = path.join(root, ...parts.slice(0, i));
    for (let j = i; j < parts.length; j++) {
      const name = parts[j] as string;
      if (name === '' || name === '.' || name === '..') throw new UnsafePathError(`${path.join(shown, name)}: "${name}" is not a folder name`);
      shown = path.join(shown, name);
      fd = openDirAtSync(fd, name, shown);
      this.put(key(j + 1), fd);
    }
    return fd;
  }

  /** An open folder by key, made the most recently used. */
  private take(key: string): number | undefined {
    const fd = this.fds.get(key);
    if (fd === undefined) return undefined;
    this.fds.delete(key);
    this.fds.set(key, fd);
    return fd;
  }

  /** Keeps `fd` open under `key`; past `keep`, the least recently used is closed (never the one just taken or put). */
  private put(key: string, fd: number): void {
    this.fds.set(key, fd);
    while (this.fds.size > this.keep) {
      const [k, old] = this.fds.entries().next().value as [string, number];
      this.fds.delete(k);
      closeSync(old);
    }
  }

  close(): void {
    for (const fd of this.fds.values()) closeSync(fd);
    this.fds.clear();
  }
}

/** openDirAt() without the event loop: the folder `name` inside the open folder `dir` (a descriptor; the caller closes it). */
export function openDirAtSync(dir: number, name: string, shown: string): number {
  const at = atFd(dir, name);
  try {
    return openSync(at, DIR_FLAGS);
  } catch (err) {
    throw refusalSync(at, shown, err);
  }
}

/** refusal() without the event loop: why opening folder `at` failed, a link named as one. */
function refusalSync(at: string, shown: string, err: unknown): Error {
  let link = isErr(err, 'ELOOP');
  if (!link && isErr(err, 'ENOTDIR')) {
    try {
      link = lstatSync(at).isSymbolicLink();
    } catch {
      link = false;
    }
  }
  if (link) return new UnsafePathError(`${shown} is a symbolic link; berth never follows one there`);
  if (isErr(err, 'ENOTDIR')) return new UnsafePathError(`${shown} is not a folder`);
  return err instanceof Error ? err : new Error(String(err));
}

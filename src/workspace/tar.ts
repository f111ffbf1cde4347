/**
 * The workspace's tar (read out of the stopped container) against the fixture as copied in: what
 * was added, modified, deleted or changed type, with every added or modified regular file written
 * under `filesDir`. Everything in the tar is hostile input:
 * - streamed entry by entry: a small file read whole and held until it is written (at most
 *   DEFAULTS.workspaceHeldBytes held), a larger one hashed as it is written (never held whole);
 * - names that are not UTF-8, that leave the tree (`..`, absolute) or repeat, are left out
 *   (`name-not-utf8`, `unsafe-name`); deeper or longer than DEFAULTS allows, `too-deep`;
 * - links are never followed nor written: listed with their target, or left out when the target
 *   leaves the tree (`link-outside`); devices, fifos and the like are `not-regular`;
 * - default and user exclusions (picomatch), and the fixture's .gitignore files (gitignore.ts),
 *   leave out a path and all below it, listed once;
 * - caps: bytes written under files/ (`maxBytes`), entries listed (`maxFiles`): the first entry
 *   over a cap is listed with the cap's reason, `truncated` is set and the stream is destroyed.
 * Files are written below `filesDir` (a fresh folder of berth's) one component at a time with no
 * link followed, each created exclusively.
 */
import { isUtf8 } from 'node:buffer';
import { createHash, hash, randomBytes } from 'node:crypto';
import { closeSync, constants as C, fchmodSync, fstatSync, mkdirSync, openSync, promises as fsp, unlinkSync, writeSync } from 'node:fs';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import picomatch from 'picomatch';
import { extract, type Header } from 'tar-stream';
import { DEFAULTS } from '../constants';
import type { FixtureEntry } from '../spec/fixture-scan';
import { isCode } from '../status/atomic-file';
import { atFd, openDirAtSync, openDirBelow, UnsafePathError } from '../util/no-follow';
import { Slicer } from '../util/slicer';
import type { Redactor } from '../util/redact';
import type { ChangedEntry, EntryType, OmittedReason, WorkspaceChanges } from './types';

export interface CollectOptions {
  /** The fixture as copied in, by path relative to workingDir; null: no fixture (everything is added). */
  index: ReadonlyMap<string, FixtureEntry> | null;
  /** The user's globs (the defaults always apply). */
  exclude: readonly string[];
  /** The fixture's `.gitignore` files as one matcher (gitignore.ts): what it ignores is left out as excluded. */
  gitignored?: (path: string, dir: boolean) => boolean;
  maxBytes: number;
  maxFiles: number;
  /** A fresh folder of berth's: added and modified files land below it. */
  filesDir: string;
  signal?: AbortSignal;
  /** The run's secrets: every file written is scanned for their values as it is hashed (flagged `secrets`). */
  redactor?: Redactor;
  /**
   * Called for every file listed whose bytes were read whole (at most
   * DEFAULTS.workspaceCompareInMemoryBytes), as it is listed: its entry, the fixture's, its bytes
   * (the export makes its patch section while the archive is still read). A file taken back out
   * later (its write failed) is not in the lists returned.
   */
  onHeld?: (e: ChangedEntry, from: FixtureEntry | undefined, bytes: Buffer) => void;
  /** Bytes of small files' buffers held before they are written (default DEFAULTS.workspaceHeldBytes). */
  heldBytes?: number;
}

/** What the archive held that changed: changes.json's lists, and the files written. */
export type Collected = Pick<WorkspaceChanges, 'added' | 'modified' | 'deleted' | 'typeChanged' | 'omitted' | 'truncated'> & {
  /**
   * Files written under filesDir (relative paths) whose mode is still to be set: those without
   * the owner's read bit (set after the patch has read them; every other file has its mode).
   */
  modeLater: { path: string; mode: number }[];
};

/** Index entry type → the export's. */
export function entryType(t: FixtureEntry['type']): EntryType {
  return t === 'symlink' ? 'link' : t;
}

/**
 * A matcher for excluded paths: the defaults and the user's globs; a glob without a slash matches
 * a name at any depth (as .gitignore), one with a slash a path from workingDir.
 */
export function excluder(user: readonly string[]): (path: string) => boolean {
  const globs = [...DEFAULTS.workspaceExclude, ...user].map((g) => (g.includes('/') ? g.replace(/^\/+/, '') : `**/${g}`));
  return picomatch(globs, { dot: true });
}

/** Whether a path (`dir`: a folder) is left out: the globs, and the fixture's .gitignore files when given. */
type Excluded = (path: string, dir: boolean) => boolean;

/** The shallowest of `rel` and its ancestors (folders) that `isExcluded` matches, if any; `dir`: `rel` itself is a folder. */
function excludedAt(parts: readonly string[], isExcluded: Excluded, dir: boolean): string | undefined {
  for (let i = 1; i <= parts.length; i++) {
    const p = parts.slice(0, i).join('/');
    if (isExcluded(p, i < parts.length || dir)) return p;
  }
  return undefined;
}

/** Whether `s` holds only ASCII (then its latin1 bytes are its UTF-8 text). */
function isAscii(s: string): boolean {
  for (let i = 0; i < s.length; i++) if (s.charCodeAt(i) > 0x7f) return false;
  return true;
}

/** A header's name (or link target) as bytes: pax values arrive decoded as UTF-8, the rest as latin1 (its bytes). */
function nameBytes(value: string, fromPax: boolean): { text: string; utf8: boolean } {
  if (fromPax) return { text: value, utf8: !value.includes('\uFFFD') };
  if (isAscii(value)) return { text: value, utf8: true };
  const raw = Buffer.from(value, 'latin1');
  return { text: raw.toString('utf8'), utf8: isUtf8(raw) };
}

/** At most this many characters of a path left out are kept (a name may be very long). */
const SHOWN_PATH = 1024;
const shown = (p: string): string => (p.length > SHOWN_PATH ? `${p.slice(0, SHOWN_PATH)}…` : p);

/** Drains an entry the export does not keep. */
async function drain(stream: AsyncIterable<unknown>): Promise<void> {
  for await (const _chunk of stream) {
    // read and dropped
  }
}

class Stop extends Error {}

/** A name that cannot be a file below files/ (a hostile tar: a file where a folder was, or the reverse). */
const isHostileName = (err: unknown): boolean => err instanceof UnsafePathError || isCode(err, 'EEXIST', 'ENOTDIR', 'EISDIR');

/** The longest a flush of the files held holds the event loop at once (synchronous writes). */
const FLUSH_SLICE_MS = 10;

/** A file below files/ is made so: exclusively, never through a link. */
const CREATE = C.O_WRONLY | C.O_CREAT | C.O_EXCL | C.O_NOFOLLOW;

/** Whether a file of `mode` can be read by its owner (then it gets the mode as it is written). */
const readable = (mode: number): boolean => (mode & 0o400) !== 0;

/**
 * Reads `tar` (entries named `<top>/...`, as the engine's archive API names them) and compares it
 * with `opts.index`. Destroys `tar` when it stops early (a cap, an error).
 */
export async function collectChanges(tar: Readable, top: string, opts: CollectOptions): Promise<Collected> {
  const out: Collected = { added: [], modified: [], deleted: [], typeChanged: [], omitted: [], truncated: false, modeLater: [] };
  const globbed = excluder(opts.exclude);
  const gitignored = opts.gitignored;
  const isExcluded: Excluded = gitignored ? (p, dir) => globbed(p) || gitignored(p, dir) : (p) => globbed(p);
  const excludedSeen = new Set<string>();
  /** excludedAt of a folder (null: none), by its path: a folder's entries come together, its answer is its own. */
  const excludedDirs = new Map<string, string | null>();
  const excludedIn = (parts: readonly string[], dir: boolean): string | undefined => {
    if (parts.length > 1) {
      const up = parts.slice(0, -1);
      const key = up.join('/');
      let at = excludedDirs.get(key);
      if (at === undefined) excludedDirs.set(key, (at = excludedAt(up, isExcluded, true) ?? null));
      if (at !== null) return at;
    }
    const p = parts.join('/');
    return isExcluded(p, dir) ? p : undefined;
  };
  /** Paths met (so a repeat is refused) and what became of a file (for a hard link to it). */
  const met = new Map<string, { size: number; sha256: string; written: boolean; mode: number; secrets?: string[] } | null>();
  let listed = 0;
  let bytes = 0;
  const files = new FilesWriter(opts.filesDir, opts.redactor);
  /**
   * Small files listed and not yet written, in archive order, with the bytes they hold (at most
   * DEFAULTS.workspaceHeldBytes of buffers): written by flush(), in one synchronous sweep, before
   * anything that must see files/ as the archive made it so far (a large file streamed in, a hard
   * link copied, the end). One that cannot be written for a name that cannot be a file there (a
   * hostile tar) is taken back out of the lists and left out as `unsafe-name`.
   */
  let toWrite: { rel: string; bytes: Buffer; mode: number; e: ChangedEntry }[] = [];
  let heldBytes = 0;
  const hold = (rel: string, bytes: Buffer, mode: number, e: ChangedEntry): void => {
    toWrite.push({ rel, bytes, mode, e });
    // a small file's bytes may be a slice of the parser's chunk: the chunk is what stays in memory
    heldBytes += Math.max(bytes.length, bytes.buffer.byteLength);
  };
  const flush = async (): Promise<void> => {
    const batch = toWrite;
    toWrite = [];
    heldBytes = 0;
    const slicer = new Slicer(FLUSH_SLICE_MS);
    for (const w of batch) {
      await slicer.tick();
      try {
        files.writeHeld(w.rel, w.bytes, w.mode);
      } catch (err) {
        if (!isHostileName(err)) throw err;
        takeBack(w.e.path, w.e.size ?? 0);
      }
    }
  };
  /**
   * Paths listed, then taken back out (their write failed: a name that cannot be a file there);
   * dropped from the lists once, at the end (a hostile tar may have thousands).
   */
  const takenBack = new Set<string>();
  /** Takes listed file `path` (`size` bytes counted) back out, left out as `unsafe-name` instead (counted once still). */
  const takeBack = (path: string, size: number): void => {
    takenBack.add(path);
    bytes -= size;
    const was = met.get(path);
    if (was) met.set(path, { ...was, written: false });
    out.omitted.push({ path: shown(path), reason: 'unsafe-name' });
  };

  const omit = (path: string, reason: OmittedReason): void => {
    if (listed >= opts.maxFiles) throw stop(path, 'max-files');
    listed++;
    out.omitted.push({ path: shown(path), reason });
  };
  const stop = (path: string, reason: 'max-bytes' | 'max-files'): Stop => {
    out.omitted.push({ path: shown(path), reason });
    out.truncated = true;
    return new Stop();
  };
  const list = (e: ChangedEntry, from: FixtureEntry | undefined): void => {
    if (listed >= opts.maxFiles) throw stop(e.path, 'max-files');
    listed++;
    if (!from) out.added.push(e);
    else if (entryType(from.type) === e.type) out.modified.push(e);
    else out.typeChanged.push({ ...e, from: entryType(from.type) });
  };

  const ex = extract({ filenameEncoding: 'latin1' } as Parameters<typeof extract>[0]);
  tar.on('error', (err) => ex.destroy(err));
  tar.pipe(ex);
  try {
    try {
      for await (const entry of ex) {
        opts.signal?.throwIfAborted();
        const h = entry.header as Header & { pax?: Record<string, string> };
        const name = nameBytes(h.name, h.pax?.path !== undefined);
        const parts = name.text.split('/');
        if (parts[parts.length - 1] === '') parts.pop();
        if (parts[0] === '.') parts.shift();
        const rel = parts.slice(1).join('/');
        if (!name.utf8) {
          omit(rel || name.text, 'name-not-utf8');
          await drain(entry);
          continue;
        }
        if (parts[0] !== top || parts.slice(1).some((p) => p === '' || p === '.' || p === '..')) {
          omit(name.text, 'unsafe-name');
          await drain(entry);
          continue;
        }
        if (rel === '') {
          await drain(entry);
          continue;
        }
        if (parts.length - 1 > DEFAULTS.workspaceMaxDepth || Buffer.byteLength(rel) > DEFAULTS.workspacePathBytes) {
          omit(rel, 'too-deep');
          await drain(entry);
          continue;
        }
        const ex1 = excludedIn(parts.slice(1), h.type === 'directory');
        if (ex1 !== undefined) {
          if (!excludedSeen.has(ex1)) {
            omit(ex1, 'excluded');
            excludedSeen.add(ex1);
          }
          await drain(entry);
          continue;
        }
        if (met.has(rel)) {
          omit(rel, 'unsafe-name');
          await drain(entry);
          continue;
        }
        const idx = opts.index?.get(rel);
        const mode = (h.mode ?? 0) & 0o7777;
        if (h.type === 'directory') {
          met.set(rel, null);
          await drain(entry);
          if (!idx || idx.type !== 'dir' || idx.mode !== (mode & 0o777)) list({ path: rel, type: 'dir', mode }, idx);
        } else if (h.type === 'symlink') {
          await drain(entry);
          const target = nameBytes(h.linkname ?? '', h.pax?.linkpath !== undefined);
          if (!target.utf8) {
            omit(rel, 'name-not-utf8');
            continue;
          }
          const lands = posix.normalize(posix.join(posix.dirname(rel), target.text));
          if (posix.isAbsolute(target.text) || lands === '..' || lands.startsWith('../')) {
            omit(rel, 'link-outside');
            continue;
          }
          met.set(rel, null);
          if (!idx || idx.type !== 'symlink' || idx.target !== target.text) list({ path: rel, type: 'link', target: target.text }, idx);
        } else if (h.type === 'file' || h.type === 'contiguous-file') {
          const size = h.size ?? 0;
          const maybeSame = idx?.type === 'file' && idx.size === size && idx.mode === (mode & 0o777);
          const fits = bytes + size <= opts.maxBytes;
          if (!fits && !maybeSame) throw stop(rel, 'max-bytes');
          // a small file is read whole: maybe the fixture's unchanged (compared before anything is
          // written: most of a workspace is unchanged), else held and written with the next flush
          const held = size <= DEFAULTS.workspaceCompareInMemoryBytes ? await readWhole(entry, size) : undefined;
          let sha256 = held ? hash('sha256', held) : undefined;
          const same = maybeSame && idx.sha256 === sha256;
          if (same) {
            met.set(rel, { size, sha256: sha256 as string, written: false, mode });
            continue;
          }
          if (!fits && held) throw stop(rel, 'max-bytes');
          if (held) {
            // listed now, written with the next flush (a name that cannot be a file there is taken back out then)
            const found = files.scan(held);
            const flagged = found.length ? { secrets: found } : {};
            const e: ChangedEntry = { path: rel, type: 'file', size, sha256: sha256 as string, mode, ...flagged };
            list(e, idx);
            met.set(rel, { size, sha256: sha256 as string, written: true, mode, ...flagged });
            bytes += size;
            if (!readable(mode & 0o777)) out.modeLater.push({ path: rel, mode: mode & 0o777 });
            hold(rel, held, mode & 0o777, e);
            opts.onHeld?.(e, idx, held);
            if (heldBytes >= (opts.heldBytes ?? DEFAULTS.workspaceHeldBytes)) await flush();
            continue;
          }
          let secrets: string[] = [];
          let modeSet = false;
          try {
            await flush();
            if (fits) ({ sha256, secrets, modeSet } = await files.write(rel, entry, mode & 0o777));
            else sha256 = await hashOnly(entry);
          } catch (err) {
            // A name that cannot be a file below files/ (a hostile tar: a file where a folder was).
            if (!isHostileName(err)) throw err;
            await drain(entry);
            omit(rel, 'unsafe-name');
            continue;
          }
          if (maybeSame && idx.sha256 === sha256) {
            if (fits) files.remove(rel);
            met.set(rel, { size, sha256: sha256 as string, written: false, mode });
            continue;
          }
          if (!fits) throw stop(rel, 'max-bytes');
          const flagged = secrets.length ? { secrets } : {};
          met.set(rel, { size, sha256: sha256 as string, written: true, mode, ...flagged });
          try {
            list({ path: rel, type: 'file', size, sha256: sha256 as string, mode, ...flagged }, idx);
          } catch (err) {
            files.remove(rel);
            throw err;
          }
          bytes += size;
          if (!modeSet) out.modeLater.push({ path: rel, mode: mode & 0o777 });
        } else if (h.type === 'link') {
          // A hard link to an earlier entry of this archive: the same bytes under another name.
          await drain(entry);
          const to = nameBytes(h.linkname ?? '', h.pax?.linkpath !== undefined);
          const toRel = to.text.split('/').slice(1).join('/');
          // its bytes are read from files/: what is held written first (or taken back)
          await flush();
          const was = met.get(toRel);
          if (!was) {
            omit(rel, 'not-regular');
            continue;
          }
          const same = idx?.type === 'file' && idx.sha256 === was.sha256 && idx.mode === (was.mode & 0o777);
          met.set(rel, { ...was, written: false });
          if (same) continue;
          if (!was.written) {
            omit(rel, 'not-regular');
            continue;
          }
          if (bytes + was.size > opts.maxBytes) throw stop(rel, 'max-bytes');
          list({ path: rel, type: 'file', size: was.size, sha256: was.sha256, mode: was.mode, ...(was.secrets ? { secrets: was.secrets } : {}) }, idx);
          let modeSet: boolean;
          try {
            ({ modeSet } = await files.copy(toRel, rel, was.mode & 0o777));
          } catch (err) {
            // a name that cannot be a file below files/ (a hostile tar: a hard link under a file)
            if (!isHostileName(err)) throw err;
            takeBack(rel, 0);
            continue;
          }
          met.set(rel, { ...was, written: true });
          bytes += was.size;
          if (!modeSet) out.modeLater.push({ path: rel, mode: was.mode & 0o777 });
        } else {
          omit(rel, 'not-regular');
          await drain(entry);
        }
      }
    } catch (err) {
      if (!(err instanceof Stop)) throw err;
    } finally {
      // stops reading: the engine's stream first (nothing more is written into the parser), then the parser
      tar.destroy();
      ex.destroy();
    }
    // what is listed is written, a cap met or not
    await flush();
  } finally {
    files.close();
  }
  if (takenBack.size) {
    const kept = <T extends { path: string }>(l: T[]): T[] => l.filter((x) => !takenBack.has(x.path));
    out.added = kept(out.added);
    out.modified = kept(out.modified);
    out.typeChanged = kept(out.typeChanged);
    out.modeLater = kept(out.modeLater);
  }
  // Deleted: what the fixture held that the workspace does not (not known past a cap: none listed then).
  if (opts.index && !out.truncated) {
    for (const [p, e] of opts.index) {
      if (p === '.' || met.has(p)) continue;
      if (excludedAt(p.split('/'), isExcluded, e.type === 'dir') !== undefined) continue;
      out.deleted.push({ path: p, type: entryType(e.type) });
    }
  }
  const byPath = (a: { path: string }, b: { path: string }) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0);
  for (const l of [out.added, out.modified, out.deleted, out.typeChanged]) l.sort(byPath);
  return out;
}

/** An entry's bytes (at most `size`, what its header says), read whole. */
async function readWhole(stream: AsyncIterable<unknown>, size: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let n = 0;
  for await (const c of stream) {
    const chunk = c as Buffer;
    n += chunk.length;
    if (n > size) throw new Error(`a tar entry holds more than the ${size} bytes its header says`);
    chunks.push(chunk);
  }
  // one chunk (a small file mostly is): the parser's own bytes, not copied
  return chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks, n);
}

async function hashOnly(stream: AsyncIterable<unknown>): Promise<string> {
  const hasher = createHash('sha256');
  for await (const c of stream) hasher.update(c as Buffer);
  return hasher.digest('hex');
}

/**
 * Writes files below a fresh folder of berth's (nothing else writes there, no link is ever written
 * there), one component at a time with no link followed: the folders on the way to the last one
 * written in are kept open (a tar lists a folder's files together), each made if missing and
 * opened as a folder, never through a link (util/no-follow.ts); each file is created exclusively
 * in its open folder. A file gets its mode as it is created when the umask leaves it whole, else
 * 0600 then its mode when that leaves the owner able to read it (else the export sets it once
 * the patch has read the file). Small files are written with synchronous calls (writeHeld): a
 * create costs tens to hundreds of microseconds, and three thread-pool round trips a file cost
 * more, on a loaded 2-core machine, than the calls themselves.
 */
class FilesWriter {
  /** The open folders from the root down to the last one written in: its name and descriptor. */
  private readonly chain: { name: string; fd: number }[];
  /**
   * The permission bits a file created here keeps (those the umask, or a default ACL, lets
   * through): found once, by a probe made and removed in the fresh root before anything else.
   */
  private readonly kept: number;

  constructor(
    private readonly root: string,
    private readonly redactor?: Redactor,
  ) {
    this.chain = [{ name: '', fd: openSync(root, C.O_RDONLY | C.O_DIRECTORY) }];
    const probe = `.mode-probe-${randomBytes(6).toString('hex')}`;
    try {
      const fd = openSync(atFd(this.rootFd, probe), CREATE, 0o777);
      try {
        this.kept = fstatSync(fd).mode & 0o777;
      } finally {
        closeSync(fd);
        unlinkSync(atFd(this.rootFd, probe));
      }
    } catch (err) {
      this.close();
      throw err;
    }
  }

  private get rootFd(): number {
    return (this.chain[0] as { fd: number }).fd;
  }

  /** The open folder `dir` (relative to the root, '' or '.' for the root), made if missing, no link followed. */
  private folder(dir: string): number {
    const parts = dir === '' || dir === '.' ? [] : dir.split('/');
    // keep what the chain shares with `parts`, close the rest, open (making) what is missing
    let keep = 0;
    while (keep < parts.length && keep + 1 < this.chain.length && this.chain[keep + 1]?.name === parts[keep]) keep++;
    while (this.chain.length > keep + 1) closeSync((this.chain.pop() as { fd: number }).fd);
    for (let i = keep; i < parts.length; i++) {
      const name = parts[i] as string;
      const parent = (this.chain[this.chain.length - 1] as { fd: number }).fd;
      try {
        mkdirSync(atFd(parent, name), 0o755);
      } catch (err) {
        if (!isCode(err, 'EEXIST')) throw err;
      }
      this.chain.push({ name, fd: openDirAtSync(parent, name, posix.join(this.root, ...parts.slice(0, i + 1))) });
    }
    return (this.chain[this.chain.length - 1] as { fd: number }).fd;
  }

  /** `rel` in its open folder (made if missing), as a path a call can be given. */
  private at(rel: string): string {
    return atFd(this.folder(posix.dirname(rel)), posix.basename(rel));
  }

  /** Whether a file of `mode` is created with it (it can be read by its owner, and nothing masks it). */
  private direct(mode: number): boolean {
    return readable(mode) && (mode & ~this.kept) === 0;
  }

  /** Writes `rel` with `bytes`, synchronously. */
  writeHeld(rel: string, bytes: Buffer, mode: number): void {
    const direct = this.direct(mode);
    const fd = openSync(this.at(rel), CREATE, direct ? mode : 0o600);
    try {
      for (let off = 0; off < bytes.length;) off += writeSync(fd, bytes, off);
      if (!direct && readable(mode)) fchmodSync(fd, mode);
    } finally {
      closeSync(fd);
    }
  }

  /** Writes `rel` from `stream`, returning its sha256, the secrets whose value it holds and whether it has `mode`. */
  async write(rel: string, stream: AsyncIterable<unknown>, mode: number): Promise<{ sha256: string; secrets: string[]; modeSet: boolean }> {
    const fh = await fsp.open(this.at(rel), CREATE, 0o600);
    const hasher = createHash('sha256');
    const scan = this.redactor?.scanner();
    const modeSet = readable(mode);
    try {
      for await (const c of stream) {
        const chunk = c as Buffer;
        hasher.update(chunk);
        scan?.update(chunk);
        await fh.write(chunk);
      }
      if (modeSet) await fh.chmod(mode);
    } finally {
      await fh.close();
    }
    return { sha256: hasher.digest('hex'), secrets: scan?.found() ?? [], modeSet };
  }

  /** The secrets whose value `bytes` holds. */
  scan(bytes: Buffer): string[] {
    const scan = this.redactor?.scanner();
    scan?.update(bytes);
    return scan?.found() ?? [];
  }

  /** Copies `from` (written before) to `to`. */
  async copy(from: string, to: string, mode: number): Promise<{ modeSet: boolean }> {
    let fh: fsp.FileHandle;
    const src = await openDirBelow(this.root, from.split('/').slice(0, -1));
    try {
      fh = await fsp.open(atFd(src.fd, posix.basename(from)), C.O_RDONLY | C.O_NOFOLLOW);
    } finally {
      await src.close();
    }
    try {
      return await this.write(to, fh.createReadStream({ autoClose: false }), mode);
    } finally {
      await fh.close();
    }
  }

  remove(rel: string): void {
    unlinkSync(this.at(rel));
  }

  /** Closes the folders kept open (the writer is not used after). */
  close(): void {
    while (this.chain.length) closeSync((this.chain.pop() as { fd: number }).fd);
  }
}

/**
 * The workspace's tar (read out of the stopped container) against the fixture as copied in: what
 * was added, modified, deleted or changed type, with every added or modified regular file written
 * under `filesDir`. Everything in the tar is hostile input:
 * - streamed entry by entry, each file hashed as it is written (never held whole in memory);
 * - names that are not UTF-8, that leave the tree (`..`, absolute) or repeat, are left out
 *   (`name-not-utf8`, `unsafe-name`); deeper or longer than DEFAULTS allows, `too-deep`;
 * - links are never followed nor written: listed with their target, or left out when the target
 *   leaves the tree (`link-outside`); devices, fifos and the like are `not-regular`;
 * - default and user exclusions (picomatch) leave out a path and all below it, listed once;
 * - caps: bytes written under files/ (`maxBytes`), entries listed (`maxFiles`): the first entry
 *   over a cap is listed with the cap's reason, `truncated` is set and the stream is destroyed.
 * Files are written below `filesDir` (a fresh folder of berth's) one component at a time with no
 * link followed, each created exclusively.
 */
import { isUtf8 } from 'node:buffer';
import { createHash, randomBytes } from 'node:crypto';
import { closeSync, constants as C, fstatSync, openSync, promises as fsp, unlinkSync } from 'node:fs';
import { posix } from 'node:path';
import type { Readable } from 'node:stream';
import picomatch from 'picomatch';
import { extract, type Header } from 'tar-stream';
import { DEFAULTS } from '../constants';
import type { FixtureEntry } from '../spec/fixture-scan';
import { isCode } from '../status/atomic-file';
import { atFd, openDirBelow, UnsafePathError } from '../util/no-follow';
import type { Redactor } from '../util/redact';
import type { ChangedEntry, EntryType, OmittedReason, WorkspaceChanges } from './workspace-types';

export interface CollectOptions {
  /** The fixture as copied in, by path relative to workingDir; null: no fixture (everything is added). */
  index: ReadonlyMap<string, FixtureEntry> | null;
  /** The user's globs (the defaults always apply). */
  exclude: readonly string[];
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

/** The shallowest of `rel` and its ancestors that `isExcluded` matches, if any. */
function excludedAt(parts: readonly string[], isExcluded: (p: string) => boolean): string | undefined {
  for (let i = 1; i <= parts.length; i++) {
    const p = parts.slice(0, i).join('/');
    if (isExcluded(p)) return p;
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

/** Small files' writes under way at once (each holds its bytes: at most DEFAULTS.workspaceCompareInMemoryBytes). */
const WRITES_IN_FLIGHT = 16;

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
  const isExcluded = excluder(opts.exclude);
  const excludedSeen = new Set<string>();
  /** excludedAt of a folder (null: none), by its path: a folder's entries come together, its answer is its own. */
  const excludedDirs = new Map<string, string | null>();
  const excludedIn = (parts: readonly string[]): string | undefined => {
    if (parts.length > 1) {
      const dir = parts.slice(0, -1);
      const key = dir.join('/');
      let at = excludedDirs.get(key);
      if (at === undefined) excludedDirs.set(key, (at = excludedAt(dir, isExcluded) ?? null));
      if (at !== null) return at;
    }
    const p = parts.join('/');
    return isExcluded(p) ? p : undefined;
  };
  /** Paths met (so a repeat is refused) and what became of a file (for a hard link to it). */
  const met = new Map<string, { size: number; sha256: string; written: boolean; mode: number; secrets?: string[] } | null>();
  let listed = 0;
  let bytes = 0;
  const files = new FilesWriter(opts.filesDir, opts.redactor);
  /**
   * Small files' writes under way (created, written and closed on the thread pool while the
   * archive is read on), by path; at most WRITES_IN_FLIGHT. One that fails for a name that cannot
   * be a file there (a hostile tar) is taken back out of the lists and left out as `unsafe-name`.
   */
  const writing = new Map<string, Promise<void>>();
  let writeError: unknown;
  /** Waits for the write of `rel` and of any folder on its way, if under way. */
  const written = async (rel: string): Promise<void> => {
    for (let at = rel; ;) {
      const w = writing.get(at);
      if (w) await w;
      const up = posix.dirname(at);
      if (up === '.' || up === at) return;
      at = up;
    }
  };
  const writeInBackground = (rel: string, bytes: Buffer, mode: number, e: ChangedEntry): void => {
    const w = files
      .writeAsync(rel, bytes, mode)
      .catch((err: unknown) => {
        if (!isHostileName(err)) {
          writeError ??= err;
          return;
        }
        unlist(e);
        out.omitted.push({ path: shown(rel), reason: 'unsafe-name' });
        listed++;
      })
      .finally(() => writing.delete(rel));
    writing.set(rel, w);
  };
  /** Takes a listed file back out (its write failed): the lists, the counts, its mode. */
  const unlist = (e: ChangedEntry): void => {
    for (const l of [out.added, out.modified, out.typeChanged] as ChangedEntry[][]) {
      const i = l.findIndex((x) => x.path === e.path);
      if (i >= 0) l.splice(i, 1);
    }
    const m = out.modeLater.findIndex((x) => x.path === e.path);
    if (m >= 0) out.modeLater.splice(m, 1);
    listed--;
    bytes -= e.size ?? 0;
    const was = met.get(e.path);
    if (was) met.set(e.path, { ...was, written: false });
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
      const ex1 = excludedIn(parts.slice(1));
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
        // written: most of a workspace is unchanged), else written in the background
        const held = size <= DEFAULTS.workspaceCompareInMemoryBytes ? await readWhole(entry, size) : undefined;
        let sha256 = held ? createHash('sha256').update(held).digest('hex') : undefined;
        const same = maybeSame && idx.sha256 === sha256;
        if (same) {
          met.set(rel, { size, sha256: sha256 as string, written: false, mode });
          continue;
        }
        if (!fits && held) throw stop(rel, 'max-bytes');
        if (held) {
          // its folder made now, in archive order (a name that cannot be a folder is found here); the file written in the background
          try {
            await written(posix.dirname(rel));
            await files.folder(rel);
          } catch (err) {
            if (!isHostileName(err)) throw err;
            omit(rel, 'unsafe-name');
            continue;
          }
          const found = files.scan(held);
          const flagged = found.length ? { secrets: found } : {};
          const e: ChangedEntry = { path: rel, type: 'file', size, sha256: sha256 as string, mode, ...flagged };
          list(e, idx);
          met.set(rel, { size, sha256: sha256 as string, written: true, mode, ...flagged });
          bytes += size;
          if (!readable(mode & 0o777)) out.modeLater.push({ path: rel, mode: mode & 0o777 });
          while (writing.size >= WRITES_IN_FLIGHT) await Promise.race(writing.values());
          if (writeError !== undefined) throw writeError;
          writeInBackground(rel, held, mode & 0o777, e);
          opts.onHeld?.(e, idx, held);
          continue;
        }
        let secrets: string[] = [];
        let modeSet = false;
        try {
          await written(posix.dirname(rel));
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
          if (fits) await files.remove(rel);
          met.set(rel, { size, sha256: sha256 as string, written: false, mode });
          continue;
        }
        if (!fits) throw stop(rel, 'max-bytes');
        const flagged = secrets.length ? { secrets } : {};
        met.set(rel, { size, sha256: sha256 as string, written: true, mode, ...flagged });
        try {
          list({ path: rel, type: 'file', size, sha256: sha256 as string, mode, ...flagged }, idx);
        } catch (err) {
          await files.remove(rel);
          throw err;
        }
        bytes += size;
        if (!modeSet) out.modeLater.push({ path: rel, mode: mode & 0o777 });
      } else if (h.type === 'link') {
        // A hard link to an earlier entry of this archive: the same bytes under another name.
        await drain(entry);
        const to = nameBytes(h.linkname ?? '', h.pax?.linkpath !== undefined);
        const toRel = to.text.split('/').slice(1).join('/');
        // its bytes are read from files/: their write done (or taken back)
        if (writing.has(toRel)) await written(toRel);
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
        await written(posix.dirname(rel));
        const { modeSet } = await files.copy(toRel, rel, was.mode & 0o777);
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
    await Promise.all(writing.values());
    await files.close();
  }
  if (writeError !== undefined) throw writeError;
  // Deleted: what the fixture held that the workspace does not (not known past a cap: none listed then).
  if (opts.index && !out.truncated) {
    for (const [p, e] of opts.index) {
      if (p === '.' || met.has(p)) continue;
      if (excludedAt(p.split('/'), isExcluded) !== undefined) continue;
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
  const hash = createHash('sha256');
  for await (const c of stream) hash.update(c as Buffer);
  return hash.digest('hex');
}

/**
 * Writes files below a fresh folder of berth's, one component at a time with no link followed
 * (util/no-follow.ts); each file is created exclusively (0600), then given its mode when that
 * leaves the owner able to read it (else the export sets it once the patch has read the file); a
 * small file whose mode the umask leaves whole is created with it.
 * A file held in memory is written in the background (writeAsync: a file's create costs tens to
 * hundreds of microseconds, which the archive's read goes on through). The last folder opened is
 * kept open: a tar lists a folder's files together.
 */
class FilesWriter {
  private dir: { rel: string; h: fsp.FileHandle } | undefined;
  /**
   * The permission bits a file created here keeps (those the umask, or a default ACL, lets
   * through): found once, by a probe made and removed in the fresh root before anything else.
   */
  private readonly kept: number;

  constructor(
    private readonly root: string,
    private readonly redactor?: Redactor,
  ) {
    const probe = posix.join(root, `.mode-probe-${randomBytes(6).toString('hex')}`);
    const fd = openSync(probe, CREATE, 0o777);
    try {
      this.kept = fstatSync(fd).mode & 0o777;
    } finally {
      closeSync(fd);
      unlinkSync(probe);
    }
  }

  /** The folder of `rel` below the root, made if missing (no link followed), kept open. */
  async folder(rel: string): Promise<fsp.FileHandle> {
    const parent = posix.dirname(rel);
    const want = parent === '.' ? '' : parent;
    if (this.dir?.rel === want) return this.dir.h;
    await this.close();
    const h = await openDirBelow(this.root, want ? want.split('/') : [], { create: true });
    this.dir = { rel: want, h };
    return h;
  }

  /** Writes `rel` from `stream`, returning its sha256, the secrets whose value it holds and whether it has `mode`. */
  async write(rel: string, stream: AsyncIterable<unknown>, mode: number): Promise<{ sha256: string; secrets: string[]; modeSet: boolean }> {
    const dir = await this.folder(rel);
    const fh = await fsp.open(atFd(dir.fd, posix.basename(rel)), CREATE, 0o600);
    const hash = createHash('sha256');
    const scan = this.redactor?.scanner();
    const modeSet = readable(mode);
    try {
      for await (const c of stream) {
        const chunk = c as Buffer;
        hash.update(chunk);
        scan?.update(chunk);
        await fh.write(chunk);
      }
      if (modeSet) await fh.chmod(mode);
    } finally {
      await fh.close();
    }
    return { sha256: hash.digest('hex'), secrets: scan?.found() ?? [], modeSet };
  }

  /**
   * Writes `rel` with `bytes` on the thread pool, created exclusively with O_NOFOLLOW, its folder
   * made before (folder()): by its path, which holds no link (files/ is berth's fresh folder, every
   * folder in it made by folder(), no link ever written there, nothing else writing there).
   */
  async writeAsync(rel: string, bytes: Buffer, mode: number): Promise<void> {
    // created with its mode when nothing masks it (one call less per file), else 0600 and given it after
    const direct = readable(mode) && (mode & ~this.kept) === 0;
    const fh = await fsp.open(posix.join(this.root, rel), CREATE, direct ? mode : 0o600);
    try {
      await fh.writeFile(bytes);
      if (!direct && readable(mode)) await fh.chmod(mode);
    } finally {
      await fh.close();
    }
  }

  /** The secrets whose value `bytes` holds. */
  scan(bytes: Buffer): string[] {
    const scan = this.redactor?.scanner();
    scan?.update(bytes);
    return scan?.found() ?? [];
  }

  async copy(from: string, to: string, mode: number): Promise<{ modeSet: boolean }> {
    const src = await openDirBelow(this.root, from.split('/').slice(0, -1));
    let fh: fsp.FileHandle;
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

  async remove(rel: string): Promise<void> {
    const dir = await this.folder(rel);
    await fsp.unlink(atFd(dir.fd, posix.basename(rel)));
  }

  async close(): Promise<void> {
    const d = this.dir;
    this.dir = undefined;
    await d?.h.close();
  }
}

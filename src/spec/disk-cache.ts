/**
 * Spec outcomes kept on disk between processes (a CI job's `reconcile --once` in a new process
 * with the state folder kept): what file-cache.ts keeps in memory, for the same files only (those
 * whose outcome depends on nothing but the file: no errors, no fixture, no secret file, no
 * `fromDir`; or another tool's YAML, errors and all: a repository used as a fixture holds some,
 * load-file.ts `foreign`), in `<state>/cache/specs-<16 hex>.json` (one file per specs folder, results root and
 * working directory, mode 0600).
 *
 * Keyed by content, not by the file's identity: a fresh checkout (new inodes and times, the
 * state folder kept, as CI runs) still finds the outcomes of the files whose bytes did not change.
 *
 * Safe by construction:
 * - a file's outcome is used only for the very bytes it was read from: the sha256 of the bytes
 *   parsed (taken from the same read) must equal the sha256 of the file as it is now, so a
 *   changed file is never served stale, however its size and times look. A file whose identity
 *   and times (device, inode, size, mtime, ctime: file-cache.ts `signature`, taken before its
 *   bytes were read) are still those kept with its outcome is not read again: any write changes
 *   the ctime, which no one can set back. That signature is kept only for a file last changed
 *   RACY_MS or more before it was read, so a write in the same tick of the clock as that read
 *   (same size, same times) cannot pass for it; a file changed just before is read and hashed
 *   (the fixture digest cache, digest-store.ts, trusts the same five values);
 * - the whole cache is used only by the berth that wrote it: the same version and the same build
 *   of this module (its file's size and mtime), the same roots;
 * - every results folder it names is checked again against the results root as the loader
 *   checks it (links included) before an outcome is used;
 * - a cache file that cannot be read, is not JSON or has not the expected shape is ignored
 *   (and replaced by the next write); writing it is best effort (temp file, then rename);
 * - an AttemptSet whose children were made from its shape (set-shape.ts) is kept as that shape,
 *   its coordinates and the children checked in full, not as one spec per child; its children are
 *   made again from the shape when it is read, after the shape has made the child it was taken
 *   from exactly (a damaged shape is a miss);
 * - it holds what the spec files say (names, images, commands, env values written in them,
 *   secret names and the variables they come from), never a secret's value: berth reads those
 *   only when it starts a container.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, existsSync, fstatSync, mkdirSync, openSync, readFileSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { fromShape, hashPieces, isShape, reproduces } from './set-shape';
import { readSigned, signature } from './file-cache';
import { pruneOldest } from '../util/prune-folder';
import { sha256Hex } from './hash';
import type { ChildOutcome, DocOutcome } from './check-document';
import type { FileOutcome } from './load-file';
import { checkResultsSync, type Roots } from './path-checks';
import type { LoadedSpec } from './types';

/**
 * 2: a set's children made from its shape are kept as the shape (its coordinates are in the set).
 * 3: one entry a line (read piece by piece, never the whole text at once); an entry may keep its
 * file's signature.
 */
const FORMAT = 3;
/** A file changed less than this long before it was read keeps no signature: it is hashed at every look. */
export const RACY_MS = 2_000;
/** The cache file is read in pieces of this size (a longer line, a large set's, grows it). */
const PIECE = 1 << 20;
/** Cache files kept in one folder (one per specs folder, results root and working directory): the least recently written go first. */
export const MAX_CACHE_FILES = 64;
const CACHE_FILE = /^specs-[0-9a-f]{16}\.json$/;

interface Entry {
  /** sha256 of the file's bytes the outcome was read from. */
  content: string;
  /** The file's signature (file-cache.ts `signature`) taken before those bytes were read, when it was still long enough before. */
  sig?: string;
  /** As loaded, but for a set made from its shape: `children` empty, `packed` the children checked in full, by index. */
  outcome: FileOutcome;
}

type SetOutcome = NonNullable<DocOutcome['set']> & { packed?: [number, ChildOutcome][] };

/** The outcome as kept: a set made from its shape without the children the shape makes again. */
export function pack(o: FileOutcome): FileOutcome {
  if (!o.docs.some((d) => d.set?.shape)) return o;
  const docs = o.docs.map((d): DocOutcome => {
    const s = d.set;
    if (!s?.shape) return d;
    const packed = s.shape.full.map((i): [number, ChildOutcome] => [i, s.children[i] as ChildOutcome]);
    const set: SetOutcome = {
      loaded: s.loaded,
      children: [],
      ...(s.readsFolders !== undefined ? { readsFolders: s.readsFolders } : {}),
      shape: s.shape,
      packed,
    };
    return { ...d, set };
  });
  return { ...o, docs };
}

/** A kept outcome as loaded: each set's children made again from its shape; undefined when it cannot be (damaged). */
export function unpack(o: FileOutcome): FileOutcome | undefined {
  if (!o.docs.some((d) => (d.set as SetOutcome | undefined)?.packed)) return o;
  try {
    const docs = o.docs.map((d): DocOutcome => {
      const s = d.set as SetOutcome | undefined;
      if (!s?.packed || !s.shape) return d;
      const { shape } = s.shape;
      if (!isShape(shape) || !Array.isArray(s.packed)) throw new Error('not a shape');
      const pieces = hashPieces(shape);
      const full = new Map(s.packed);
      const { policy, children: names, coords } = s.loaded;
      // The shape must make the child it was taken from (checked in full, kept as it was) exactly.
      const checked = s.packed[0]?.[1].loaded;
      if (!pieces || !checked || !reproduces(shape, pieces, checked) || names.length !== coords.length) throw new Error('not a set made from a shape');
      const children = names.map((name, index): ChildOutcome => {
        const kept = full.get(index);
        // One policy for every child, as loaded.
        if (kept) return kept.loaded?.set ? { ...kept, loaded: { ...kept.loaded, set: { ...kept.loaded.set, set: policy } } } : kept;
        const loaded = fromShape(
          shape,
          name,
          shape.resultsByName ? name : shape.base.results,
          { set: policy, coords: coords[index] as Record<string, string>, index },
          pieces,
        );
        if (!loaded) throw new Error(`child ${name} cannot be made from the shape`);
        return { name, errors: [], loaded };
      });
      const { packed: _packed, ...rest } = s;
      return { ...d, set: { ...rest, children } };
    });
    return { ...o, docs };
  } catch {
    return undefined;
  }
}

interface CacheFile {
  format: number;
  build: string;
  entries: Record<string, Entry>;
}

/** Set by the split build (scripts/build-cli.ts): the file whose stat names the build, beside this one. */
declare const BERTH_BUILD_FILE: string | undefined;
/** berth's version, compiled into the single-file and split builds (scripts/build-cli.ts). */
declare const BERTH_BUNDLED_VERSION: string | undefined;

/** Writes all of `text` (a write to a file may take part of it). */
function writeAll(fd: number, text: string): void {
  const buf = Buffer.from(text, 'utf8');
  for (let off = 0; off < buf.length;) off += writeSync(fd, buf, off, buf.length - off);
}

let buildId: string | undefined;
/** berth's version and this build of the loader. */
function build(): string {
  if (buildId === undefined) {
    let version = 'unknown';
    if (typeof BERTH_BUNDLED_VERSION === 'string') version = BERTH_BUNDLED_VERSION;
    else
      try {
        version = (JSON.parse(readFileSync(path.resolve(__dirname, '..', '..', 'package.json'), 'utf8')) as { version?: string }).version ?? 'unknown';
      } catch {
        /* no package.json beside the build: the module's own stat still tells builds apart */
      }
    // The split build (scripts/build-cli.ts) is several files of one build: each names its main file, so that
    // `get` (get.cjs) and `reconcile` (berth.cjs) keep one cache instead of each taking the other's for another build's.
    const st = statSync(typeof BERTH_BUILD_FILE === 'string' ? path.join(__dirname, BERTH_BUILD_FILE) : __filename, { bigint: true });
    buildId = `${version}:${st.size}:${st.mtimeNs}`;
  }
  return buildId;
}

/** The cache file for a specs folder and results root, under `stateDir`. */
export function diskCachePath(stateDir: string, roots: Pick<Roots, 'specsRoot' | 'resultsRoot'>, cwd = process.cwd()): string {
  return path.join(path.resolve(stateDir), 'cache', `specs-${sha256Hex([roots.specsRoot, roots.resultsRoot, cwd].join('\0')).slice(0, 16)}.json`);
}

/** Whether a signature taken at `atMs` (before the file's bytes were read) is of a file last changed at least RACY_MS before. */
function steady(sig: string, atMs: number): boolean {
  const ctimeNs = sig.slice(sig.lastIndexOf(':') + 1);
  if (!/^\d+$/.test(ctimeNs)) return false;
  return BigInt(ctimeNs) / 1_000_000n + BigInt(RACY_MS) <= BigInt(Math.floor(atMs));
}

function isEntry(e: unknown): e is Entry {
  if (typeof e !== 'object' || e === null) return false;
  const x = e as Partial<Entry>;
  const o = x.outcome as Partial<FileOutcome> | undefined;
  return (
    typeof x.content === 'string' &&
    (x.sig === undefined || typeof x.sig === 'string') &&
    typeof o === 'object' &&
    o !== null &&
    Array.isArray(o.docs) &&
    Array.isArray(o.errors) &&
    ((o.errors.length === 0 && o.unreadable === false) || o.foreign === true)
  );
}

/** The loaded specs an outcome holds (an AttemptSet's children included). */
function loadedSpecs(o: FileOutcome): LoadedSpec[] {
  const out: LoadedSpec[] = [];
  for (const d of o.docs) {
    if (d.loaded) out.push(d.loaded);
    for (const c of d.set?.children ?? []) if (c.loaded) out.push(c.loaded);
  }
  return out;
}

/** Every spec of the outcome is well formed and its results folder still passes the loader's check, to the same value. */
function stillHolds(o: FileOutcome, roots: Roots): boolean {
  for (const d of o.docs) {
    if (typeof d !== 'object' || d === null || !Array.isArray(d.errors) || d.errors.length > 0) return false;
    if (d.set && (!Array.isArray(d.set.children) || typeof d.set.loaded !== 'object' || d.set.loaded === null)) return false;
  }
  for (const l of loadedSpecs(o)) {
    if (
      typeof l !== 'object' ||
      l === null ||
      typeof l.hash !== 'string' ||
      typeof l.spec !== 'object' ||
      l.spec === null ||
      typeof l.spec.results !== 'string'
    )
      return false;
    const r = checkResultsSync(l.spec.results, roots);
    if (!r.ok || r.value !== l.spec.results) return false;
  }
  return true;
}

/** A kept foreign outcome of the expected shape: errors and names only, no loaded spec, no set. */
function isForeign(o: FileOutcome): boolean {
  return o.docs.every((d) => typeof d === 'object' && d !== null && d.loaded === undefined && d.set === undefined && Array.isArray(d.errors));
}

/** One specs folder's kept outcomes on disk: read once, looked up per file, written back when they changed. */
export class DiskSpecCache {
  private entries: Record<string, Entry> = Object.create(null) as Record<string, Entry>;
  private changed = false;
  /** Entries used or stored in this load: only these are written back (files gone are dropped). */
  private readonly live = new Set<string>();
  /** What the last read found: for reports and tests. */
  readonly stats = { hits: 0, misses: 0, ignored: '' };

  constructor(
    private readonly file: string,
    private readonly roots: Roots,
  ) {
    let fd: number;
    try {
      fd = openSync(file, 'r');
    } catch {
      return; // none yet
    }
    try {
      this.read(fd);
    } catch {
      this.entries = Object.create(null) as Record<string, Entry>;
      this.stats.ignored = 'damaged';
    } finally {
      closeSync(fd);
    }
  }

  /**
   * Reads the cache as save() writes it, a line at a time: its head (format, build), one entry
   * a line, and the closing line. Never the whole text at once: at 100,000 specs it is ~150 MB,
   * which with its parse held at once was the peak of a controller's start-up (issue 55).
   * Another build's (or format's) cache is known from its head and read no further. A line that
   * is not an entry, or no closing line (a file cut short), and nothing of it is used.
   */
  private read(fd: number): void {
    // the file's size (it is a few KB for a few specs) up to PIECE: no 1 MB buffer for 20 KB
    let buf = Buffer.allocUnsafe(Math.min(PIECE, Math.max(4096, fstatSync(fd).size + 1)));
    let have = 0;
    let line = 0;
    let closed = false;
    const entries = Object.create(null) as Record<string, Entry>;
    const take = (text: string): boolean => {
      if (line++ === 0) {
        const head = /^\{"format":(\d+),"build":("(?:[^"\\]|\\.)*")(,"entries":\{)?$/.exec(text);
        if (!head || Number(head[1]) !== FORMAT || head[3] === undefined) {
          this.stats.ignored = 'not a spec cache of this format';
          return false;
        }
        if ((JSON.parse(head[2] as string) as string) !== build()) {
          this.stats.ignored = 'written by another build of berth';
          return false;
        }
        return true;
      }
      if (closed) throw new Error('text after the closing line');
      if (text === '}}') {
        closed = true;
        return true;
      }
      const pair = JSON.parse(`{${text.startsWith(',') ? text.slice(1) : text}}`) as Record<string, unknown>;
      for (const [k, e] of Object.entries(pair)) if (isEntry(e)) entries[k] = e;
      return true;
    };
    for (;;) {
      if (have === buf.length) {
        // a line longer than the buffer (a large set's entry): a larger one
        const bigger = Buffer.allocUnsafe(buf.length * 2);
        buf.copy(bigger, 0, 0, have);
        buf = bigger;
      }
      const n = readSync(fd, buf, have, buf.length - have, null);
      have += n;
      let start = 0;
      for (let nl = buf.indexOf(10, start); nl >= 0 && nl < have; nl = buf.indexOf(10, start)) {
        // a newline byte is never inside a UTF-8 sequence, nor inside JSON text (it is escaped there)
        if (!take(buf.toString('utf8', start, nl))) return;
        start = nl + 1;
      }
      buf.copy(buf, 0, start, have);
      have -= start;
      if (line === 0 && have >= 512) {
        // No head line in its first 512 bytes: not a cache of this format (format 2 was one line of
        // ~150 MB at 100,000 specs), and never read further.
        const head = /^\{"format":(\d+),/.exec(buf.toString('utf8', 0, 512));
        this.stats.ignored = head && Number(head[1]) === FORMAT ? 'damaged' : 'not a spec cache of this format';
        return;
      }
      if (n === 0) break;
    }
    if (have > 0 && !take(buf.toString('utf8', 0, have))) return;
    if (!closed) {
      if (line > 0) this.stats.ignored = 'damaged';
      return;
    }
    this.entries = entries;
  }

  /**
   * The kept outcome for `key` if the file at `abs` holds the very bytes it was read from (its
   * signature still the one kept, else its bytes' hash) and it still holds, with the file's
   * signature taken before its bytes were read (for the memory cache).
   */
  get(key: string, abs: string): { sig: string; outcome: FileOutcome } | undefined {
    const e = Object.hasOwn(this.entries, key) ? this.entries[key] : undefined;
    let sig: string | undefined;
    let outcome: FileOutcome | undefined;
    if (e) {
      const at = Date.now();
      const now = e.sig !== undefined ? signature(abs) : undefined;
      if (now !== undefined && now === e.sig) {
        sig = now;
        outcome = unpack(e.outcome);
      } else {
        const read = readSigned(abs);
        sig = read?.sig;
        outcome = read && e.content === sha256Hex(read.bytes) ? unpack(e.outcome) : undefined;
        // the same bytes under another signature (a checkout again, a touch): kept for the next look
        const next = outcome && sig !== undefined && steady(sig, at) ? sig : undefined;
        if (outcome && next !== e.sig) {
          if (next === undefined) delete e.sig;
          else e.sig = next;
          this.changed = true;
        }
      }
    }
    // another tool's YAML: its outcome is its bytes' alone (load-file.ts `foreign`), errors and all
    if (!e || sig === undefined || !outcome || !(outcome.foreign === true ? isForeign(outcome) : stillHolds(outcome, this.roots))) {
      this.stats.misses++;
      return undefined;
    }
    this.stats.hits++;
    this.live.add(key);
    return { sig, outcome };
  }

  /**
   * Keeps a self-contained outcome under the hash of the very bytes it was read from (loadFile
   * gives it), with the file's signature `sig` taken at `atMs`, before those bytes were read.
   */
  set(key: string, outcome: FileOutcome, sig?: string, atMs?: number): void {
    const content = outcome.content;
    if (content === undefined) return;
    const steadySig = sig !== undefined && atMs !== undefined && steady(sig, atMs) ? { sig } : {};
    this.entries[key] = { content, ...steadySig, outcome: pack(outcome) };
    this.live.add(key);
    this.changed = true;
  }

  /** Writes the cache back if an outcome was added or a kept one is no longer used; never throws. */
  save(): void {
    const keys = Object.keys(this.entries);
    if (!this.changed && keys.every((k) => this.live.has(k))) return;
    const temp = `${this.file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    // The state folder is made by the commands that write state, never for a cache.
    if (!existsSync(path.dirname(path.dirname(this.file)))) return;
    try {
      mkdirSync(path.dirname(this.file), { recursive: true, mode: 0o700 });
      const fd = openSync(temp, 'wx', 0o600);
      try {
        // A CacheFile's JSON written entry by entry, one a line (read back so: the constructor),
        // in pieces of about a MiB: at 100,000 specs the whole text at once was ~150 MB more at
        // the peak of a controller's start-up.
        const head: Omit<CacheFile, 'entries'> = { format: FORMAT, build: build() };
        let out = `${JSON.stringify(head).slice(0, -1)},"entries":{\n`;
        let first = true;
        for (const k of keys) {
          if (!this.live.has(k)) continue;
          out += `${first ? '' : ','}${JSON.stringify(k)}:${JSON.stringify(this.entries[k])}\n`;
          first = false;
          if (out.length >= 1 << 20) {
            writeAll(fd, out);
            out = '';
          }
        }
        writeAll(fd, `${out}}}`);
      } finally {
        closeSync(fd);
      }
      renameSync(temp, this.file);
    } catch {
      rmSync(temp, { force: true });
      return;
    }
    pruneOldest(path.dirname(this.file), MAX_CACHE_FILES, { match: CACHE_FILE, keep: this.file });
  }
}

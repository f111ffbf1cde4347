/**
 * The manifest of a run's results folder: every entry the attempt left, in one walk (lstat, no
 * link ever followed), the files' sha256 within a budget, written as it is walked: berth holds
 * one folder's names at a time, never the list of entries, whatever their number.
 *
 * The file system is read with synchronous calls in slices of at most 5 ms (util/slicer.ts), the event loop
 * given back between slices: a hundred thousand small files cost a hundred thousand async round
 * trips through libuv's thread pool otherwise (measured 4-5x slower on a loaded 2-core machine),
 * and a slice keeps the controller answering its other attempts meanwhile.
 *
 * Names are bytes on the host: one that is not valid UTF-8 is listed with its bad bytes as
 * U+FFFD in `path` and its exact bytes, base64, in `pathBase64` (the same for a link's target:
 * `targetBase64`), so nothing is lost and `path` stays text.
 *
 * The caps (spec.harvest): entries are kept in manifest order (depth first, each folder's names
 * in byte order) while they number at most `maxFiles` (files, folders, links, others alike) and
 * the regular files' sizes add up to at most `maxBytes` (a file that does not fit is left out,
 * later smaller ones may still fit; everything under a folder left out is left out). What is
 * left out is not in `files`; `truncation` counts it and lists the first DEFAULTS.manifestLeftOutListed
 * of it (then says how many more), and `removeLeftOut` (a second walk, deciding the same way)
 * removes it from the folder: a results folder keeps what fits.
 *
 * The hashing budget: kept files are hashed in manifest order while their sizes add up to at
 * most `maxBytes` (a file that does not fit is skipped, later smaller ones may still fit) and
 * until `maxSeconds` have passed since the manifest began; the rest are listed without `sha256`,
 * with `unhashed` saying which budget, and `hashing` says what was left out. A file that
 * cannot be read is listed with `unhashed: 'unreadable'` and the error's code. The caller's
 * signal (berth stopping) interrupts the walk: the manifest is then not written at all.
 *
 * Given the run's redactor (a run with secrets), every file is also scanned for the secrets'
 * values as it is hashed (the same read, the same bounded buffer): one that holds any is flagged
 * with their names (`secrets`), and `secretScan` at the end says what was looked for and how
 * many files could not be scanned (those left unhashed). The files are left as they are; the
 * manifest's own text (names, link targets) is redacted.
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, rmdirSync, unlinkSync, type Stats } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { DEFAULTS } from '../constants';
import type { Redactor, SecretScanner } from '../util/redact';
import { Slicer } from '../util/slicer';

export interface ManifestEntry {
  path: string;
  /** The path's exact bytes (base64), only when they are not valid UTF-8. */
  pathBase64?: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  sha256?: string;
  /** Why a file has no sha256. */
  unhashed?: 'bytes-budget' | 'time-budget' | 'unreadable';
  /** For `unreadable`: the error's code. */
  error?: string;
  target?: string;
  targetBase64?: string;
  /** The names of the run's secrets whose value the file holds (in any form the redactor knows). */
  secrets?: string[];
}

export interface HashBudget {
  maxBytes: number;
  maxSeconds: number;
}

/** What a results folder keeps at most (spec.harvest). */
export interface ResultCaps {
  maxBytes: number;
  maxFiles: number;
}

/** An entry a cap left out: which cap (`max-files`, `max-bytes`; `in-left-out-folder`: below a folder left out). */
export interface LeftOutEntry {
  path: string;
  pathBase64?: string;
  type: ManifestEntry['type'];
  size: number;
  why: 'max-files' | 'max-bytes' | 'in-left-out-folder';
}

export interface Hashing {
  /** Every kept file was hashed. */
  complete: boolean;
  maxBytes: number;
  maxSeconds: number;
  hashedFiles: number;
  hashedBytes: number;
  unhashedFiles: number;
  unhashedBytes: number;
}

/** What the caps kept and left out. */
export interface Truncation {
  /** Something was left out. */
  truncated: boolean;
  maxBytes: number;
  maxFiles: number;
  keptEntries: number;
  keptBytes: number;
  leftOutEntries: number;
  /** Bytes of the regular files left out. */
  leftOutBytes: number;
  /** The first entries left out, in manifest order (those left out before the walk first: swarm's collect). */
  leftOut: LeftOutEntry[];
  /** Entries left out past those listed. */
  leftOutNotListed: number;
}

/** manifest.json, as written (`files` first, streamed). */
export interface Manifest {
  files: ManifestEntry[];
  hashing: Hashing;
  truncation: Truncation;
  /** With a run's secrets: what the files were scanned for, how many hold one, how many were not scanned (unhashed). */
  secretScan?: { secrets: string[]; filesWithSecrets: number; unscannedFiles: number };
}

export const DEFAULT_BUDGET: HashBudget = { maxBytes: DEFAULTS.hashMaxBytes, maxSeconds: DEFAULTS.hashMaxSeconds };
export const DEFAULT_CAPS: ResultCaps = { maxBytes: DEFAULTS.harvestMaxBytes, maxFiles: DEFAULTS.harvestMaxFiles };

const SLASH = Buffer.from('/');
const CHUNK = 1024 * 1024;
/** Bytes of manifest text gathered before one write. */
const WRITE_BATCH = 256 * 1024;

const tryOr = <T>(f: () => T, or: T): T => {
  try {
    return f();
  } catch {
    return or;
  }
};

/** A name as text, and its exact bytes when the text cannot hold them. */
function named(bytes: Buffer): { text: string; base64?: string } {
  return isUtf8(bytes) ? { text: bytes.toString('utf8') } : { text: bytes.toString('utf8'), base64: bytes.toString('base64') };
}

/** One entry met by the walk, and what the caps decided for it. */
interface Met {
  abs: Buffer;
  rel: Buffer;
  st: Stats;
  /** Why it is left out; undefined: kept. */
  leftOut?: LeftOutEntry['why'];
}

/**
 * The caps' decision, entry by entry in manifest order: the same folder gets the same answer, and
 * removing what was left out changes no later decision (what is left out counts for nothing).
 */
class Caps {
  keptEntries = 0;
  keptBytes = 0;
  constructor(private readonly caps: ResultCaps) {}
  decide(st: Stats): LeftOutEntry['why'] | undefined {
    if (this.keptEntries >= this.caps.maxFiles) return 'max-files';
    if (st.isFile() && this.keptBytes + st.size > this.caps.maxBytes) return 'max-bytes';
    this.keptEntries++;
    if (st.isFile()) this.keptBytes += st.size;
    return undefined;
  }
}

/**
 * Every entry under `root`, depth first, each folder's names in byte order, with the caps'
 * decision; a folder's entries are met after it (`after`: once they all were).
 */
async function walk(
  root: Buffer,
  caps: Caps,
  slicer: Slicer,
  signal: AbortSignal | undefined,
  meet: (m: Met) => Promise<void> | void,
  after?: (m: Met) => void,
): Promise<void> {
  // A folder's names are read as latin1 text: each byte one character, so exact, sorted in byte
  // order by a plain sort, and a tenth of the memory of a Buffer per name (a folder of 100,000).
  const visit = async (dir: Buffer, rel: Buffer | undefined, inLeftOut: boolean): Promise<void> => {
    const names = tryOr(() => readdirSync(dir, { encoding: 'latin1' }), [] as string[]).sort();
    for (let i = 0; i < names.length; i++) {
      const n = Buffer.from(names[i] as string, 'latin1');
      await slicer.tick(signal);
      const abs = Buffer.concat([dir, SLASH, n]);
      const relPath = rel ? Buffer.concat([rel, SLASH, n]) : n;
      const st = tryOr((): Stats | undefined => lstatSync(abs), undefined);
      if (!st) continue; // gone since the folder was read
      const leftOut = inLeftOut ? 'in-left-out-folder' : caps.decide(st);
      const m: Met = { abs, rel: relPath, st, ...(leftOut ? { leftOut } : {}) };
      await meet(m);
      if (st.isDirectory()) {
        await visit(abs, relPath, leftOut !== undefined);
        after?.(m);
      }
    }
  };
  await visit(root, undefined, false);
}

/** sha256 of a regular file, opened without following a link or blocking on a fifo; read a chunk per slice check. */
async function sha256(abs: Buffer, buf: Buffer, slicer: Slicer, signal: AbortSignal, scan?: SecretScanner): Promise<string> {
  const h = createHash('sha256');
  const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!fstatSync(fd).isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTFILE' });
    for (;;) {
      const n = readSync(fd, buf, 0, buf.length, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
      scan?.update(buf.subarray(0, n));
      await slicer.tick(signal);
    }
  } finally {
    closeSync(fd);
  }
  return h.digest('hex');
}

class TimeUp extends Error {}

/** Text gathered and written in batches to `out`. */
class Writer {
  private pending: string[] = [];
  private size = 0;
  constructor(private readonly out: FileHandle) {}
  async add(s: string): Promise<void> {
    this.pending.push(s);
    this.size += s.length;
    if (this.size >= WRITE_BATCH) await this.flush();
  }
  async flush(): Promise<void> {
    if (!this.pending.length) return;
    const text = this.pending.join('');
    this.pending = [];
    this.size = 0;
    await this.out.write(text);
  }
}

/** `v` as JSON.stringify(v, null, 2) writes it `depth` levels deep. */
function indented(v: unknown, depth: number): string {
  return JSON.stringify(v, null, 2).replace(/\n/g, '\n' + '  '.repeat(depth));
}

/** The entry a walk met, as listed. */
function entryOf(m: Met): ManifestEntry {
  const p = named(m.rel);
  const base = { path: p.text, ...(p.base64 ? { pathBase64: p.base64 } : {}) };
  if (m.st.isSymbolicLink()) {
    const t = named(tryOr(() => readlinkSync(m.abs, { encoding: 'buffer' }), Buffer.alloc(0)));
    return { ...base, type: 'symlink', size: 0, target: t.text, ...(t.base64 ? { targetBase64: t.base64 } : {}) };
  }
  if (m.st.isDirectory()) return { ...base, type: 'dir', size: 0 };
  if (m.st.isFile()) return { ...base, type: 'file', size: m.st.size };
  return { ...base, type: 'other', size: 0 };
}

/** Entries left out before the walk (swarm's collect, which brings home only what fits): counted and listed first. */
export interface LeftOutBefore {
  entries: number;
  bytes: number;
  listed: LeftOutEntry[];
}

export interface ManifestOptions {
  hash?: HashBudget;
  caps?: ResultCaps;
  /** How many left-out entries are listed (DEFAULTS.manifestLeftOutListed). */
  leftOutListed?: number;
  before?: LeftOutBefore;
  /** The run's secrets: every file scanned for them as it is hashed, and the manifest's text redacted. */
  redactor?: Redactor;
}

/**
 * Writes the manifest of `root` (a folder; a missing one has no entries) into `out`, streaming,
 * and returns its summary (`hashing`, `truncation`). Nothing is removed: see removeLeftOut.
 */
export async function writeManifest(root: string, out: FileHandle, opts: ManifestOptions = {}, signal?: AbortSignal): Promise<Omit<Manifest, 'files'>> {
  const budget = opts.hash ?? DEFAULT_BUDGET;
  const capsSet = opts.caps ?? DEFAULT_CAPS;
  const listMax = opts.leftOutListed ?? DEFAULTS.manifestLeftOutListed;
  const caps = new Caps(capsSet);
  const slicer = new Slicer();
  const w = new Writer(out);
  const leftOut: LeftOutEntry[] = [...(opts.before?.listed ?? [])].slice(0, listMax);
  let leftOutEntries = opts.before?.entries ?? 0;
  let leftOutBytes = opts.before?.bytes ?? 0;
  const hashing = { planned: 0, hashedFiles: 0, hashedBytes: 0, unhashedFiles: 0, unhashedBytes: 0 };
  let first = true;
  const time = new AbortController();
  const timer = setTimeout(() => time.abort(new TimeUp()), budget.maxSeconds * 1000);
  const both = signal ? AbortSignal.any([signal, time.signal]) : time.signal;
  const buf = Buffer.allocUnsafe(CHUNK);
  const redactor = opts.redactor && !opts.redactor.empty ? opts.redactor : undefined;
  let filesWithSecrets = 0;
  await w.add('{\n  "files": [');
  try {
    await walk(Buffer.from(root), caps, slicer, signal, async (m) => {
      if (m.leftOut) {
        leftOutEntries++;
        if (m.st.isFile()) leftOutBytes += m.st.size;
        if (leftOut.length < listMax) {
          const e = entryOf(m);
          const listed = { path: e.path, ...(e.pathBase64 ? { pathBase64: e.pathBase64 } : {}), type: e.type, size: e.size, why: m.leftOut };
          leftOut.push(redactor ? redactor.redactJson(listed) : listed);
        }
        return;
      }
      const e = entryOf(m);
      if (e.type === 'file') {
        // the bytes budget, decided in manifest order: the same folder gets the same answer
        if (hashing.planned + e.size > budget.maxBytes) e.unhashed = 'bytes-budget';
        else if (time.signal.aborted) {
          hashing.planned += e.size;
          e.unhashed = 'time-budget';
        } else {
          hashing.planned += e.size;
          try {
            const scan = redactor?.scanner();
            e.sha256 = await sha256(m.abs, buf, slicer, both, scan);
            const held = scan?.found() ?? [];
            if (held.length) {
              e.secrets = held;
              filesWithSecrets++;
            }
          } catch (err) {
            signal?.throwIfAborted();
            if (time.signal.aborted) e.unhashed = 'time-budget';
            else {
              e.unhashed = 'unreadable';
              e.error = (err as NodeJS.ErrnoException).code ?? String(err);
            }
          }
        }
        if (e.sha256 !== undefined) {
          hashing.hashedFiles++;
          hashing.hashedBytes += e.size;
        } else {
          hashing.unhashedFiles++;
          hashing.unhashedBytes += e.size;
        }
      }
      await w.add((first ? '\n    ' : ',\n    ') + indented(redactor ? redactor.redactJson(e) : e, 2));
      first = false;
    });
  } finally {
    clearTimeout(timer);
  }
  signal?.throwIfAborted();
  const summary: Omit<Manifest, 'files'> = {
    hashing: {
      complete: hashing.unhashedFiles === 0,
      maxBytes: budget.maxBytes,
      maxSeconds: budget.maxSeconds,
      hashedFiles: hashing.hashedFiles,
      hashedBytes: hashing.hashedBytes,
      unhashedFiles: hashing.unhashedFiles,
      unhashedBytes: hashing.unhashedBytes,
    },
    truncation: {
      truncated: leftOutEntries > 0,
      maxBytes: capsSet.maxBytes,
      maxFiles: capsSet.maxFiles,
      keptEntries: caps.keptEntries,
      keptBytes: caps.keptBytes,
      leftOutEntries,
      leftOutBytes,
      leftOut,
      leftOutNotListed: leftOutEntries - leftOut.length,
    },
    ...(redactor ? { secretScan: { secrets: redactor.secretNames, filesWithSecrets, unscannedFiles: hashing.unhashedFiles } } : {}),
  };
  const scanned = summary.secretScan ? `,\n  "secretScan": ${indented(summary.secretScan, 1)}` : '';
  await w.add((first ? ']' : '\n  ]') + `,\n  "hashing": ${indented(summary.hashing, 1)},\n  "truncation": ${indented(summary.truncation, 1)}${scanned}\n}\n`);
  await w.flush();
  return summary;
}

/**
 * Removes from `root` what the caps leave out, deciding as writeManifest does (the same folder,
 * the same answer): files, links and others unlinked (a link is removed, never followed), a
 * folder left out removed once emptied. Returns how many entries were removed.
 */
export async function removeLeftOut(root: string, caps: ResultCaps = DEFAULT_CAPS, signal?: AbortSignal): Promise<number> {
  let removed = 0;
  const gone = (f: () => void) => {
    try {
      f();
      removed++;
    } catch {
      // gone already, or not removable: the manifest lists it left out all the same
    }
  };
  await walk(
    Buffer.from(root),
    new Caps(caps),
    new Slicer(),
    signal,
    (m) => {
      if (m.leftOut && !m.st.isDirectory()) gone(() => unlinkSync(m.abs));
    },
    (m) => {
      if (m.leftOut) gone(() => rmdirSync(m.abs));
    },
  );
  return removed;
}

/**
 * The manifest of a run's results folder: every entry the attempt left, in one walk (lstat, no
 * link ever followed), then the files' sha256, within a budget.
 *
 * The file system is read with synchronous calls in slices of at most SLICE_MS, the event loop
 * given back between slices: a hundred thousand small files cost a hundred thousand async round
 * trips through libuv's thread pool otherwise (measured 4-5x slower on a loaded 2-core machine),
 * and a slice keeps the controller answering its other attempts meanwhile.
 *
 * Names are bytes on the host: one that is not valid UTF-8 is listed with its bad bytes as
 * U+FFFD in `path` and its exact bytes, base64, in `pathBase64` (the same for a link's target:
 * `targetBase64`), so nothing is lost and `path` stays text.
 *
 * The budget: files are hashed in manifest order while their sizes add up to at most
 * `maxBytes` (a file that does not fit is skipped, later smaller ones may still fit) and until
 * `maxSeconds` have passed since hashing began; the rest are listed without `sha256`, with
 * `unhashed` saying which budget, and `hashing` at the top says what was left out. A file that
 * cannot be read is listed with `unhashed: 'unreadable'` and the error's code. The caller's
 * signal (berth stopping) interrupts the hashing: the manifest is then not written at all.
 *
 * Given the run's redactor (a run with secrets), every file is also scanned for the secrets'
 * values as it is hashed (the same read, the same bounded buffer): one that holds any is flagged
 * with their names (`secrets`), and `secretScan` at the top says what was looked for and how
 * many files could not be scanned (those left unhashed). The files are left as they are.
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readdirSync, readlinkSync, readSync, type Stats } from 'node:fs';
import { setImmediate as yieldLoop } from 'node:timers/promises';
import { DEFAULTS } from '../constants';
import type { Redactor, SecretScanner } from '../util/redact';

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

export interface Manifest {
  files: ManifestEntry[];
  hashing: {
    /** Every file was hashed. */
    complete: boolean;
    maxBytes: number;
    maxSeconds: number;
    hashedFiles: number;
    hashedBytes: number;
    unhashedFiles: number;
    unhashedBytes: number;
  };
  /** With a run's secrets: what the files were scanned for, how many hold one, how many were not scanned (unhashed). */
  secretScan?: { secrets: string[]; filesWithSecrets: number; unscannedFiles: number };
}

export const DEFAULT_BUDGET: HashBudget = { maxBytes: DEFAULTS.hashMaxBytes, maxSeconds: DEFAULTS.hashMaxSeconds };

const SLASH = Buffer.from('/');
const CHUNK = 1024 * 1024;
/** The longest the manifest holds the event loop at once (plus one read). */
const SLICE_MS = 5;

/** Gives the event loop back once a slice is used up. */
class Slicer {
  private start = performance.now();
  async tick(signal?: AbortSignal): Promise<void> {
    if (performance.now() - this.start < SLICE_MS) return;
    await yieldLoop();
    signal?.throwIfAborted();
    this.start = performance.now();
  }
}

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

interface Found {
  entry: ManifestEntry;
  abs: Buffer;
}

/** Every entry under `root`, depth first, each folder's names in byte order. */
async function walk(root: Buffer, slicer: Slicer, signal?: AbortSignal): Promise<Found[]> {
  const out: Found[] = [];
  const visit = async (dir: Buffer, rel: Buffer | undefined): Promise<void> => {
    const names = tryOr(() => readdirSync(dir, { encoding: 'buffer' }), [] as Buffer[]).sort(Buffer.compare);
    for (const n of names) {
      await slicer.tick(signal);
      const abs = Buffer.concat([dir, SLASH, n]);
      const relPath = rel ? Buffer.concat([rel, SLASH, n]) : n;
      const st = tryOr((): Stats | undefined => lstatSync(abs), undefined);
      if (!st) continue; // gone since the folder was read
      const p = named(relPath);
      const base = { path: p.text, ...(p.base64 ? { pathBase64: p.base64 } : {}) };
      if (st.isSymbolicLink()) {
        const t = named(tryOr(() => readlinkSync(abs, { encoding: 'buffer' }), Buffer.alloc(0)));
        out.push({ abs, entry: { ...base, type: 'symlink', size: 0, target: t.text, ...(t.base64 ? { targetBase64: t.base64 } : {}) } });
      } else if (st.isDirectory()) {
        out.push({ abs, entry: { ...base, type: 'dir', size: 0 } });
        await visit(abs, relPath);
      } else if (st.isFile()) out.push({ abs, entry: { ...base, type: 'file', size: st.size } });
      else out.push({ abs, entry: { ...base, type: 'other', size: 0 } });
    }
  };
  await visit(root, undefined);
  return out;
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

/** The manifest of `root` (a folder; a missing one has no entries). */
export async function manifest(root: string, budget: HashBudget = DEFAULT_BUDGET, signal?: AbortSignal, redactor?: Redactor): Promise<Manifest> {
  const slicer = new Slicer();
  const found = await walk(Buffer.from(root), slicer, signal);
  signal?.throwIfAborted();
  const files = found.filter((f) => f.entry.type === 'file');
  // The bytes budget, decided in manifest order before any hashing: the same folder gets the same answer.
  let planned = 0;
  const todo: Found[] = [];
  for (const f of files) {
    if (planned + f.entry.size <= budget.maxBytes) {
      planned += f.entry.size;
      todo.push(f);
    } else f.entry.unhashed = 'bytes-budget';
  }
  const time = new AbortController();
  const timer = setTimeout(() => time.abort(new TimeUp()), budget.maxSeconds * 1000);
  const both = signal ? AbortSignal.any([signal, time.signal]) : time.signal;
  const buf = Buffer.allocUnsafe(CHUNK);
  try {
    for (const f of todo) {
      if (time.signal.aborted) {
        f.entry.unhashed = 'time-budget';
        continue;
      }
      try {
        const scan = redactor?.scanner();
        f.entry.sha256 = await sha256(f.abs, buf, slicer, both, scan);
        const held = scan?.found() ?? [];
        if (held.length) f.entry.secrets = held;
      } catch (err) {
        signal?.throwIfAborted();
        if (time.signal.aborted) f.entry.unhashed = 'time-budget';
        else {
          f.entry.unhashed = 'unreadable';
          f.entry.error = (err as NodeJS.ErrnoException).code ?? String(err);
        }
      }
      await slicer.tick(signal);
    }
  } finally {
    clearTimeout(timer);
  }
  const hashed = files.filter((f) => f.entry.sha256 !== undefined);
  const sum = (xs: Found[]) => xs.reduce((n, f) => n + f.entry.size, 0);
  return {
    files: found.map((f) => f.entry),
    hashing: {
      complete: hashed.length === files.length,
      maxBytes: budget.maxBytes,
      maxSeconds: budget.maxSeconds,
      hashedFiles: hashed.length,
      hashedBytes: sum(hashed),
      unhashedFiles: files.length - hashed.length,
      unhashedBytes: sum(files) - sum(hashed),
    },
    ...(redactor
      ? {
          secretScan: {
            secrets: redactor.secretNames,
            filesWithSecrets: files.filter((f) => f.entry.secrets).length,
            unscannedFiles: files.length - hashed.length,
          },
        }
      : {}),
  };
}

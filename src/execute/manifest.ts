/**
 * The manifest of a run's results folder: every entry the attempt left, in one walk (lstat, no
 * link ever followed), then the files' sha256, several at once, within a budget.
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
 */
import { isUtf8 } from 'node:buffer';
import { createHash } from 'node:crypto';
import { constants, promises as fs, type Stats } from 'node:fs';
import { DEFAULTS } from '../constants';

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
}

export interface HashBudget {
  maxBytes: number;
  maxSeconds: number;
  /** Files hashed at once. */
  concurrency?: number;
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
}

export const DEFAULT_BUDGET: HashBudget = { maxBytes: DEFAULTS.hashMaxBytes, maxSeconds: DEFAULTS.hashMaxSeconds };

const SLASH = Buffer.from('/');
const CHUNK = 1024 * 1024;

/** A name as text, and its exact bytes when the text cannot hold them. */
function named(bytes: Buffer): { text: string; base64?: string } {
  return isUtf8(bytes) ? { text: bytes.toString('utf8') } : { text: bytes.toString('utf8'), base64: bytes.toString('base64') };
}

interface Found {
  entry: ManifestEntry;
  abs: Buffer;
}

/** Every entry under `root`, depth first, each folder's names in byte order. */
async function walk(root: Buffer): Promise<Found[]> {
  const out: Found[] = [];
  const visit = async (dir: Buffer, rel: Buffer | undefined): Promise<void> => {
    let names: Buffer[];
    try {
      names = (await fs.readdir(dir, { encoding: 'buffer' })).sort(Buffer.compare);
    } catch {
      return;
    }
    const kids = names.map((n) => ({ abs: Buffer.concat([dir, SLASH, n]), rel: rel ? Buffer.concat([rel, SLASH, n]) : n }));
    const stats: (Stats | undefined)[] = [];
    for (let i = 0; i < kids.length; i += 256) {
      stats.push(...(await Promise.all(kids.slice(i, i + 256).map((k) => fs.lstat(k.abs).catch(() => undefined)))));
    }
    for (const [i, k] of kids.entries()) {
      const st = stats[i];
      if (!st) continue; // gone since the folder was read
      const p = named(k.rel);
      const base = { path: p.text, ...(p.base64 ? { pathBase64: p.base64 } : {}) };
      if (st.isSymbolicLink()) {
        const t = named(await fs.readlink(k.abs, { encoding: 'buffer' }).catch(() => Buffer.alloc(0)));
        out.push({ abs: k.abs, entry: { ...base, type: 'symlink', size: 0, target: t.text, ...(t.base64 ? { targetBase64: t.base64 } : {}) } });
      } else if (st.isDirectory()) {
        out.push({ abs: k.abs, entry: { ...base, type: 'dir', size: 0 } });
        await visit(k.abs, k.rel);
      } else if (st.isFile()) out.push({ abs: k.abs, entry: { ...base, type: 'file', size: st.size } });
      else out.push({ abs: k.abs, entry: { ...base, type: 'other', size: 0 } });
    }
  };
  await visit(root, undefined);
  return out;
}

/** sha256 of a regular file, opened without following a link or blocking on a fifo. */
async function sha256(abs: Buffer, signal: AbortSignal): Promise<string> {
  const h = createHash('sha256');
  const handle = await fs.open(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    if (!(await handle.stat()).isFile()) throw Object.assign(new Error('not a regular file'), { code: 'ENOTFILE' });
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      signal.throwIfAborted();
      const { bytesRead } = await handle.read(buf, 0, CHUNK, null);
      if (bytesRead === 0) break;
      h.update(buf.subarray(0, bytesRead));
    }
  } finally {
    await handle.close();
  }
  return h.digest('hex');
}

class TimeUp extends Error {}

/** The manifest of `root` (a folder; a missing one has no entries). */
export async function manifest(root: string, budget: HashBudget = DEFAULT_BUDGET, signal?: AbortSignal): Promise<Manifest> {
  const found = await walk(Buffer.from(root));
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
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < todo.length) {
      const f = todo[next++] as Found;
      if (time.signal.aborted) {
        f.entry.unhashed = 'time-budget';
        continue;
      }
      try {
        f.entry.sha256 = await sha256(f.abs, both);
      } catch (err) {
        signal?.throwIfAborted();
        if (time.signal.aborted) f.entry.unhashed = 'time-budget';
        else {
          f.entry.unhashed = 'unreadable';
          f.entry.error = (err as NodeJS.ErrnoException).code ?? String(err);
        }
      }
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.max(1, budget.concurrency ?? DEFAULTS.hashConcurrency) }, worker));
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
  };
}

/**
 * Walks a fixture (folder or single file) with lstat, never following links, and records what
 * the fixture digest needs. Refuses links that point outside the fixture (`fixture-link`) and
 * devices, fifos and sockets (`fixture-special`). Links inside the fixture are fine; copying
 * keeps them as links.
 *
 * A file's content digest comes from its lstat when it has not changed since it was last read:
 * from memory (content-cache.ts), else from the digests kept on disk (digest-store.ts), so an
 * unchanged fixture costs a stat walk in every process. A file over DEFAULTS.maxFixtureFileBytes
 * (a sparse file counts its holes) is refused from its stat alone (`too-large`), never read: a
 * 16 TiB sparse file cannot be copied in, and finding its data without reading its holes needs
 * SEEK_DATA, which Node does not offer.
 */
import { promises as fsp, type BigIntStats } from 'node:fs';
import { DEFAULTS } from '../constants';
import { hashFile, knownSha256, rememberSha256 } from './content-cache';
import { DigestStore } from './digest-store';
import * as path from 'node:path';
import { isWithin, toPosix } from './path-util';
import type { SpecErrorCode } from './types';

export interface FixtureEntry {
  /** Relative to the fixture folder, forward slashes; '.' for the folder itself; a lone file is its base name. */
  path: string;
  type: 'dir' | 'file' | 'symlink';
  /** Permission bits (mode & 0o777). */
  mode: number;
  size: number;
  /** sha256 hex of a file's content. */
  sha256?: string;
  /** A link's target, as written. */
  target?: string;
}

export interface FixtureProblem {
  code: SpecErrorCode;
  message: string;
}

export interface FixtureScan {
  entries: FixtureEntry[];
  problems: FixtureProblem[];
}

/** At most this many problems are reported per fixture. */
const MAX_PROBLEMS = 5;

/** Scans the fixture at `root` (an absolute, link-free path). */
export async function scanFixture(root: string): Promise<FixtureScan> {
  const entries: FixtureEntry[] = [];
  const problems: FixtureProblem[] = [];
  const store = DigestStore.open(root);
  const rootStat = await fsp.lstat(root, { bigint: true });
  if (!rootStat.isDirectory()) {
    await addEntry(root, path.basename(root), rootStat, path.dirname(root), entries, problems, store);
    store?.save();
    return { entries, problems };
  }
  const pending: string[] = ['.'];
  while (pending.length > 0 && problems.length < MAX_PROBLEMS) {
    const rel = pending.pop() as string;
    const abs = path.join(root, rel);
    const st = await fsp.lstat(abs, { bigint: true });
    await addEntry(abs, toPosix(rel), st, root, entries, problems, store);
    if (st.isDirectory()) {
      const names = (await fsp.readdir(abs)).sort().reverse();
      for (const n of names) pending.push(rel === '.' ? n : path.join(rel, n));
    }
  }
  if (problems.length === 0) store?.save();
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { entries, problems };
}

/** The binary size, for messages. */
function size(n: bigint): string {
  const units = ['bytes', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let v = Number(n);
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} bytes` : `${Number.isInteger(v) ? v : v.toFixed(1)} ${units[u]}`;
}

/** The content digest of the file at `abs` whose lstat is `st`: kept (memory, then disk) or read now. */
async function contentOf(abs: string, rel: string, st: BigIntStats, store: DigestStore | undefined): Promise<string> {
  const known = knownSha256(st);
  if (known !== undefined) {
    store?.set(rel, st, known);
    return known;
  }
  const stored = store?.get(rel, st);
  if (stored !== undefined) {
    rememberSha256(st, stored);
    return stored;
  }
  const read = await hashFile(abs);
  if (read.stat) store?.set(rel, read.stat, read.sha256);
  return read.sha256;
}

async function addEntry(
  abs: string,
  rel: string,
  st: BigIntStats,
  root: string,
  entries: FixtureEntry[],
  problems: FixtureProblem[],
  store: DigestStore | undefined,
): Promise<void> {
  const mode = Number(st.mode & 0o777n);
  if (st.isDirectory()) {
    entries.push({ path: rel, type: 'dir', mode, size: 0 });
  } else if (st.isFile()) {
    if (st.size > BigInt(DEFAULTS.maxFixtureFileBytes)) {
      const onDisk = st.blocks * 512n;
      const sparse =
        onDisk < st.size / 2n ? ` (${size(onDisk)} of it on disk: a sparse file, whose holes the copy into the container would carry as zeros)` : '';
      problems.push({
        code: 'too-large',
        message: `fixture file "${rel}" is ${size(st.size)}${sparse}; a fixture file may be at most ${size(BigInt(DEFAULTS.maxFixtureFileBytes))}`,
      });
      return;
    }
    entries.push({ path: rel, type: 'file', mode, size: Number(st.size), sha256: await contentOf(abs, rel, st, store) });
  } else if (st.isSymbolicLink()) {
    const target = await fsp.readlink(abs);
    const resolved = path.resolve(path.dirname(abs), target);
    if (!isWithin(root, resolved) || !(await realStaysWithin(root, resolved))) {
      problems.push({ code: 'fixture-link', message: `fixture link "${rel}" points outside the fixture (to ${JSON.stringify(target)})` });
    }
    entries.push({ path: rel, type: 'symlink', mode, size: 0, target });
  } else {
    const kind = st.isFIFO() ? 'a fifo' : st.isSocket() ? 'a socket' : 'a device';
    problems.push({ code: 'fixture-special', message: `fixture entry "${rel}" is ${kind}; only files, folders and links can be copied` });
  }
}

/** A link target that exists must also resolve (through further links) inside the fixture. */
async function realStaysWithin(root: string, resolved: string): Promise<boolean> {
  try {
    return isWithin(await fsp.realpath(root), await fsp.realpath(resolved));
  } catch {
    return true; // dangling, or a loop: it points inside lexically and is copied as a link
  }
}

/**
 * The status records of a large instance in one file (issue 55): reading 100,000 record files
 * (a folder listing, then an open, read and parse each) costs ~2.3 s of CPU; one file of the same
 * records, their attestations' checks stored once, a fraction of that. It is a cache, never the
 * records: `<state>/<instance>/attempts.index.json`, beside the records folder, written by whoever
 * read the folder in full (best effort: a temp file, then a rename) and used only while the
 * folder is provably the one it was made from.
 *
 * The records are written by the store alone, each as a temp file renamed into the folder, so
 * every write changes the folder's mtime and ctime. The index holds the folder's identity and
 * times (inode, mtime, ctime, in nanoseconds) as they were before the read it was made from and
 * still were after it, and it is made only when the folder had not changed for RACY_MS before that
 * read began: a later write then always gives the folder other times (the clock's granularity is
 * milliseconds, far below RACY_MS). A reader uses it only when the folder's identity and times
 * are the ones it holds. A record edited in place by hand (not the store's way) is not seen
 * until the folder changes; below INDEX_MIN_RECORDS records the folder is always read, as the
 * index saves nothing there.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, renameSync, rmSync, statSync, writeFileSync, type BigIntStats } from 'node:fs';
import type { Attestation, AttemptStatus } from './types';

const FORMAT = 1;
/** Below this many records the folder is read: it is quick, and no index is made. */
export const INDEX_MIN_RECORDS = 2_000;
/** The folder must have been still this long before a read that makes an index. */
export const RACY_MS = 2_000;

/** A folder's identity and times, as strings (nanoseconds). */
export interface FolderStamp {
  ino: string;
  mtimeNs: string;
  ctimeNs: string;
}

export function folderStamp(dir: string): FolderStamp | undefined {
  let st: BigIntStats;
  try {
    st = statSync(dir, { bigint: true });
  } catch {
    return undefined;
  }
  if (!st.isDirectory()) return undefined;
  return { ino: String(st.ino), mtimeNs: String(st.mtimeNs), ctimeNs: String(st.ctimeNs) };
}

export function sameStamp(a: FolderStamp | undefined, b: FolderStamp | undefined): boolean {
  return !!a && !!b && a.ino === b.ino && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs;
}

/** One entry: a record, or a damaged one's problem (as the folder's read found it). */
export type IndexEntry = [name: string, rec: AttemptStatus] | [name: string, rec: null, problem: string];

interface IndexFile {
  format: number;
  folder: FolderStamp;
  /** Attestations' check lists, each once; a record's `lastAttestation.checks` is an index into it. */
  checks: Attestation['checks'][];
  entries: IndexEntry[];
}

/** The index's entries, when it was made from the folder as it is now (`now`: its stamp); undefined otherwise. */
export function readIndex(file: string, now: FolderStamp): IndexEntry[] | undefined {
  let parsed: IndexFile;
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8')) as IndexFile;
  } catch {
    return undefined;
  }
  if (parsed?.format !== FORMAT || !sameStamp(parsed.folder, now) || !Array.isArray(parsed.entries) || !Array.isArray(parsed.checks)) return undefined;
  for (const e of parsed.entries) {
    const att = e[1]?.lastAttestation as (Omit<Attestation, 'checks'> & { checks: unknown }) | undefined;
    if (att && typeof att.checks === 'number') {
      const shared = parsed.checks[att.checks];
      if (!Array.isArray(shared)) return undefined;
      att.checks = shared;
    }
  }
  return parsed.entries;
}

/** Writes the index of `entries`, read from a folder whose stamp was `stamp` throughout. Best effort. */
export function writeIndex(file: string, stamp: FolderStamp, entries: IndexEntry[]): void {
  const checks: Attestation['checks'][] = [];
  const seen = new Map<string, number>();
  const out = entries.map((e): IndexEntry => {
    const rec = e[1];
    const list = rec?.lastAttestation?.checks;
    if (!rec || !Array.isArray(list)) return e;
    const key = JSON.stringify(list);
    let i = seen.get(key);
    if (i === undefined) {
      seen.set(key, (i = checks.length));
      checks.push(list);
    }
    return [e[0], { ...rec, lastAttestation: { ...(rec.lastAttestation as Attestation), checks: i as unknown as Attestation['checks'] } }];
  });
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify({ format: FORMAT, folder: stamp, checks, entries: out } satisfies IndexFile), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
  }
}

export function removeIndex(file: string): void {
  rmSync(file, { force: true });
}

/**
 * Beside the index, the names of the folder's records of the old AttemptSet child form
 * (store.ts keptChildNames), for the same folder stamp: every command that loads specs asks for
 * them, and a listing of 100,000 file names is ~110 ms of CPU. Names change only with files
 * added, removed or renamed, each of which changes the folder's times, so a stamp that still holds
 * holds the same names (a record edited in place changes no name).
 */
interface NamesFile {
  format: number;
  folder: FolderStamp;
  legacy: string[];
}

export function namesFileOf(indexFile: string): string {
  return indexFile.replace(/\.index\.json$/, '.names.json');
}

export function readLegacyNames(file: string, now: FolderStamp): string[] | undefined {
  try {
    const parsed = JSON.parse(readFileSync(file, 'utf8')) as NamesFile;
    if (parsed?.format !== FORMAT || !sameStamp(parsed.folder, now) || !Array.isArray(parsed.legacy)) return undefined;
    return parsed.legacy.every((n) => typeof n === 'string') ? parsed.legacy : undefined;
  } catch {
    return undefined;
  }
}

/** Best effort, as writeIndex. */
export function writeLegacyNames(file: string, stamp: FolderStamp, legacy: string[]): void {
  const tmp = `${file}.${randomBytes(6).toString('hex')}.tmp`;
  try {
    writeFileSync(tmp, JSON.stringify({ format: FORMAT, folder: stamp, legacy } satisfies NamesFile), { mode: 0o600 });
    renameSync(tmp, file);
  } catch {
    rmSync(tmp, { force: true });
  }
}

/**
 * What an attempt holds on disk, measured as the kubelet measures `ephemeral-storage` where the
 * file system cannot enforce it: a walk of the folders the attempt can write (its writable layer,
 * its results folder, its volumes), at an interval. An observation: it reads, it decides nothing
 * (the planner compares it with the limit, plan/disk.ts).
 *
 * Everything the attempt wrote is hostile input:
 * - no link is followed (lstat; a link counts as itself), a folder is read as bytes (a name that
 *   is not UTF-8 is walked like any other), and an entry that vanishes meanwhile is skipped;
 * - each entry counts the larger of its apparent size and the blocks it holds, and at least one
 *   block (DISK_ENTRY_MIN_BYTES, 4 KiB): a million empty files count 4 GiB, so filling the file
 *   system's inodes with empty files ends at the limit as writing bytes does (the kubelet counts
 *   inodes apart; one number is simpler to state and to enforce). A sparse file counts its size:
 *   the attempt cannot hide bytes in holes that a copy of its results would fill. A file with
 *   several links counts once;
 * - the walk stops as soon as the count passes `stopAboveBytes` (the limit): an attempt over its
 *   limit is known to be over, and no walk reads more than limit / 4 KiB entries;
 * - `maxEntries` bounds a walk besides (the measuring's budget per interval): a walk that reaches
 *   it reports `complete: false`, its count a lower bound;
 * - memory: the folders still to read (paths), and the identities of files with several links.
 *
 * Reads are synchronous, in slices of at most 5 ms (util/slicer.ts) with the event loop given back between
 * them (as the manifest's walk, harvest/manifest.ts: a hundred thousand async lstats cost 4-5x
 * more on a loaded 2-core machine).
 */
import { lstatSync, opendirSync, type Dir, type Stats } from 'node:fs';
import { DEFAULTS } from '../constants';
import { Slicer } from '../util/slicer';

/** What a walk found. */
export interface DiskCount {
  /** Bytes as counted (see above): the larger of size and blocks, at least 4 KiB an entry. */
  bytes: number;
  /** Entries counted (files, folders, links, others), the roots included. */
  entries: number;
  /** False: the walk stopped at maxEntries or could not read a folder; `bytes` is a lower bound. */
  complete: boolean;
  /** The walk stopped because `bytes` passed stopAboveBytes. */
  over: boolean;
}

export interface DiskWalkLimits {
  /** Stop as soon as the count passes this (the attempt's limit). */
  stopAboveBytes: number;
  /** Entries walked at most. */
  maxEntries: number;
}

const SLASH = Buffer.from('/');

/** How much one entry counts. */
export function entryBytes(st: Pick<Stats, 'size' | 'blocks'>): number {
  return Math.max(st.size, st.blocks * 512, DEFAULTS.diskEntryMinBytes);
}

const lstatOrUndefined = (p: Buffer): Stats | undefined => {
  try {
    return lstatSync(p);
  } catch {
    return undefined;
  }
};

/**
 * Counts what lies under `roots` (folders; a missing one counts nothing, a root that is not a
 * folder counts as itself), with no link followed, within `limits`.
 */
export async function countDisk(roots: readonly string[], limits: DiskWalkLimits, signal?: AbortSignal): Promise<DiskCount> {
  const slicer = new Slicer();
  const linked = new Set<string>();
  const out: DiskCount = { bytes: 0, entries: 0, complete: true, over: false };
  const pending: Buffer[] = [];
  /** Counts one entry; false: stop the walk. */
  const add = (p: Buffer, st: Stats): boolean => {
    out.entries++;
    if (!st.isDirectory() && st.nlink > 1) {
      const id = `${st.dev}:${st.ino}`;
      if (linked.has(id)) return true;
      linked.add(id);
    }
    out.bytes += entryBytes(st);
    if (st.isDirectory()) pending.push(p);
    if (out.bytes > limits.stopAboveBytes) {
      out.over = true;
      return false;
    }
    if (out.entries >= limits.maxEntries) {
      out.complete = false;
      return false;
    }
    return true;
  };
  for (const root of roots) {
    const p = Buffer.from(root);
    const st = lstatOrUndefined(p);
    if (st && !add(p, st)) return out;
    while (pending.length) {
      const dirPath = pending.pop() as Buffer;
      let dir: Dir;
      try {
        // Opened by its path with no link in it below the root: every folder pushed was lstat'ed a folder, never a link.
        dir = opendirSync(dirPath, { encoding: 'buffer' as BufferEncoding, bufferSize: 256 });
      } catch (err) {
        // gone since it was counted: nothing more to count; unreadable: what is in it is not known
        if ((err as NodeJS.ErrnoException).code !== 'ENOENT') out.complete = false;
        continue;
      }
      try {
        for (;;) {
          const e = dir.readSync();
          if (e === null) break;
          const child = Buffer.concat([dirPath, SLASH, e.name as unknown as Buffer]);
          const cst = lstatOrUndefined(child);
          if (cst && !add(child, cst)) return out;
          await slicer.tick(signal);
        }
      } finally {
        dir.closeSync();
      }
    }
  }
  return out;
}

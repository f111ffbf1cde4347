/**
 * Walks a fixture (folder or single file) with lstat, never following links, and records what
 * the fixture digest needs. Refuses links that point outside the fixture (`fixture-link`) and
 * devices, fifos and sockets (`fixture-special`). Links inside the fixture are fine; copying
 * keeps them as links.
 */
import { promises as fsp, type Stats } from 'node:fs';
import { fileSha256 } from './content-cache';
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
  const rootStat = await fsp.lstat(root);
  if (!rootStat.isDirectory()) {
    await addEntry(root, path.basename(root), rootStat, path.dirname(root), entries, problems);
    return { entries, problems };
  }
  const pending: string[] = ['.'];
  while (pending.length > 0 && problems.length < MAX_PROBLEMS) {
    const rel = pending.pop() as string;
    const abs = path.join(root, rel);
    const st = await fsp.lstat(abs);
    await addEntry(abs, toPosix(rel), st, root, entries, problems);
    if (st.isDirectory()) {
      const names = (await fsp.readdir(abs)).sort().reverse();
      for (const n of names) pending.push(rel === '.' ? n : path.join(rel, n));
    }
  }
  entries.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  return { entries, problems };
}

async function addEntry(abs: string, rel: string, st: Stats, root: string, entries: FixtureEntry[], problems: FixtureProblem[]): Promise<void> {
  const mode = st.mode & 0o777;
  if (st.isDirectory()) {
    entries.push({ path: rel, type: 'dir', mode, size: 0 });
  } else if (st.isFile()) {
    entries.push({ path: rel, type: 'file', mode, size: st.size, sha256: await fileSha256(abs) });
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

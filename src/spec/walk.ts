/**
 * Finds the spec files under a specs folder: every `*.yaml` / `*.yml`, recursively, sorted by
 * relative path. Skips dot-files, dot-folders and editor leftovers; follows a linked folder only
 * when it resolves inside the specs folder (and only once); a linked spec file must resolve
 * inside the folder too. A file reached twice (through links) is read once.
 */
import { promises as fsp, type Dirent } from 'node:fs';
import * as path from 'node:path';
import { isInside, toPosix } from './path-util';
import { ioReason } from './read-spec-file';
import type { SpecErrorCode } from './types';

export interface SpecFile {
  abs: string;
  /** Relative to the specs folder, forward slashes. */
  rel: string;
}

export interface WalkProblem extends SpecFile {
  code: SpecErrorCode;
  message: string;
}

export interface WalkResult {
  files: SpecFile[];
  problems: WalkProblem[];
}

const SPEC_FILE = /\.ya?ml$/;

/** Editor and tool leftovers: backups, swap files, lock files, vim's write test. */
export function isIgnoredName(name: string): boolean {
  return (
    name.startsWith('.') ||
    name.endsWith('~') ||
    (name.startsWith('#') && name.endsWith('#')) ||
    /\.(swp|swx|swo|tmp)$/.test(name) ||
    name === '4913'
  );
}

export function isSpecFileName(name: string): boolean {
  return SPEC_FILE.test(name) && !isIgnoredName(name);
}

export async function findSpecFiles(root: string): Promise<WalkResult> {
  const problems: WalkProblem[] = [];
  const rootAbs = path.resolve(root);
  let rootReal: string;
  try {
    rootReal = await fsp.realpath(rootAbs);
    if (!(await fsp.stat(rootReal)).isDirectory()) {
      return { files: [], problems: [{ abs: rootAbs, rel: '.', code: 'io', message: 'not a folder' }] };
    }
  } catch (err) {
    return { files: [], problems: [{ abs: rootAbs, rel: '.', code: 'io', message: `cannot read specs folder: ${ioReason(err)}` }] };
  }

  const byReal = new Map<string, { file: SpecFile; linked: boolean }>();
  const visited = new Set<string>([rootReal]);
  const pending: string[] = [''];
  while (pending.length > 0) {
    const relDir = pending.pop() as string;
    const absDir = path.join(rootAbs, relDir);
    let entries: Dirent[];
    try {
      entries = await fsp.readdir(absDir, { withFileTypes: true });
    } catch (err) {
      problems.push({ abs: absDir, rel: toPosix(relDir) || '.', code: 'io', message: `cannot read folder: ${ioReason(err)}` });
      continue;
    }
    for (const e of entries) {
      if (isIgnoredName(e.name)) continue;
      const rel = relDir === '' ? e.name : path.join(relDir, e.name);
      const abs = path.join(rootAbs, rel);
      const file: SpecFile = { abs, rel: toPosix(rel) };
      if (e.isDirectory()) {
        // A real folder cannot make a loop: always walk it (links are checked against `visited`).
        visited.add(await fsp.realpath(abs).catch(() => abs));
        pending.push(rel);
      } else if (e.isSymbolicLink()) {
        await followLink(file, e.name, rootReal, visited, pending, byReal, problems);
      } else if (SPEC_FILE.test(e.name)) {
        if (e.isFile()) {
          const real = await fsp.realpath(abs).catch(() => abs);
          const seen = byReal.get(real);
          if (!seen || seen.linked) byReal.set(real, { file, linked: false });
        } else {
          problems.push({ ...file, code: 'io', message: 'not a regular file' });
        }
      }
    }
  }
  const files = [...byReal.values()].map((v) => v.file).sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  problems.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return { files, problems };
}

async function followLink(
  file: SpecFile,
  name: string,
  rootReal: string,
  visited: Set<string>,
  pending: string[],
  byReal: Map<string, { file: SpecFile; linked: boolean }>,
  problems: WalkProblem[],
): Promise<void> {
  let real: string;
  let isDir: boolean;
  let isFile: boolean;
  try {
    real = await fsp.realpath(file.abs);
    const st = await fsp.stat(real);
    isDir = st.isDirectory();
    isFile = st.isFile();
  } catch (err) {
    if (SPEC_FILE.test(name)) problems.push({ ...file, code: 'io', message: `broken link: ${ioReason(err)}` });
    return;
  }
  if (isDir) {
    // Linked folders outside the specs folder are not followed; inside ones at most once.
    if (isInside(rootReal, real) && !visited.has(real)) {
      visited.add(real);
      pending.push(file.rel);
    }
    return;
  }
  if (!SPEC_FILE.test(name)) return;
  if (!isFile) {
    problems.push({ ...file, code: 'io', message: 'not a regular file' });
  } else if (!isInside(rootReal, real)) {
    problems.push({ ...file, code: 'path-escape', message: `links outside the specs folder (to ${real})` });
  } else if (!byReal.has(real)) {
    byReal.set(real, { file, linked: true });
  }
}

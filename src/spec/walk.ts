/**
 * Finds the spec files under a specs folder: every `*.yaml` / `*.yml`, recursively, sorted by
 * relative path. Skips dot-files, dot-folders and editor leftovers; follows a linked folder only
 * when it resolves inside the specs folder (and only once); a linked spec file must resolve
 * inside the folder too. A file reached twice (through links) is read once. What the specs
 * folder's `.berthignore` matches is neither read nor descended into (berthignore.ts); fixtures
 * and `fromDir` folders are left out after the files are read (loader.ts `dropClaimed`).
 *
 * The walk uses synchronous calls: a folder of a thousand files costs a few milliseconds this
 * way, several times less than with promises, and a regular file's real path is its folder's
 * real path and its name (no call per file).
 */
import { readdirSync, realpathSync, statSync, type Dirent } from 'node:fs';
import * as path from 'node:path';
import { BERTHIGNORE, readBerthIgnore, type BerthIgnore } from './berthignore';
import { isInside, toPosix } from './path-util';
import { ioReason } from './read-spec-file';
import type { SpecErrorCode } from './types';

export interface SpecFile {
  abs: string;
  /** Relative to the specs folder, forward slashes. */
  rel: string;
  /** Found as a link (resolving inside the specs folder); otherwise it is read without following one. */
  linked?: boolean;
  /** Its real path (links on the way resolved), when the walk knows it without a call. */
  real?: string;
}

/** A path the walk left out, and why (`berth validate -v`). */
export interface SkippedPath {
  /** Relative to the specs folder, forward slashes; a folder ends with `/`. */
  rel: string;
  reason: string;
}

export interface WalkProblem extends SpecFile {
  code: SpecErrorCode;
  message: string;
  /** The specs root itself cannot be walked: the walk knows no attempt at all. */
  root?: boolean;
  /** A folder under the root that cannot be read: what its files declare is unknown. */
  folder?: boolean;
}

export interface WalkResult {
  files: SpecFile[];
  problems: WalkProblem[];
  /** The folders walked, relative, forward slashes ('' is the root). */
  folders?: Set<string>;
  /** A link was met (to a file or a folder, in or out of the folder). */
  links?: boolean;
  /** Spec files and folders left out by the specs folder's `.berthignore`. */
  skipped?: SkippedPath[];
  /** The specs folder's `.berthignore`, when it has one (the watcher's changes are matched against it too). */
  ignore?: BerthIgnore;
}

const SPEC_FILE = /\.ya?ml$/;

/** Editor and tool leftovers: backups, swap files, lock files, vim's write test. */
export function isIgnoredName(name: string): boolean {
  return name.startsWith('.') || name.endsWith('~') || (name.startsWith('#') && name.endsWith('#')) || /\.(swp|swx|swo|tmp)$/.test(name) || name === '4913';
}

export function isSpecFileName(name: string): boolean {
  return SPEC_FILE.test(name) && !isIgnoredName(name);
}

/** Why a specs root cannot serve as one (missing, not a folder, unreadable), or undefined when it can. */
export function specsRootProblem(root: string): string | undefined {
  try {
    const real = realpathSync.native(path.resolve(root));
    if (!statSync(real).isDirectory()) return 'the specs folder is not a folder';
    readdirSync(real);
    return undefined;
  } catch (err) {
    return `cannot read the specs folder: ${ioReason(err)}`;
  }
}

export async function findSpecFiles(root: string): Promise<WalkResult> {
  return findSpecFilesSync(root);
}

function realOr(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}

function findSpecFilesSync(root: string): WalkResult {
  const problems: WalkProblem[] = [];
  const rootAbs = path.resolve(root);
  let rootReal: string;
  try {
    rootReal = realpathSync.native(rootAbs);
    if (!statSync(rootReal).isDirectory()) {
      return { files: [], problems: [{ abs: rootAbs, rel: '.', code: 'io', message: 'the specs folder is not a folder', root: true }] };
    }
  } catch (err) {
    return { files: [], problems: [{ abs: rootAbs, rel: '.', code: 'io', message: `cannot read the specs folder: ${ioReason(err)}`, root: true }] };
  }

  const byReal = new Map<string, { file: SpecFile; linked: boolean }>();
  const folders = new Set<string>();
  const skipped: SkippedPath[] = [];
  const bi = readBerthIgnore(rootAbs);
  if (!bi.ok) problems.push({ abs: path.join(rootAbs, BERTHIGNORE), rel: BERTHIGNORE, code: 'io', message: `${BERTHIGNORE} ${bi.message}` });
  const ig = bi.ok ? bi.ignore : undefined;
  let links = false;
  const visited = new Set<string>([rootReal]);
  /** Folders to read: relative path, and real path (links resolved). */
  const pending: { rel: string; real: string }[] = [{ rel: '', real: rootReal }];
  while (pending.length > 0) {
    const dir = pending.pop() as { rel: string; real: string };
    const absDir = path.join(rootAbs, dir.rel);
    let entries: Dirent[];
    folders.add(toPosix(dir.rel));
    try {
      entries = readdirSync(absDir, { withFileTypes: true });
    } catch (err) {
      const root = dir.rel === '';
      problems.push({
        abs: absDir,
        rel: toPosix(dir.rel) || '.',
        code: 'io',
        message: root ? `cannot read the specs folder: ${ioReason(err)}` : `cannot read folder: ${ioReason(err)}`,
        ...(root ? { root } : { folder: true }),
      });
      continue;
    }
    for (const e of entries) {
      if (isIgnoredName(e.name)) continue;
      const rel = dir.rel === '' ? e.name : path.join(dir.rel, e.name);
      const abs = path.join(rootAbs, rel);
      const file: SpecFile = { abs, rel: toPosix(rel) };
      if (ig) {
        const asDir = e.isDirectory() || (e.isSymbolicLink() && ig.ignores(file.rel, true));
        if (ig.ignores(file.rel, asDir)) {
          if (asDir || SPEC_FILE.test(e.name)) skipped.push({ rel: asDir ? `${file.rel}/` : file.rel, reason: `matched by ${BERTHIGNORE}` });
          continue;
        }
      }
      if (e.isDirectory()) {
        // A real folder cannot make a loop: always walk it (links are checked against `visited`).
        const real = realOr(abs);
        visited.add(real);
        pending.push({ rel, real });
      } else if (e.isSymbolicLink()) {
        links = true;
        followLink(file, e.name, rootReal, visited, pending, byReal, problems);
      } else if (SPEC_FILE.test(e.name)) {
        if (e.isFile()) {
          const real = path.join(dir.real, e.name);
          const seen = byReal.get(real);
          if (!seen || seen.linked) byReal.set(real, { file: real === abs ? file : { ...file, real }, linked: false });
        } else {
          problems.push({ ...file, code: 'io', message: 'not a regular file' });
        }
      }
    }
  }
  const files = [...byReal.values()].map((v) => v.file).sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  problems.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  skipped.sort((a, b) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0));
  return { files, problems, folders, links, skipped, ...(ig ? { ignore: ig } : {}) };
}

function followLink(
  file: SpecFile,
  name: string,
  rootReal: string,
  visited: Set<string>,
  pending: { rel: string; real: string }[],
  byReal: Map<string, { file: SpecFile; linked: boolean }>,
  problems: WalkProblem[],
): void {
  let real: string;
  let isDir: boolean;
  let isFile: boolean;
  try {
    real = realpathSync.native(file.abs);
    const st = statSync(real);
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
      pending.push({ rel: file.rel, real });
    }
    return;
  }
  if (!SPEC_FILE.test(name)) return;
  if (!isFile) {
    problems.push({ ...file, code: 'io', message: 'not a regular file' });
  } else if (!isInside(rootReal, real)) {
    problems.push({ ...file, code: 'path-escape', message: `links outside the specs folder (to ${real}); not read` });
  } else if (!byReal.has(real)) {
    byReal.set(real, { file: { ...file, linked: true, real }, linked: true });
  }
}

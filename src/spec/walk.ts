/**
 * Finds the spec files under a specs folder: every `*.yaml` / `*.yml`, recursively, sorted by
 * relative path. Skips dot-files, dot-folders and editor leftovers; follows a linked folder only
 * when it resolves inside the specs folder (and only once); a linked spec file must resolve
 * inside the folder too. A file reached twice (through links) counts once, by the path through
 * the fewest links (whatever the order they are met in). What the specs
 * folder's `.berthignore` matches is neither read nor descended into (berthignore.ts); fixtures
 * and `fromDir` folders are left out unread when a file found before claims them (the walk goes a
 * level of folders at a time: SpecWalk, loader.ts `walkAndLoad`), else after the files are read
 * (loader.ts `dropClaimed`).
 *
 * The walk uses synchronous calls: a folder of a thousand files costs a few milliseconds this
 * way, several times less than with promises, and a regular file's real path is its folder's
 * real path and its name (no call per file).
 */
import { readdirSync, realpathSync, statSync, type Dirent } from 'node:fs';
import * as path from 'node:path';
import { BERTHIGNORE, readBerthIgnore, type BerthIgnore } from './berthignore';
import { joinName } from '../util/join-name';
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
  /** Folders left out unread (SpecWalk `prune`: claimed as fixtures), relative, forward slashes. */
  pruned?: Set<string>;
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
  const w = new SpecWalk(root);
  while (!w.done) w.step();
  return w.result();
}

/**
 * The walk, a level of folders at a time (`step`), so that a caller may leave folders out before
 * they are read (`prune`: the loader leaves out the folders the files found so far claim as
 * fixtures, loader.ts `walkAndLoad`). `findSpecFiles` runs it to its end.
 */
export class SpecWalk {
  private readonly rootAbs: string;
  private rootReal = '';
  private readonly problems: WalkProblem[] = [];
  private readonly byReal = new Map<string, Found>();
  private readonly folders = new Set<string>();
  private readonly skipped: SkippedPath[] = [];
  private readonly pruned = new Set<string>();
  private ig: BerthIgnore | undefined;
  private links = false;
  private readonly visited = new Set<string>();
  /** Folders of the next level: relative path, real path (links resolved), reached through a linked folder. */
  private pending: Pending[] = [];

  constructor(root: string) {
    this.rootAbs = path.resolve(root);
    try {
      this.rootReal = realpathSync.native(this.rootAbs);
      if (!statSync(this.rootReal).isDirectory()) {
        this.problems.push({ abs: this.rootAbs, rel: '.', code: 'io', message: 'the specs folder is not a folder', root: true });
        return;
      }
    } catch (err) {
      this.problems.push({ abs: this.rootAbs, rel: '.', code: 'io', message: `cannot read the specs folder: ${ioReason(err)}`, root: true });
      return;
    }
    const bi = readBerthIgnore(this.rootAbs);
    if (!bi.ok) this.problems.push({ abs: path.join(this.rootAbs, BERTHIGNORE), rel: BERTHIGNORE, code: 'io', message: `${BERTHIGNORE} ${bi.message}` });
    this.ig = bi.ok ? bi.ignore : undefined;
    this.visited.add(this.rootReal);
    this.pending.push({ rel: '', real: this.rootReal, via: false });
  }

  /** No folder is left to read. */
  get done(): boolean {
    return this.pending.length === 0;
  }

  /** The folders of the next level that `claimed` names (absolute path, real path → why), left out unread. */
  prune(claimed: (abs: string, real: string) => string | undefined): void {
    this.pending = this.pending.filter((d) => {
      const why = claimed(path.join(this.rootAbs, d.rel), d.real);
      if (why === undefined) return true;
      const rel = toPosix(d.rel);
      this.pruned.add(rel);
      this.skipped.push({ rel: `${rel}/`, reason: why });
      return false;
    });
  }

  /** Reads the folders of the next level; returns the spec files found in them (in no set order). */
  step(): SpecFile[] {
    const level = this.pending;
    this.pending = [];
    const found: SpecFile[] = [];
    const { rootAbs, byReal, ig } = this;
    for (const dir of level) {
      const absDir = dir.rel === '' ? rootAbs : path.join(rootAbs, dir.rel);
      let entries: Dirent[];
      this.folders.add(toPosix(dir.rel));
      try {
        entries = readdirSync(absDir, { withFileTypes: true });
      } catch (err) {
        const root = dir.rel === '';
        this.problems.push({
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
        const rel = joinName(dir.rel, e.name);
        const abs = joinName(absDir, e.name);
        const file: SpecFile = { abs, rel: toPosix(rel) };
        if (ig) {
          const asDir = e.isDirectory() || (e.isSymbolicLink() && ig.ignores(file.rel, true));
          if (ig.ignores(file.rel, asDir)) {
            if (asDir || SPEC_FILE.test(e.name)) this.skipped.push({ rel: asDir ? `${file.rel}/` : file.rel, reason: `matched by ${BERTHIGNORE}` });
            continue;
          }
        }
        if (e.isDirectory()) {
          // A real folder cannot make a loop: always walk it (links are checked against `visited`).
          const real = realOr(abs);
          this.visited.add(real);
          this.pending.push({ rel, real, via: dir.via });
        } else if (e.isSymbolicLink()) {
          this.links = true;
          const f = followLink(file, e.name, this.rootReal, this.visited, this.pending, byReal, this.problems);
          if (f) found.push(f);
        } else if (SPEC_FILE.test(e.name)) {
          if (e.isFile()) {
            const real = joinName(dir.real, e.name);
            const seen = byReal.get(real);
            const rank = dir.via ? RANK.inLinkedFolder : RANK.direct;
            if (!seen || seen.rank > rank) {
              const f = real === abs ? file : { ...file, real };
              byReal.set(real, { file: f, rank });
              found.push(f);
            }
          } else {
            this.problems.push({ ...file, code: 'io', message: 'not a regular file' });
          }
        }
      }
    }
    return found;
  }

  /** What the walk found: its files (a file reached twice, the one not through a link), sorted. */
  result(): WalkResult {
    const byRel = (a: { rel: string }, b: { rel: string }) => (a.rel < b.rel ? -1 : a.rel > b.rel ? 1 : 0);
    const files = [...this.byReal.values()].map((v) => v.file).sort(byRel);
    const problems = [...this.problems].sort(byRel);
    const skipped = [...this.skipped].sort(byRel);
    if (problems.some((p) => p.root) && this.folders.size === 0) return { files: [], problems };
    return {
      files,
      problems,
      folders: this.folders,
      links: this.links,
      skipped,
      ...(this.pruned.size ? { pruned: this.pruned } : {}),
      ...(this.ig ? { ignore: this.ig } : {}),
    };
  }
}

/** A folder of the next level. */
interface Pending {
  rel: string;
  real: string;
  /** Reached through a linked folder. */
  via: boolean;
}

/** Which of the paths to one file is kept, whatever the order they are met in: the lowest rank. */
const RANK = { direct: 0, inLinkedFolder: 1, link: 2 } as const;

interface Found {
  file: SpecFile;
  rank: number;
}

function followLink(
  file: SpecFile,
  name: string,
  rootReal: string,
  visited: Set<string>,
  pending: Pending[],
  byReal: Map<string, Found>,
  problems: WalkProblem[],
): SpecFile | undefined {
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
    return undefined;
  }
  if (isDir) {
    // Linked folders outside the specs folder are not followed; inside ones at most once.
    if (isInside(rootReal, real) && !visited.has(real)) {
      visited.add(real);
      pending.push({ rel: file.rel, real, via: true });
    }
    return undefined;
  }
  if (!SPEC_FILE.test(name)) return undefined;
  if (!isFile) {
    problems.push({ ...file, code: 'io', message: 'not a regular file' });
  } else if (!isInside(rootReal, real)) {
    problems.push({ ...file, code: 'path-escape', message: `links outside the specs folder (to ${real}); not read` });
  } else if (!byReal.has(real)) {
    const f = { ...file, linked: true, real };
    byReal.set(real, { file: f, rank: RANK.link });
    return f;
  }
  return undefined;
}

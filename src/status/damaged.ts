/**
 * Damaged state. What berth cannot use is set aside, never deleted: a file (or folder) is moved
 * into the instance's `damaged/` folder as `<its name>.<time>` (`<name>.<time>.<n>` when that is
 * taken), kept for a person to read. A damaged status record, the records folder replaced by a
 * file or a link to nothing (store.ts) and an unreadable lock file (lock.ts) all go that way,
 * each by a writer that holds the instance's locks; readers only report.
 *
 * The state folder itself, and the instance's folder in it, are not set aside: berth would have
 * to guess where its state went. One that is a file or a link to nothing is a StateFolderError
 * naming the path.
 */
import { lstatSync, promises as fs, readlinkSync, statSync } from 'node:fs';
import path from 'node:path';
import { isCode, syncDir } from './atomic-file';

/** Moves `file` into `damagedDir` as `<basename>.<ISO time with '-' for ':'>`; returns where it went. */
export async function setAside(file: string, damagedDir: string, now: number): Promise<string> {
  await fs.mkdir(damagedDir, { recursive: true });
  const stamp = new Date(now).toISOString().replace(/:/g, '-');
  const base = path.join(damagedDir, `${path.basename(file)}.${stamp}`);
  let kept = base;
  for (let i = 1; await exists(kept); i++) kept = `${base}.${i}`;
  await fs.rename(file, kept);
  await syncDir(damagedDir);
  await syncDir(path.dirname(file));
  return kept;
}

async function exists(p: string): Promise<boolean> {
  try {
    await fs.lstat(p);
    return true;
  } catch (err) {
    if (isCode(err, 'ENOENT')) return false;
    throw err;
  }
}

/**
 * What keeps `dir` from being used as a folder, in words: undefined when it is a folder (or a
 * link to one) or does not exist at all.
 */
export function folderProblem(dir: string): string | undefined {
  let st;
  try {
    st = lstatSync(dir);
  } catch (err) {
    if (isCode(err, 'ENOENT')) return undefined;
    return `cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
  if (st.isDirectory()) return undefined;
  if (!st.isSymbolicLink()) return st.isFile() ? 'a file, not a folder' : 'not a folder';
  try {
    if (statSync(dir).isDirectory()) return undefined;
    return 'a link to something that is not a folder';
  } catch (err) {
    if (isCode(err, 'ENOENT')) return `a link to nothing (${safeTarget(dir)})`;
    if (isCode(err, 'ELOOP')) return 'a link that loops';
    return `a link that cannot be followed (${(err as NodeJS.ErrnoException).code ?? 'error'})`;
  }
}

/** A link's target for a message: control characters replaced, cut when long. */
function safeTarget(link: string): string {
  try {
    // eslint-disable-next-line no-control-regex -- exactly those characters are replaced
    const t = readlinkSync(link).replace(/[\u0000-\u001f\u007f-\u009f]/g, '\ufffd');
    return t.length > 200 ? `${t.slice(0, 200)}…` : t;
  } catch {
    return '?';
  }
}

/** The state folder (or the instance's folder in it) is not a folder: nothing can be read or written there. */
export class StateFolderError extends Error {
  readonly code = 'StateFolderUnusable';
  constructor(
    readonly path: string,
    readonly problem: string,
    readonly instanceFolder: boolean,
  ) {
    super(
      instanceFolder
        ? `${path}: the folder of this instance's state is ${problem}; move it out of the way (berth makes a new one)`
        : `${path}: the state folder is ${problem}; move it out of the way (berth makes a new one), or name another with --state`,
    );
    this.name = 'StateFolderError';
  }
}

/** Throws StateFolderError when `stateDir`, or the instance's folder in it, exists but is no folder. */
export function checkStateFolder(stateDir: string, instance?: string): void {
  const problem = folderProblem(stateDir);
  if (problem) throw new StateFolderError(stateDir, problem, false);
  if (instance === undefined) return;
  const own = path.join(stateDir, instance);
  const ownProblem = folderProblem(own);
  if (ownProblem) throw new StateFolderError(own, ownProblem, true);
}

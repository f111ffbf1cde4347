/**
 * The fixture's `.gitignore` files, read as git reads them, for the workspace export (issue 56: an
 * export kept `.pytest_cache`): what they match is left out (`excluded`), as `workspace.exclude`
 * is. Each file's patterns apply below its own folder, relative to it, with git's rules (the
 * `ignore` package: negation, folder-only `dir/`, anchored `/x`, `**`); a deeper file's decision
 * wins over a shallower one's, and nothing below a folder left out comes back (the export leaves a
 * folder out whole, as git does not look into an ignored one).
 *
 * Read from the fixture as copied in (its record, each file's bytes checked against the sha256
 * recorded then), never from the workspace: an attempt cannot hide its changes from the export,
 * nor from its grader, by writing a `.gitignore`. `workspace.gitignore: false` reads none.
 */
import ignore, { type Ignore } from 'ignore';
import { posix } from 'node:path';

export const GITIGNORE = '.gitignore';

/** A `.gitignore` of the fixture: its folder (relative to workingDir, '' at the top) and its text. */
export interface GitIgnoreFile {
  dir: string;
  text: string;
}

/** Whether `path` (relative to workingDir; `dir`: a folder) is ignored by `files`; undefined when there are none. */
export function gitIgnorer(files: readonly GitIgnoreFile[]): ((path: string, dir: boolean) => boolean) | undefined {
  const byDir = new Map<string, Ignore>();
  for (const f of files) {
    const ig = byDir.get(f.dir) ?? ignore();
    byDir.set(f.dir, ig.add(f.text));
  }
  if (byDir.size === 0) return undefined;
  return (path, dir) => {
    const parts = path.split('/');
    // the deepest .gitignore above the path first: its decision (ignored, or re-included by `!`) stands
    for (let i = parts.length - 1; i >= 0; i--) {
      const ig = byDir.get(parts.slice(0, i).join('/'));
      if (!ig) continue;
      const r = ig.test(parts.slice(i).join('/') + (dir ? '/' : ''));
      if (r.ignored) return true;
      if (r.unignored) return false;
    }
    return false;
  };
}

/** The folder a `.gitignore` entry of the fixture governs ('' at the top), or undefined when the entry is not one. */
export function gitIgnoreDir(entryPath: string): string | undefined {
  if (posix.basename(entryPath) !== GITIGNORE) return undefined;
  const d = posix.dirname(entryPath);
  return d === '.' ? '' : d;
}

/**
 * `.berthignore` in the specs folder: paths the spec walk never reads, in gitignore syntax (as
 * `.dockerignore`), matched against paths relative to the specs folder. Read with the `ignore`
 * package (the matcher eslint and many others use: gitignore's rules, negation and folder
 * patterns included, no file system access of its own).
 *
 * The file is read as a spec file is (no link followed, bounded, UTF-8); one that cannot be read
 * is a problem of the walk (the folder's specs are then not all known, as with an unreadable
 * folder), never silently nothing.
 */
import ignore, { type Ignore } from 'ignore';
import { lstatSync } from 'node:fs';
import * as path from 'node:path';
import { ioReason, readSpecFileSync } from './read-spec-file';

export const BERTHIGNORE = '.berthignore';
/** A `.berthignore` is a short list of patterns: larger is a mistake (a file renamed onto it). */
const MAX_BYTES = 256 * 1024;

export interface BerthIgnore {
  /** `rel`: relative to the specs folder, forward slashes; `dir`: it is a folder. */
  ignores(rel: string, dir: boolean): boolean;
}

export type BerthIgnoreRead = { ok: true; ignore?: BerthIgnore } | { ok: false; message: string };

/** The `.berthignore` of the specs folder `root` (absolute): none when there is no such file. */
export function readBerthIgnore(root: string): BerthIgnoreRead {
  const abs = path.join(root, BERTHIGNORE);
  try {
    if (lstatSync(abs).isSymbolicLink()) return { ok: false, message: 'is a link; berth never follows one here' };
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { ok: true };
    return { ok: false, message: `cannot read: ${ioReason(err)}` };
  }
  const read = readSpecFileSync(abs, MAX_BYTES, true);
  if (!read.ok) return { ok: false, message: read.message };
  const ig: Ignore = ignore().add(read.text);
  return {
    ok: true,
    ignore: {
      ignores: (rel, dir) => ig.ignores(dir ? `${rel}/` : rel),
    },
  };
}

/**
 * Spec files that have not changed need not be parsed again: the outcome of a file is kept
 * while its stat (inode, size, mtime, ctime) holds. Only outcomes that depend on nothing but
 * the file are kept: no errors, no fixture (its content is in the hash) and no secret read
 * from a file. A long-running controller and repeated passes reload a big folder for the cost
 * of one stat per file.
 */
import { promises as fsp } from 'node:fs';
import { loadFile, type FileOutcome } from './load-file';
import type { Roots } from './path-checks';
import type { SpecFile } from './walk';

const MAX_ENTRIES = 20_000;
const cache = new Map<string, { sig: string; outcome: FileOutcome }>();

function selfContained(o: FileOutcome): boolean {
  return (
    !o.unreadable &&
    o.errors.length === 0 &&
    o.docs.every((d) => d.errors.length === 0 && !!d.loaded && d.loaded.spec.fixture === null && d.loaded.spec.secrets.every((s) => s.fromFile === undefined))
  );
}

export async function loadFileCached(f: SpecFile, file: string, roots: Roots): Promise<FileOutcome> {
  let sig: string;
  try {
    const st = await fsp.stat(f.abs, { bigint: true });
    sig = `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
  } catch {
    return loadFile(f, file, roots);
  }
  const key = [f.abs, f.rel, file, roots.specsRoot, roots.resultsRoot].join('\0');
  const hit = cache.get(key);
  if (hit && hit.sig === sig) return hit.outcome;
  const outcome = await loadFile(f, file, roots);
  if (selfContained(outcome)) {
    if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
    cache.set(key, { sig, outcome });
  } else cache.delete(key);
  return outcome;
}

/** Forget every kept outcome (tests). */
export function clearSpecFileCache(): void {
  cache.clear();
}

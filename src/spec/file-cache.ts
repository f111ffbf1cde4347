/**
 * Spec files that have not changed need not be parsed again: the outcome of a file is kept
 * while its stat (inode, size, mtime, ctime) holds. Only outcomes that depend on nothing but
 * the file are kept: no errors, no fixture (its content is in the hash) and no secret read
 * from a file; an AttemptSet only when no axis reads a folder (`fromDir`) and its children
 * qualify. A long-running controller and repeated passes reload a big folder for the cost of
 * one stat per file.
 *
 * An outcome whose only other input is its attempts' fixtures and build contexts (`fixtureBound`:
 * a fleet's specs) is kept too, with each fixture as written, its real path and its digest: a hit holds only
 * while each still resolves to the same path with the same digest, checked at every load (each
 * fixture walked once per load, `Roots.fixtureScans`), so an edit to a fixture is seen as a
 * full parse would see it, without parsing the file again. It never goes to the disk cache.
 *
 * A foreign file's outcome (YAML that does not parse, or not one Attempt or AttemptSet in it:
 * another tool's YAML inside a repository used as a fixture) depends on its bytes alone, errors
 * and all: it is kept in memory too, so a fixture's `mkdocs.yml` is parsed once per process.
 */
import { statSync, type BigIntStats } from 'node:fs';
/* eslint-disable @typescript-eslint/no-require-imports */
import { DEFAULTS } from '../constants';
import type * as LoadFile from './load-file';
import type { FileOutcome } from './load-file';
import type * as PathChecks from './path-checks';
import type * as BuildContext from './build-context';
import type { Roots } from './path-checks';
import { sha256Hex } from './hash';
import { readBoundedSync } from './read-spec-file';
import type { LoadedSpec } from './types';
import type { SpecFile } from './walk';

const MAX_ENTRIES = 20_000;
const cache = new Map<string, { sig: string; outcome: FileOutcome }>();

const fromFileOnly = (l: LoadedSpec | undefined): boolean =>
  !!l &&
  l.spec.fixture === null &&
  (l.spec.grade?.fixture ?? null) === null &&
  l.spec.secrets.every((s) => s.fromFile === undefined) &&
  // a build's context is another input (its digest is in the hash)
  l.spec.build === undefined &&
  l.spec.grade?.build === undefined;

export function selfContained(o: FileOutcome): boolean {
  return (
    !o.unreadable &&
    o.errors.length === 0 &&
    o.docs.every((d) => {
      if (d.errors.length > 0) return false;
      // An AttemptSet: valid, no axis from a folder, every child loaded and self-contained.
      if (d.set) return d.set.loaded.valid && !d.set.readsFolders && d.set.children.every((c) => c.errors.length === 0 && fromFileOnly(c.loaded));
      return fromFileOnly(d.loaded);
    })
  );
}

/** Valid Attempts only (no set, no secret file), whose fixtures are all recorded: kept while the fixtures hold. */
export function fixtureBound(o: FileOutcome): boolean {
  if (o.unreadable || o.errors.length > 0 || !o.fixtures?.length) return false;
  let withFixture = 0;
  for (const d of o.docs) {
    if (d.errors.length > 0 || d.set || !d.loaded) return false;
    if (!d.loaded.spec.secrets.every((s) => s.fromFile === undefined)) return false;
    // a grader's fixture (or build context) is another input the kept outcome would not see change
    if ((d.loaded.spec.grade?.fixture ?? null) !== null || d.loaded.spec.grade?.build) return false;
    withFixture += d.loaded.spec.fixtureLayers.length + (d.loaded.spec.build ? 1 : 0);
  }
  return withFixture === o.fixtures.length;
}

/** A kept fixture-bound outcome, if every fixture still resolves to the same real path and digest. */
async function fixturesHold(o: FileOutcome, roots: Roots): Promise<FileOutcome | undefined> {
  const { checkFixture } = require('./path-checks') as typeof PathChecks;
  for (const x of o.fixtures ?? []) {
    if (x.build) {
      // a build context: checked again as written (its digest from the digest cache), the same context and build hash
      const { checkBuild } = require('./build-context') as typeof BuildContext;
      const r = await checkBuild(x.specDir, x.build.raw, x.build.network, roots);
      if (!r.ok || r.value.context !== x.path || r.value.hash !== x.digest) return undefined;
      continue;
    }
    const r = await checkFixture(x.specDir, x.written, roots);
    if (!r.ok || r.value.path !== x.path || r.value.digest !== x.digest) return undefined;
  }
  return o;
}

/** A file's identity and version: what must hold for its kept outcome to hold (device, inode, size, mtime, ctime). */
export function signature(abs: string): string | undefined {
  try {
    return signatureOf(statSync(abs, { bigint: true }));
  } catch {
    return undefined;
  }
}

function signatureOf(st: BigIntStats): string {
  return `${st.dev}:${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
}

/**
 * A file's signature and its bytes from one open: the signature from the open file's own stat,
 * taken before its bytes are read (as `signature` then a read would take it), for one path
 * lookup and one stat instead of two of each (the disk cache checks a thousand files this way on
 * every cold pass). The loader's own bounded read (`readBoundedSync`): undefined for what is not
 * a regular file, is larger than a spec file may be, or cannot be read.
 */
export function readSigned(abs: string): { sig: string; bytes: Buffer } | undefined {
  try {
    const r = readBoundedSync(abs, DEFAULTS.maxSpecFileBytes);
    return r.kind === 'read' ? { sig: signatureOf(r.stat), bytes: r.bytes } : undefined;
  } catch {
    return undefined;
  }
}

export function keyOf(f: SpecFile, file: string, roots: Roots): string {
  return [f.abs, f.rel, file, roots.specsRoot, roots.resultsRoot, roots.fromGit ? 'git' : '', keptKey(roots.keptNames)].join('\0');
}

/** The kept names as part of a cache key ('' for none: the key of every load without them is what it was). */
const keptKeys = new WeakMap<ReadonlySet<string>, string>();
function keptKey(kept: ReadonlySet<string> | undefined): string {
  if (!kept || kept.size === 0) return '';
  let k = keptKeys.get(kept);
  if (k === undefined) keptKeys.set(kept, (k = sha256Hex([...kept].sort().join('\n'))));
  return k;
}

/**
 * The kept outcome of `f` if the file has not changed since (one synchronous stat), else
 * undefined; a fixture-bound one once its fixtures are checked again (a promise).
 */
export function cachedOutcome(f: SpecFile, file: string, roots: Roots): FileOutcome | undefined | Promise<FileOutcome | undefined> {
  const hit = cache.get(keyOf(f, file, roots));
  if (!hit || hit.sig !== signature(f.abs)) return undefined;
  return hit.outcome.fixtures?.length ? fixturesHold(hit.outcome, roots) : hit.outcome;
}

let filesParsed = false;

/**
 * Whether this process parsed a spec file (no cache had its outcome): the launcher's code cache
 * (bin/berth.js runBundle) is not made from such a run, whose parser's compiled code the runs after
 * it, answered from the caches, would read back at every start without running it.
 */
export function specFilesParsed(): boolean {
  return filesParsed;
}

/**
 * Loads `f` (no look at the cache first: the caller found nothing kept) and keeps the outcome when
 * it may; `kept` hears of every outcome kept, with its key and the signature taken before the read
 * (at `atMs`, Date.now() just before it).
 */
export async function loadAndKeep(
  f: SpecFile,
  file: string,
  roots: Roots,
  kept?: (key: string, sig: string, outcome: FileOutcome, atMs: number) => void,
): Promise<FileOutcome> {
  // Lazy: yaml, the schema's validator and the checks load only when a file must be parsed (a
  // pass whose every file comes from a cache never loads them).
  const { loadFile } = require('./load-file') as typeof LoadFile;
  filesParsed = true;
  const atMs = Date.now();
  const sig = signature(f.abs);
  if (sig === undefined) return loadFile(f, file, roots);
  const key = keyOf(f, file, roots);
  const outcome = await loadFile(f, file, roots);
  if (selfContained(outcome)) {
    keep(key, sig, outcome);
    kept?.(key, sig, outcome, atMs);
  } else if (outcome.foreign) {
    keep(key, sig, outcome);
    kept?.(key, sig, outcome, atMs);
  } else if (fixtureBound(outcome)) keep(key, sig, outcome);
  else cache.delete(key);
  return outcome;
}

/** Keeps `outcome` (self-contained or fixture-bound) for the file whose signature is `sig`. */
export function keep(key: string, sig: string, outcome: FileOutcome): void {
  if (cache.size >= MAX_ENTRIES && !cache.has(key)) cache.delete(cache.keys().next().value as string);
  cache.set(key, { sig, outcome });
}

/** Forget every kept outcome (tests). */
export function clearSpecFileCache(): void {
  cache.clear();
}

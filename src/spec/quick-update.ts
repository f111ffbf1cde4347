/**
 * A load made from the one before when a few plain files changed (issue 55: a file dropped into a
 * folder of 100,000 specs): what `combine` (loader.ts) would make of the whole folder, without its
 * walk over every outcome (the names' index, the results folders' overlap check, the claims).
 *
 * It answers only where the answer is plainly the same as combine's, and says "don't know"
 * (undefined: the caller combines everything) otherwise. It answers when:
 * - the load before was clean: no error, no protected name, no unreadable file or folder, no
 *   claim (fixture, fromDir), and every spec's results folder a name right under the results
 *   root's real path, equal to its `results` as written (the default: the attempt's name);
 * - every file changed, as it was and as it is now, holds only Attempts that loaded, with no error
 *   and no claim (no AttemptSet: a set's children are placed apart, and its file is rare to change);
 * - no name a changed file declares now is declared elsewhere, and no results folder it asks for
 *   is held by another spec (or lies elsewhere than right under the results root).
 * Then combine finds no duplicate and no overlap, and its specs are the files' Attempts in file
 * order, then the sets' children as before: made here the same way, in one pass over the kept
 * outcomes (no name looked up, no path made).
 *
 * The results folders of the specs that did not change are not looked at again (the load before
 * placed them); a link made since inside the results root is seen by the next load of the whole
 * folder, as it is seen now only when some file changes.
 */
import type { FileOutcome } from './load-file';
import type { LoadReport } from './loader';
import { resultsFolders } from './results-overlap';
import type { RealCache } from './path-util';
import type { LoadedSpec } from './types';
import { deriveSpecIndex, specIndex } from './spec-index';

/** What a quick update needs of the load before. */
export interface QuickState {
  report: LoadReport;
  /** The results root's real path when the load was made. */
  rootReal: string;
  /** Each spec's results folder (a name under the results root's real path) → the spec's name. */
  folders: Map<string, string>;
}

/** One file changed: its outcome before (none: added) and now (none: removed). */
export interface FileChange {
  before?: FileOutcome;
  after?: FileOutcome;
}

/** An outcome of Attempts only, every one loaded, no error, no claim. */
function plain(o: FileOutcome | undefined): boolean {
  if (o === undefined) return true;
  if (o.errors.length > 0 || o.unreadable || o.foreign === true || (o.claims?.length ?? 0) > 0) return false;
  return o.docs.every((d) => d.set === undefined && d.errors.length === 0 && d.loaded !== undefined && d.name === d.loaded.spec.name);
}

function clean(r: LoadReport): boolean {
  return (
    r.rootError === undefined &&
    r.errors.length === 0 &&
    r.protectedNames.size === 0 &&
    r.unreadableFiles.size === 0 &&
    r.unreadableFolders.size === 0 &&
    (r.setProtectedFiles?.size ?? 0) === 0 &&
    r.revision === undefined
  );
}

/** The state for quick updates after `report` (a load of the whole folder, or a quick one), or undefined when none can follow it. */
export function quickState(report: LoadReport, resultsRoot: string, cache: RealCache): QuickState | undefined {
  if (!clean(report)) return undefined;
  const f = resultsFolders(report.specs, resultsRoot, cache);
  const folders = new Map<string, string>();
  for (let i = 0; i < report.specs.length; i++) {
    const s = report.specs[i] as LoadedSpec;
    if (f.seg[i] !== s.spec.results || folders.has(s.spec.results)) return undefined;
    folders.set(s.spec.results, s.spec.name);
  }
  return { report, rootReal: f.rootReal, folders };
}

/**
 * The load after `changes`, given the kept outcomes now (`outcomes`, every file's, in file order)
 * and each file as users see it (`display`, the same order); undefined: combine everything. On an
 * answer, `q` is the state for the next update (changed in place).
 */
export function quickUpdate(
  q: QuickState,
  changes: readonly FileChange[],
  outcomes: () => Iterable<FileOutcome>,
  display: () => string[],
  resultsRoot: string,
  cache: RealCache,
): LoadReport | undefined {
  const prev = q.report;
  if (!changes.every((c) => plain(c.before) && plain(c.after))) return undefined;
  const known = specIndex(prev.specs).byName;
  const removed = new Set<string>();
  let docsBefore = 0;
  let docsAfter = 0;
  for (const c of changes) {
    docsBefore += c.before?.docs.length ?? 0;
    for (const d of c.before?.docs ?? []) removed.add(d.name as string);
  }
  const added: LoadedSpec[] = [];
  const addedNames = new Set<string>();
  for (const c of changes) {
    docsAfter += c.after?.docs.length ?? 0;
    for (const d of c.after?.docs ?? []) {
      const l = d.loaded as LoadedSpec;
      const n = l.spec.name;
      if (addedNames.has(n) || (known.has(n) && !removed.has(n))) return undefined;
      addedNames.add(n);
      added.push(l);
    }
  }
  const f = resultsFolders(added, resultsRoot, cache);
  if (f.rootReal !== q.rootReal) return undefined;
  const taken = new Set<string>();
  for (let i = 0; i < added.length; i++) {
    const results = (added[i] as LoadedSpec).spec.results;
    if (f.seg[i] !== results || taken.has(results)) return undefined;
    const holder = q.folders.get(results);
    if (holder !== undefined && !removed.has(holder)) return undefined;
    taken.add(results);
  }
  // As combine orders them: the files' Attempts in file order, then the sets' children.
  const specs: LoadedSpec[] = [];
  for (const o of outcomes()) for (const d of o.docs) if (d.set === undefined && d.loaded) specs.push(d.loaded);
  for (const s of prev.specs) if (s.set !== undefined) specs.push(s);
  if (specs.length !== prev.specs.length - removed.size + added.length) return undefined;
  for (const n of removed) {
    const s = known.get(n);
    if (s && q.folders.get(s.spec.results) === n) q.folders.delete(s.spec.results);
  }
  for (const s of added) q.folders.set(s.spec.results, s.spec.name);
  deriveSpecIndex(specs, prev.specs, removed, added);
  const report: LoadReport = {
    ...prev,
    specs,
    errors: [],
    protectedNames: new Set(),
    unreadableFiles: new Set(),
    unreadableFolders: new Set(),
    setProtectedFiles: new Set(),
    files: display(),
    documents: prev.documents - docsBefore + docsAfter,
  };
  q.report = report;
  return report;
}

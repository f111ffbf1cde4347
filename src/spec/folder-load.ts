/**
 * A specs folder kept loaded while it changes (the controller's): after a change only the files
 * the watcher named are read again, not the whole folder. Every other file keeps its outcome,
 * and the checks across files (duplicate names, AttemptSets, overlapping results folders) run
 * over all the kept outcomes, as a full load runs them (loader.ts `combine`): a change to one
 * file still makes another's attempt invalid, or valid again. A file whose outcome depends on
 * more than its own bytes (a fixture, a secret from a file, errors: file-cache.ts
 * `selfContained`) is read again at every update, as a full load reads it again.
 *
 * A change it cannot place makes it load everything again (walk and all): the first load, one
 * after a failed load, a path outside the folder, a folder that appeared or went, a link or a
 * file that is not a regular file, and every change while the folder holds a link anywhere or
 * its walk found a problem.
 */
import { lstatSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import type { FileOutcome } from './load-file';
import { selfContained } from './file-cache';
import { displayPath } from './path-util';
import { combine, guard, loadContext, outcomesOf, rootErrorLoad, rootsOf, walkAndLoad, type LoadReport } from './loader';
import { BERTHIGNORE, type BerthIgnore } from './berthignore';
import { isIgnoredName, isSpecFileName, type SkippedPath, type SpecFile } from './walk';
import { quickState, quickUpdate, type FileChange, type QuickState } from './quick-update';

interface Kept {
  root: string;
  /** Sorted by `rel`, as the walk sorts them. */
  files: SpecFile[];
  outcomes: Map<string, FileOutcome>;
  /** Files read again at every update (their outcome is not self-contained). */
  volatile: Set<string>;
  folders: Set<string>;
  /** Folders the walk left out unread (claimed as fixtures): no change below them is a spec's. */
  pruned: Set<string>;
  /** Each file as users see it. */
  display: Map<string, string>;
  /** The last load's names that are not loaded (invalid, duplicates, overlaps). */
  protectedNames: ReadonlySet<string>;
  /** What the specs folder's `.berthignore` left out, and its patterns. */
  skipped: SkippedPath[];
  ignore?: BerthIgnore;
  /** Every fixture and fromDir the files claim (loader.ts `dropClaimed`), sorted: when they change, the folder is walked again. */
  claims: string;
}

export class FolderLoad {
  private kept: Kept | undefined;
  /** What a quick update (quick-update.ts) needs of the last load; undefined: the next update combines everything. */
  private quick: QuickState | undefined;
  /** Updates answered by quick-update.ts, and those that combined every file (tests, debugging). */
  readonly updates = { quick: 0, combined: 0 };
  /** Full loads so far (walks of the folder). */
  walks = 0;
  /**
   * After an update: the only names whose entry (loaded and its hash, or not loaded and its
   * errors) can differ from the load before: those declared in the files read again, before and
   * after, and those not loaded in either (a clash's other side, named in its errors). Undefined
   * after a full load.
   */
  touched: ReadonlySet<string> | undefined;

  constructor(
    private readonly opts: {
      specsDir: string;
      resultsRoot: string;
      /** Read at each load: AttemptSet children's names of the old form the instance has records under (loader.ts LoadOptions.keptNames). */
      keptNames?: () => ReadonlySet<string>;
    },
  ) {}

  /** `abs` lies in a fixture or a fromDir folder of the last load: a folder made there changes no spec file. */
  claims(abs: string): boolean {
    return this.kept !== undefined && claimedBy(this.kept.claims, abs);
  }

  /** Walks the folder and loads every file (unchanged ones from the caches; `cacheIn`: also the one on disk). */
  async full(cacheIn?: string): Promise<LoadReport> {
    this.kept = undefined;
    this.quick = undefined;
    this.touched = undefined;
    this.walks++;
    return guard(async () => {
      const root = path.resolve(this.opts.specsDir);
      const ctx = await loadContext(this.opts.resultsRoot, this.opts.keptNames?.());
      const { walk, outcomes } = await walkAndLoad(root, await rootsOf(root, ctx), cacheIn);
      const report = await combine([{ root, ...walk, outcomes }], ctx);
      if (walk.problems.length === 0 && walk.links === false && walk.folders) {
        const kept: Kept = {
          root,
          files: walk.files,
          outcomes: new Map(),
          volatile: new Set(),
          folders: walk.folders,
          pruned: walk.pruned ?? new Set(),
          display: new Map(),
          protectedNames: report.protectedNames,
          skipped: walk.skipped ?? [],
          ...(walk.ignore ? { ignore: walk.ignore } : {}),
          claims: claimsOf(outcomes),
        };
        walk.files.forEach((f, i) => keepOutcome(kept, f, outcomes[i] as FileOutcome));
        this.kept = kept;
        this.quick = kept.claims === '' ? quickState(report, this.opts.resultsRoot, ctx.realCache) : undefined;
      }
      return report;
    });
  }

  /** Loads again after a change to `paths` (absolute; added, changed or removed files). */
  async update(paths: Iterable<string>): Promise<LoadReport> {
    const kept = this.kept;
    if (!kept) return this.full();
    const touched = placeChanges(kept, paths);
    if (touched === 'whole') return this.full();
    // Until this update has succeeded, a later one cannot trust what is kept.
    this.kept = undefined;
    this.touched = undefined;
    const quick = this.quick;
    this.quick = undefined;
    const names = new Set<string>(kept.protectedNames);
    const changes: FileChange[] = [];
    let quickAnswer = false;
    const report = await guardOr(async () => {
      for (const [rel, f] of touched) {
        const at = indexOf(kept.files, rel);
        const there = at < kept.files.length && (kept.files[at] as SpecFile).rel === rel;
        if (f === null) {
          if (there) kept.files.splice(at, 1);
          const before = kept.outcomes.get(rel);
          changes.push(before ? { before } : {});
          declaredNames(before, names);
          kept.outcomes.delete(rel);
          kept.volatile.delete(rel);
          kept.display.delete(rel);
        } else if (!there) kept.files.splice(at, 0, f);
      }
      // The volatile ones, and those named, in file order.
      const again =
        kept.volatile.size === 0 ? [...touched.values()].filter((f) => f !== null) : kept.files.filter((f) => touched.get(f.rel) || kept.volatile.has(f.rel));
      const ctx = await loadContext(this.opts.resultsRoot, this.opts.keptNames?.());
      const roots = await rootsOf(kept.root, ctx);
      const outcomes = await outcomesOf(again, roots);
      again.forEach((f, i) => {
        const before = kept.outcomes.get(f.rel);
        changes.push({ ...(before ? { before } : {}), after: outcomes[i] as FileOutcome });
        declaredNames(before, names);
        declaredNames(outcomes[i], names);
        keepOutcome(kept, f, outcomes[i] as FileOutcome);
      });
      const display = () => kept.files.map((f) => kept.display.get(f.rel) as string);
      // A few plain files among many: the load made from the one before (quick-update.ts).
      const noClaims = kept.claims === '' && changes.every((c) => !c.before?.claims?.length && !c.after?.claims?.length);
      if (quick && noClaims && kept.volatile.size === 0) {
        const outcomesNow = () => kept.files.map((f) => kept.outcomes.get(f.rel) as FileOutcome);
        const r = quickUpdate(quick, changes, outcomesNow, display, this.opts.resultsRoot, ctx.realCache);
        if (r) {
          quickAnswer = true;
          return r;
        }
      }
      const all = kept.files.map((f) => kept.outcomes.get(f.rel) as FileOutcome);
      // Other fixtures or fromDirs: other files are specs, or are not (and files under a folder
      // gone from the claims were never watched as specs): the folder is walked again.
      if (claimsOf(all) !== kept.claims) return undefined;
      const combined = await combine([{ root: kept.root, files: kept.files, problems: [], skipped: kept.skipped, outcomes: all, display: display() }], ctx);
      this.quick = kept.claims === '' && !combined.rootError ? quickState(combined, this.opts.resultsRoot, ctx.realCache) : undefined;
      return combined;
    });
    if (report === undefined) return this.full();
    if (quickAnswer) {
      this.quick = quick;
      this.updates.quick++;
    } else this.updates.combined++;
    if (!report.rootError) {
      for (const n of report.protectedNames) names.add(n);
      kept.protectedNames = report.protectedNames;
      this.kept = kept;
      this.touched = names;
    } else this.quick = undefined;
    return report;
  }
}

/** A load, or undefined when only a walk can tell; a throw is a root error, as `guard` makes it. */
async function guardOr(run: () => Promise<LoadReport | undefined>): Promise<LoadReport | undefined> {
  let walk = false;
  const report = await guard(async () => {
    const r = await run();
    if (r) return r;
    walk = true;
    return rootErrorLoad('', 'walk again');
  });
  return walk ? undefined : report;
}

/** The claims of all outcomes, as one comparable string. */
function claimsOf(outcomes: readonly (FileOutcome | undefined)[]): string {
  const all = new Set<string>();
  for (const o of outcomes) for (const c of o?.claims ?? []) all.add(c);
  return [...all].sort().join('\0');
}

/** Whether `abs` lies inside a folder the last load knows as a fixture or a fromDir (changes there are no spec's). */
export function claimedBy(claims: string, abs: string): boolean {
  if (claims === '') return false;
  for (const c of claims.split('\0')) if (abs.startsWith(c + path.sep)) return true;
  return false;
}

function keepOutcome(kept: Kept, f: SpecFile, o: FileOutcome): void {
  kept.outcomes.set(f.rel, o);
  if (!kept.display.has(f.rel)) kept.display.set(f.rel, displayPath(f.abs));
  if (selfContained(o) || o.foreign) kept.volatile.delete(f.rel);
  else kept.volatile.add(f.rel);
}

/** Adds the names `o` declares (attempts, sets, a set's children) to `into`. */
function declaredNames(o: FileOutcome | undefined, into: Set<string>): void {
  for (const d of o?.docs ?? []) {
    if (d.name !== undefined) into.add(d.name);
    for (const c of d.set?.children ?? []) into.add(c.name);
  }
}

/** `.berthignore` leaves out the path `segs` (a folder on its way, or the path as a file or a folder). */
function ignoredBy(ig: BerthIgnore, segs: string[]): boolean {
  for (let i = 1; i < segs.length; i++) if (ig.ignores(segs.slice(0, i).join('/'), true)) return true;
  const rel = segs.join('/');
  return ig.ignores(rel, false) || ig.ignores(rel, true);
}

/** Where `rel` is or would go in `files` (sorted by rel). */
function indexOf(files: SpecFile[], rel: string): number {
  let lo = 0;
  let hi = files.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((files[mid] as SpecFile).rel < rel) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * The spec files `paths` change, by relative path: the file as the walk would find it now, or
 * null when it is gone. 'whole': a change only a walk can place. Paths the walk never reads
 * (ignored names, not spec files) change no file.
 */
function placeChanges(kept: Kept, paths: Iterable<string>): Map<string, SpecFile | null> | 'whole' {
  const out = new Map<string, SpecFile | null>();
  for (const p of paths) {
    const rel = path.relative(kept.root, p);
    if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return 'whole';
    // Other patterns: other files are specs.
    if (rel === BERTHIGNORE) return 'whole';
    const segs = rel.split(path.sep);
    if (segs.some(isIgnoredName)) continue;
    const relPosix = segs.join('/');
    if (kept.ignore && ignoredBy(kept.ignore, segs)) continue;
    // below a folder left out as a fixture: no spec (the load that left it out reads it again if the claim goes)
    if (kept.pruned.size > 0 && segs.some((_, i) => kept.pruned.has(segs.slice(0, i + 1).join('/')))) continue;
    let st: Stats | undefined;
    try {
      st = lstatSync(path.join(kept.root, rel));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return 'whole';
    }
    if (!st) {
      if (kept.folders.has(relPosix)) return 'whole';
      if (kept.outcomes.has(relPosix)) out.set(relPosix, null);
      continue;
    }
    if (st.isSymbolicLink()) return 'whole';
    // A folder made inside a fixture holds no spec: known from now on without a walk (its YAML,
    // if any, is read as any file is, and left out as the walk would leave it out).
    const inClaim = claimedBy(kept.claims, p);
    if (st.isDirectory()) {
      if (kept.folders.has(relPosix)) continue;
      if (!inClaim) return 'whole';
      for (let i = 1; i <= segs.length; i++) kept.folders.add(segs.slice(0, i).join('/'));
      continue;
    }
    if (kept.folders.has(relPosix)) return 'whole';
    if (!isSpecFileName(segs[segs.length - 1] as string)) continue;
    if (inClaim && st.isFile()) for (let i = 1; i < segs.length; i++) kept.folders.add(segs.slice(0, i).join('/'));
    if (!st.isFile() || !kept.folders.has(segs.slice(0, -1).join('/'))) return 'whole';
    out.set(relPosix, { abs: path.join(kept.root, rel), rel: relPosix });
  }
  return out;
}

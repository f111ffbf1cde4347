/**
 * Loading specs: the entry point for every command. `loadSpecs` reads a specs folder;
 * `loadPaths` reads files and folders named on the command line (a folder is its own specs
 * folder; a single file's specs folder is the folder it is in).
 *
 * Every file is loaded on its own, so one bad file never hides another's errors or stops the
 * others from loading. A name declared more than once is an error at every place and none of
 * its declarations load. Names of documents that did not load go into `protectedNames`, files
 * that could not be read into `unreadableFiles`: what already runs under them is left alone.
 * An AttemptSet declares its children (check-set.ts), each like an Attempt; a set that is
 * invalid as a whole protects the names it would give them (or its file, when it cannot name
 * them), and two sets with one name are errors at both. Two attempts whose results folders
 * overlap are errors at both (results-overlap.ts).
 * Never throws: every problem is a SpecError.
 */
import { lstatSync, realpathSync, statSync, type Stats } from 'node:fs';
import * as path from 'node:path';
import { mapChunked, runBounded } from '../util/pool';
import type { DocOutcome } from './check-document';
import type { FileOutcome } from './load-file';
import { diskCachePath, DiskSpecCache } from './disk-cache';
import { cachedOutcome, keep, keyOf, loadAndKeep } from './file-cache';
import type { Roots } from './path-checks';
import { displayPath, isInside, RealCache, realpathLoose, toPosix } from './path-util';
import { ioReason } from './read-spec-file';
import { checkResultsOverlap } from './results-overlap';
import type { LoadedSet, LoadedSpec, LoadResult, SourcePos, SpecError } from './types';
import { SpecWalk, type SkippedPath, type SpecFile, type WalkProblem, type WalkResult } from './walk';

/** A LoadResult plus counts for reports (`berth validate`). */
export interface LoadReport extends LoadResult {
  /** Spec files looked at, as users see them. */
  files: string[];
  /** Non-empty documents found in readable files. */
  documents: number;
  /**
   * Of `unreadableFiles`, those that are there only because an AttemptSet in them cannot name its
   * children (its file is protected as an unreadable one is): readable, for reports.
   */
  setProtectedFiles?: Set<string>;
  /** Paths the walk found but did not load as specs, and why (`validate -v`): `.berthignore`, or inside a fixture or a `fromDir`. */
  skipped?: { file: string; reason: string }[];
  /** Each AttemptSet declared once, as its file's outcome holds it (its shape too): what a writer keeps as its last good expansion (last-good.ts). */
  setDocs?: Map<string, { rel: string; doc: DocOutcome }>;
}

export interface LoadOptions {
  /** Results root (`--results-root`); every attempt's results folder must stay inside it. */
  resultsRoot: string;
  /** AttemptSet children's names of the old form the instance has records under: kept (path-checks.ts Roots.keptNames). */
  keptNames?: ReadonlySet<string>;
  /** The state folder: outcomes of unchanged files are kept on disk under it between processes (disk-cache.ts). */
  cacheIn?: string;
  /** The specs folder is a revision of a git source (this commit): `fromFile` secrets are errors, and every spec carries the revision. */
  revision?: string;
}

/** One specs folder and the files to load from it. */
export interface SpecSet {
  root: string;
  files: SpecFile[];
  problems: WalkProblem[];
  /** What `.berthignore` left out. */
  skipped?: SkippedPath[];
}

export async function loadSpecs(opts: { specsDir: string } & LoadOptions): Promise<LoadReport> {
  return guard(async () => {
    const root = path.resolve(opts.specsDir);
    const ctx = await loadContext(opts.resultsRoot, opts.keptNames);
    const { walk, outcomes } = await walkAndLoad(root, await rootsOf(root, ctx, opts.revision !== undefined), opts.cacheIn);
    const load = await combine([{ root, ...walk, outcomes }], ctx);
    if (opts.revision === undefined) return load;
    const revision = opts.revision;
    return { ...load, specs: load.specs.map((s) => ({ ...s, revision })), revision };
  });
}

export async function loadPaths(paths: string[], opts: LoadOptions): Promise<LoadReport> {
  return guard(async () => {
    const ctx = await loadContext(opts.resultsRoot, opts.keptNames);
    const folders: FolderOutcomes[] = [];
    const sets: SpecSet[] = [];
    /** Files named alone (outside the folders), loaded with their folders in the order named. */
    const flush = async () => {
      for (const set of sets.splice(0)) folders.push({ ...set, outcomes: await outcomesOf(set.files, await rootsOf(set.root, ctx), opts.cacheIn) });
    };
    const seen = new Set<string>();
    for (const p of paths) {
      const abs = path.resolve(p);
      let st: Stats;
      try {
        // synchronous, as the walk's (walk.ts): one call, and no node:fs/promises to load (start-up, issue 55)
        st = statSync(abs);
      } catch (err) {
        sets.push({ root: path.dirname(abs), files: [], problems: [{ abs, rel: path.basename(abs), code: 'io', message: ioReason(err) }] });
        continue;
      }
      if (st.isDirectory()) {
        await flush();
        const { walk, outcomes } = await walkAndLoad(abs, await rootsOf(abs, ctx), opts.cacheIn, (files) => unseen(files, seen));
        folders.push({ root: abs, files: walk.files, problems: walk.problems, ...(walk.skipped ? { skipped: walk.skipped } : {}), outcomes });
      } else {
        // A file named on the command line is its folder's spec: a link out of that folder is never read.
        const linked = lstatSync(abs).isSymbolicLink();
        const real = linked ? await realpathLoose(abs) : abs;
        if (linked && !isInside(await realpathLoose(path.dirname(abs)), real)) {
          const problem: WalkProblem = { abs, rel: path.basename(abs), code: 'path-escape', message: `links outside its folder (to ${real}); not read` };
          sets.push({ root: path.dirname(abs), files: [], problems: [problem] });
        } else {
          sets.push({ root: path.dirname(abs), files: await unseen([{ abs, rel: path.basename(abs), ...(linked ? { linked } : {}) }], seen), problems: [] });
        }
      }
    }
    await flush();
    return combine(folders, ctx);
  });
}

async function unseen(files: SpecFile[], seen: Set<string>): Promise<SpecFile[]> {
  const out: SpecFile[] = [];
  for (const f of files) {
    const real = await realpathLoose(f.abs);
    if (seen.has(real)) continue;
    seen.add(real);
    out.push(f);
  }
  return out;
}

interface Declaration {
  name: string;
  pos: SourcePos;
  loaded?: LoadedSpec;
  /** The AttemptSet that declares this child. */
  set?: string;
}

interface SetDeclaration {
  pos: SourcePos;
  loaded: LoadedSet;
  children: Declaration[];
}

/** One specs folder's files with their outcomes (in file order), to be combined into a load. */
export interface FolderOutcomes extends SpecSet {
  outcomes: FileOutcome[];
  /** The files as users see them (displayPath), when known. */
  display?: string[];
}

/** What every file of one load is checked against: the results root, and realpath answers shared by its checks. */
export interface LoadContext {
  resultsAbs: string;
  resultsReal: string;
  realCache: RealCache;
  /** Fixtures walked by this load (path-checks.ts `Roots.fixtureScans`). */
  fixtureScans: NonNullable<Roots['fixtureScans']>;
  /** Fixtures resolved by this load (path-checks.ts `Roots.fixtureChecks`). */
  fixtureChecks: NonNullable<Roots['fixtureChecks']>;
  /** path-checks.ts `Roots.keptNames`. */
  keptNames?: ReadonlySet<string>;
  /** Build contexts read by this load (path-checks.ts `Roots.buildChecks`). */
  buildChecks: NonNullable<Roots['buildChecks']>;
}

export async function loadContext(resultsRoot: string, keptNames?: ReadonlySet<string>): Promise<LoadContext> {
  const resultsAbs = path.resolve(resultsRoot);
  return {
    resultsAbs,
    resultsReal: await realpathLoose(resultsAbs),
    realCache: new RealCache(),
    fixtureScans: new Map(),
    fixtureChecks: new Map(),
    ...(keptNames && keptNames.size ? { keptNames } : {}),
    buildChecks: new Map(),
  };
}

export async function rootsOf(root: string, ctx: LoadContext, fromGit = false): Promise<Roots> {
  return {
    specsRoot: root,
    specsReal: await realpathLoose(root),
    resultsRoot: ctx.resultsAbs,
    resultsReal: ctx.resultsReal,
    realCache: ctx.realCache,
    fixtureScans: ctx.fixtureScans,
    fixtureChecks: ctx.fixtureChecks,
    buildChecks: ctx.buildChecks,
    ...(fromGit ? { fromGit } : {}),
    ...(ctx.keptNames ? { keptNames: ctx.keptNames } : {}),
  };
}

/**
 * The outcomes of `files` (of one specs folder), in order. Unchanged files answer from the cache
 * (a stat each); the others load side by side (their reads and fixture scans overlap).
 */
export async function outcomesOf(files: SpecFile[], roots: Roots, cacheIn?: string): Promise<FileOutcome[]> {
  const disk = new DiskHold(cacheIn, roots);
  const out = await outcomesWith(files, roots, disk);
  disk.save();
  return out;
}

/** The disk cache of one load (disk-cache.ts): opened when first needed, saved once at the end (a save drops what was not used). */
class DiskHold {
  private cache: DiskSpecCache | undefined;

  constructor(
    private readonly cacheIn: string | undefined,
    private readonly roots: Roots,
  ) {}

  get(): DiskSpecCache | undefined {
    if (this.cacheIn === undefined) return undefined;
    this.cache ??= new DiskSpecCache(diskCachePath(this.cacheIn, this.roots), this.roots);
    return this.cache;
  }

  save(): void {
    this.cache?.save();
  }
}

async function outcomesWith(files: SpecFile[], roots: Roots, hold: DiskHold): Promise<FileOutcome[]> {
  const display = files.map((f) => displayPath(f.abs));
  const found = await mapChunked(files, 200, (f, i) => cachedOutcome(f, display[i] as string, roots));
  // a fixture-bound outcome answers once its fixtures are checked again (side by side)
  const kept = found.some((k) => k instanceof Promise) ? await Promise.all(found) : (found as (FileOutcome | undefined)[]);
  // What this process does not keep, a process before it may have kept on disk.
  const disk = kept.some((k) => !k) ? hold.get() : undefined;
  if (disk) {
    // In chunks too: each answer reads its file again (disk-cache.ts), a thousand of them ~20-70 ms,
    // and a command's engine calls under way meanwhile (the ping, the locks) must not wait for all.
    await mapChunked(files, 100, (f, i) => {
      if (kept[i]) return;
      const key = keyOf(f, display[i] as string, roots);
      const e = disk.get(key, f.abs);
      if (!e) return;
      keep(key, e.sig, e.outcome);
      kept[i] = e.outcome;
    });
  }
  const missing = files.flatMap((f, i) => (kept[i] ? [] : [i]));
  const loaded = await runBounded(missing, 32, (i) => {
    const file = display[i] as string;
    return loadAndKeep(files[i] as SpecFile, file, roots, disk ? (key, sig, o, atMs) => disk.set(key, o, sig, atMs) : undefined).catch((err: unknown) => ({
      docs: [] as DocOutcome[],
      errors: [{ file, line: 1, col: 1, path: '', code: 'io' as const, message: `internal error while loading: ${String(err)}` }],
      unreadable: true,
    }));
  });
  missing.forEach((i, j) => {
    const settled = loaded[j];
    if (!settled || settled.status === 'rejected') throw settled?.reason ?? new Error(`no outcome for ${display[i]}`);
    kept[i] = settled.value;
  });
  return kept.map((o, i) => {
    if (!o) throw new Error(`no outcome for ${display[i]}`);
    return o;
  });
}

/**
 * Walks the specs folder `root` a level of folders at a time and loads the files of each level
 * before the next is read: a folder that a file found so far claims (a fixture, a set's fromDir)
 * is left out unread (named in `skipped`), so a repository used as a fixture costs no walk and
 * none of its YAML is read. Claims made by a file found deeper than a folder already read leave
 * that folder's files out after the fact, as `combine` does for any claim. `keep`: which of the
 * files found are loaded (the others are left out of the answer).
 */
export async function walkAndLoad(
  root: string,
  roots: Roots,
  cacheIn?: string,
  keep?: (files: SpecFile[]) => Promise<SpecFile[]>,
): Promise<{ walk: WalkResult; outcomes: FileOutcome[] }> {
  const rootAbs = path.resolve(root);
  const rootReal = realOrSame(rootAbs);
  const w = new SpecWalk(rootAbs);
  const hold = new DiskHold(cacheIn, roots);
  const got = new Map<SpecFile, FileOutcome>();
  /** Claimed folder → the first file that claims it. */
  const claims = new Map<string, string>();
  const claimAt = (p: string): { claim: string; by: string } | undefined => {
    for (let at = p; ;) {
      const by = claims.get(at);
      if (by !== undefined) return { claim: at, by };
      const up = path.dirname(at);
      if (up === at || at === rootAbs || at === rootReal) return undefined;
      at = up;
    }
  };
  while (!w.done) {
    const found = w.step();
    const load = keep ? await keep(found) : found;
    if (load.length > 0) {
      const outcomes = await outcomesWith(load, roots, hold);
      load.forEach((f, i) => {
        const o = outcomes[i] as FileOutcome;
        got.set(f, o);
        for (const c of o.claims ?? []) {
          // the specs folder itself, or a folder above it, claims nothing here (such a fixture is refused)
          const own = c === rootAbs || c === rootReal || isInside(c, rootAbs) || isInside(c, rootReal);
          if (!own && !claims.has(c)) claims.set(c, f.abs);
        }
      });
    }
    if (claims.size === 0) continue;
    w.prune((abs, real) => {
      const hit = claimAt(abs) ?? claimAt(real);
      if (!hit) return undefined;
      const inside =
        hit.claim === abs || hit.claim === real
          ? ''
          : `inside ${JSON.stringify(toPosix(path.relative(isInside(rootReal, hit.claim) ? rootReal : rootAbs, hit.claim)))}, `;
      return `${inside}a fixture or fromDir of ${displayPath(hit.by)}`;
    });
  }
  hold.save();
  const all = w.result();
  const walk = keep ? { ...all, files: all.files.filter((f) => got.has(f)) } : all;
  return { walk, outcomes: walk.files.map((f) => got.get(f) as FileOutcome) };
}

/**
 * One load from its folders' file outcomes: the walk's problems, each file's errors and
 * declarations, then the checks across files (duplicate names, sets, overlapping results
 * folders). Reads no spec file.
 */
export async function combine(all: FolderOutcomes[], ctx: LoadContext): Promise<LoadReport> {
  const { folders, skipped } = dropClaimed(all);
  const errors: SpecError[] = [];
  const decls: Declaration[] = [];
  const setDecls = new Map<string, SetDeclaration[]>();
  const setDocs = new Map<string, { rel: string; doc: DocOutcome }[]>();
  const unreadableFiles = new Set<string>();
  const setProtectedFiles = new Set<string>();
  const unreadableFolders = new Set<string>();
  let rootError: SpecError | undefined;
  const files: string[] = [];
  let documents = 0;
  const { resultsAbs, realCache } = ctx;

  for (const set of folders) {
    for (const p of set.problems) {
      const err: SpecError = { file: displayPath(p.abs), line: 1, col: 1, path: '', code: p.code, message: p.message };
      errors.push(err);
      if (p.root) rootError ??= err;
      else if (p.folder) unreadableFolders.add(p.rel);
      else unreadableFiles.add(p.rel);
    }
    for (const [i, f] of set.files.entries()) {
      const file = set.display?.[i] ?? displayPath(f.abs);
      files.push(file);
      const outcome = set.outcomes[i];
      if (!outcome) throw new Error(`no outcome for ${file}`);
      if (outcome.unreadable) unreadableFiles.add(f.rel);
      else documents += outcome.docs.length;
      errors.push(...outcome.errors);
      for (const d of outcome.docs) {
        if (d.set) {
          // An AttemptSet: its own errors belong to the set; each child is declared like an Attempt.
          // A set whose children cannot be named: what its file declared is left alone.
          if (d.errors.length > 0 && d.set.loaded.children.length === 0 && !unreadableFiles.has(f.rel)) {
            unreadableFiles.add(f.rel);
            setProtectedFiles.add(f.rel);
          }
          if (d.name === undefined) {
            errors.push(...d.errors);
            continue;
          }
          const setName = d.name;
          setDocs.set(setName, [...(setDocs.get(setName) ?? []), { rel: f.rel, doc: d }]);
          errors.push(...d.errors.map((e) => ({ ...e, set: setName })));
          const children = d.set.children.map((c): Declaration => {
            errors.push(...c.errors.map((e) => ({ ...e, attempt: c.name, set: setName })));
            return { name: c.name, pos: d.pos, set: setName, ...(c.loaded ? { loaded: c.loaded } : {}) };
          });
          setDecls.set(setName, [...(setDecls.get(setName) ?? []), { pos: d.pos, loaded: d.set.loaded, children }]);
          continue;
        }
        errors.push(...(d.name !== undefined ? d.errors.map((e) => ({ ...e, attempt: d.name as string })) : d.errors));
        if (d.name !== undefined) decls.push({ name: d.name, pos: d.pos, loaded: d.loaded });
      }
    }
  }

  const attemptSets = new Map<string, LoadedSet>();
  for (const [setName, group] of setDecls) {
    if (group.length > 1) {
      // Two sets with one name: both are errors, and none of their children load.
      const childNames = new Map<string, Declaration>();
      for (const g of group) {
        const others = group.filter((o) => o !== g).map((o) => `${o.pos.file}:${o.pos.line}:${o.pos.col}`);
        errors.push({
          ...g.pos,
          path: 'metadata.name',
          code: 'duplicate-name',
          message: `AttemptSet name "${setName}" is also declared at ${others.join(', ')}`,
          set: setName,
        });
        // Protected, once each (the same cell in both sets is not one more error).
        for (const { loaded: _l, ...c } of g.children) if (!childNames.has(c.name)) childNames.set(c.name, c);
      }
      decls.push(...childNames.values());
      const first = group[0] as SetDeclaration;
      const seen = new Set<string>();
      const children: string[] = [];
      const coords: Record<string, string>[] = [];
      for (const g of group) {
        g.loaded.children.forEach((c, i) => {
          if (seen.has(c)) return;
          seen.add(c);
          children.push(c);
          coords.push(g.loaded.coords[i] ?? {});
        });
      }
      attemptSets.set(setName, { ...first.loaded, children, coords, valid: false });
    } else {
      const only = group[0] as SetDeclaration;
      decls.push(...only.children);
      attemptSets.set(setName, only.loaded);
    }
  }
  const named = resolveNames(decls);
  errors.push(...named.duplicateErrors);
  const { protectedNames } = named;
  const overlap = await checkResultsOverlap(named.specs, resultsAbs, realCache);
  errors.push(...overlap.errors);
  for (const n of overlap.refused) protectedNames.add(n);
  const specs = overlap.specs;
  const order = new Map(files.map((f, i) => [f, i]));
  errors.sort((a, b) => (order.get(a.file) ?? -1) - (order.get(b.file) ?? -1) || a.line - b.line || a.col - b.col);
  return {
    specs,
    errors,
    protectedNames,
    unreadableFiles,
    unreadableFolders,
    ...(rootError ? { rootError } : {}),
    files,
    documents,
    sets: attemptSets,
    setProtectedFiles,
    skipped,
    setDocs: new Map([...setDocs].flatMap(([name, docs]) => (docs.length === 1 ? [[name, docs[0] as { rel: string; doc: DocOutcome }]] : []))),
  };
}

/**
 * The folders without the files that lie inside a fixture (any layer, the grader's too) or a
 * `fromDir` folder that another file of the load declares: a repository used as a fixture may
 * hold YAML of its own (`mkdocs.yml`, CI workflows, compose files), which is not a spec.
 *
 * Deterministic whatever the order of reads: every file found is read, and the claims are those
 * of every file (a file left out still claims), so which files are left out depends on the files'
 * contents alone. A file's own claims never leave it out, and a claim on the specs folder itself
 * (or above it) leaves nothing out. Paths are matched as found (lexically under the specs
 * folder) and, for files reached through links or fixtures resolved through them, by real path.
 */
export function dropClaimed(folders: FolderOutcomes[]): { folders: FolderOutcomes[]; skipped: { file: string; reason: string }[] } {
  const skipped: { file: string; reason: string }[] = [];
  for (const set of folders) for (const s of set.skipped ?? []) skipped.push({ file: displayPath(path.join(set.root, s.rel)), reason: s.reason });
  const claims = new Map<string, string[]>();
  for (const set of folders) {
    set.files.forEach((f, i) => {
      for (const c of set.outcomes[i]?.claims ?? []) {
        const by = claims.get(c);
        if (by) by.push(f.abs);
        else claims.set(c, [f.abs]);
      }
    });
  }
  if (claims.size === 0) return { folders, skipped };
  const out: FolderOutcomes[] = [];
  for (const set of folders) {
    const root = path.resolve(set.root);
    const rootReal = realOrSame(root);
    const ownClaim = (c: string) => c === root || c === rootReal || isInside(c, root) || isInside(c, rootReal);
    /** The claim over `p` (or one of its folders, up to the specs folder) made by a file other than `self`. */
    const claimOver = (p: string, self: string): { claim: string; by: string } | undefined => {
      for (let at = p; ;) {
        const by = claims.get(at);
        if (by && !ownClaim(at)) {
          const other = by.find((b) => b !== self);
          if (other !== undefined) return { claim: at, by: other };
        }
        const up = path.dirname(at);
        if (up === at || at === root || at === rootReal) return undefined;
        at = up;
      }
    };
    const keep: number[] = [];
    set.files.forEach((f, i) => {
      const hit = claimOver(f.abs, f.abs) ?? (f.real !== undefined ? claimOver(f.real, f.abs) : undefined);
      if (!hit) {
        keep.push(i);
        return;
      }
      const what = isInside(rootReal, hit.claim) ? path.relative(rootReal, hit.claim) : path.relative(root, hit.claim);
      skipped.push({
        file: set.display?.[i] ?? displayPath(f.abs),
        reason: `inside ${JSON.stringify(toPosix(what))}, a fixture or fromDir of ${displayPath(hit.by)}`,
      });
    });
    if (keep.length === set.files.length) {
      out.push(set);
      continue;
    }
    out.push({
      ...set,
      files: keep.map((i) => set.files[i] as SpecFile),
      outcomes: keep.map((i) => set.outcomes[i] as FileOutcome),
      ...(set.display ? { display: keep.map((i) => set.display?.[i] as string) } : {}),
    });
  }
  return { folders: out, skipped };
}

function realOrSame(p: string): string {
  try {
    return realpathSync.native(p);
  } catch {
    return p;
  }
}

/** Duplicate names are errors everywhere they occur; names that did not load are protected. */
function resolveNames(decls: Declaration[]): { specs: LoadedSpec[]; protectedNames: Set<string>; duplicateErrors: SpecError[] } {
  const byName = new Map<string, Declaration[]>();
  for (const d of decls) {
    const g = byName.get(d.name);
    if (g) g.push(d);
    else byName.set(d.name, [d]);
  }
  const specs: LoadedSpec[] = [];
  const protectedNames = new Set<string>();
  const duplicateErrors: SpecError[] = [];
  for (const [name, group] of byName) {
    if (group.length > 1) {
      protectedNames.add(name);
      for (const d of group) {
        const others = group.filter((o) => o !== d).map((o) => `${o.pos.file}:${o.pos.line}:${o.pos.col}`);
        const what = d.set !== undefined ? `name "${name}" (a child of AttemptSet "${d.set}")` : `name "${name}"`;
        duplicateErrors.push({
          ...d.pos,
          path: 'metadata.name',
          code: 'duplicate-name',
          message: `${what} is also declared at ${others.join(', ')}`,
          attempt: name,
          ...(d.set !== undefined ? { set: d.set } : {}),
        });
      }
    } else if (group[0]?.loaded) {
      specs.push(group[0].loaded);
    } else {
      protectedNames.add(name);
    }
  }
  return { specs, protectedNames, duplicateErrors };
}

/** A load that knows no attempt because the specs cannot be read at all: `message` says why. */
export function rootErrorLoad(file: string, message: string): LoadReport {
  const rootError: SpecError = { file, line: 1, col: 1, path: '', code: 'io', message };
  return {
    specs: [],
    errors: [rootError],
    protectedNames: new Set(),
    unreadableFiles: new Set(),
    unreadableFolders: new Set(),
    rootError,
    files: [],
    documents: 0,
  };
}

export async function guard(run: () => Promise<LoadReport>): Promise<LoadReport> {
  try {
    return await run();
  } catch (err) {
    return rootErrorLoad('', `cannot load specs: ${String(err)}`);
  }
}

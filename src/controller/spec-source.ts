/**
 * The specs folder as a source of keys: watched by name (chokidar, through specs-watch.ts: no
 * listing of the folder on a change); a change waits until the folder has been quiet
 * for the debounce, and a file written in place until it has had no write for `settleMs`
 * (editors' atomic renames, swap files, half-written files settle first). Then the folder is
 * loaded again and the attempt names whose spec changed (added, removed, new hash, turned
 * invalid or valid) are handed on. A file moved between subfolders keeps its attempt's hash:
 * nothing to do. Loading again reads only the files the watcher named (spec/folder-load.ts);
 * what a name cannot place (a folder added, removed or replaced, the root gone, a burst that
 * may have overflowed the kernel's queue, a watcher's error) loads everything, walk and all.
 * So a change costs what changed, not the size of the folder.
 *
 * With a git source the folder is the revision in force (never watched: it never changes once
 * written); `reload()` after a new revision loads it. Before any revision is in force the load
 * is a root error: nothing is planned from it.
 */
import path from 'node:path';
import { FolderLoad } from '../spec/folder-load';
import type { LastGoodSets } from '../spec/last-good';
import { loadSpecs, rootErrorLoad, type LoadReport } from '../spec/loader';
import type { Revision } from '../git/source';
import type { Logger } from '../util/log';
import { BERTHIGNORE } from '../spec/berthignore';
import { isIgnoredName, isSpecFileName } from '../spec/walk';
import { SpecsWatch } from './specs-watch';
import { specIndex } from '../spec/spec-index';

function fingerprint(load: LoadReport, among?: ReadonlySet<string>): Map<string, string> {
  const out = new Map<string, string>();
  const wanted = (n: string) => among === undefined || among.has(n);
  // a few names among many (a dropped file): looked up, not walked (spec/spec-index.ts keeps the index per load)
  if (among !== undefined && among.size * 8 < load.specs.length) {
    const { byName } = specIndex(load.specs);
    for (const n of among) {
      const s = byName.get(n);
      if (s) out.set(n, `ok:${s.hash}`);
    }
  } else for (const s of load.specs) if (wanted(s.spec.name)) out.set(s.spec.name, `ok:${s.hash}`);
  const errs = new Map<string, string[]>();
  for (const e of load.errors)
    if (e.attempt !== undefined && wanted(e.attempt)) errs.set(e.attempt, [...(errs.get(e.attempt) ?? []), `${e.line}:${e.col}:${e.path}:${e.message}`]);
  // An invalid name whose errors change is queued too: its status carries them.
  for (const n of load.protectedNames) if (wanted(n)) out.set(n, `invalid:${(errs.get(n) ?? []).join('\n')}`);
  return out;
}

/**
 * Names whose entry differs between two loads; `among`: only these can differ (the names a load
 * of some files may have changed, spec/folder-load.ts).
 */
export function changedNames(before: LoadReport | undefined, after: LoadReport, among?: ReadonlySet<string>): string[] {
  const a = before ? fingerprint(before, among) : new Map<string, string>();
  const b = fingerprint(after, among);
  const names = new Set([...a.keys(), ...b.keys()]);
  return [...names].filter((n) => a.get(n) !== b.get(n)).sort();
}

export class SpecSource {
  private watcher: SpecsWatch | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** What the watcher reported and has not settled yet: files, or the whole folder. */
  private pending = new Set<string>();
  private pendingWhole = false;
  /** When the pending changes count as settled (Date.now()). */
  private settleAt = 0;
  private current: LoadReport | undefined;
  private loading: Promise<LoadReport> | undefined;
  private dirty = true;
  /** The folder, kept loaded (not with a git source). */
  private readonly folder: FolderLoad | undefined;
  /** Files the watcher named (settled) since the last load began. */
  private changed = new Set<string>();
  /** The next load walks the whole folder (a change a file's path does not say, a failed load). */
  private whole = true;
  /** The specs root's problem while it cannot be read (logged once). */
  private rootProblem: string | undefined;

  constructor(
    private readonly opts: {
      specsDir: string;
      resultsRoot: string;
      debounceMs: number;
      /** A file written in place counts as written once it has had no write this long (default 60 ms). */
      settleMs?: number;
      log: Logger;
      /** The watcher's burst limit (specs-watch.ts; tests). */
      burstLimit?: number;
      /** Called after every load that succeeded (tests, debugging): whether it walked the folder. */
      onLoaded?: (load: LoadReport, walked: boolean) => void;
      /** The state folder: the first load may find outcomes kept on disk there. */
      stateDir?: string;
      /** Read at each load: AttemptSet children's names of the old form the instance has records under (kept). */
      keptNames?: () => ReadonlySet<string>;
      /** The sets' last good expansions (spec/last-good.ts): kept from every load, and laid over a load where a set is broken. */
      lastGood?: LastGoodSets;
      /** Specs from git: the revision in force (undefined: none yet), and the source's URL. */
      git?: { current(): Revision | undefined; url: string };
    },
    private readonly onChange: (names: string[], load: LoadReport) => void,
  ) {
    this.folder = opts.git ? undefined : new FolderLoad({ specsDir: opts.specsDir, resultsRoot: opts.resultsRoot });
  }

  /** Full loads of the folder so far (walks), not counting updates of the files named. */
  get walks(): number {
    return this.folder?.walks ?? 0;
  }

  /** Whether a load is due (a change reported, its settle time running) or under way. */
  get busy(): boolean {
    return this.timer !== undefined || this.loading !== undefined;
  }

  /** The folder's watcher (undefined until watch()). */
  get watching(): SpecsWatch | undefined {
    return this.watcher;
  }

  /** The last load, as it is (undefined before the first); never reads the folder. */
  latest(): LoadReport | undefined {
    return this.current;
  }

  /** The latest load; loads again first when the folder changed since. */
  async specs(): Promise<LoadReport> {
    // A load under way answers only if nothing changed since it began: one begun before a change
    // (a new revision, a file written) would hand the caller what no longer holds.
    while (this.loading) {
      const under = this.loading;
      if (!this.dirty) return under;
      await under.catch(() => undefined);
    }
    // A folder the watcher cannot watch reports nothing: every look walks the folder again.
    if (this.watcher?.degraded) {
      this.dirty = true;
      this.whole = true;
    }
    if (!this.dirty && this.current) return this.current;
    this.dirty = false;
    const git = this.opts.git;
    const rev = git?.current();
    if (git && !rev) {
      this.dirty = true;
      return rootErrorLoad(git.url, 'no revision of the git source fetched yet');
    }
    // Only the first load looks on disk (start-up); later ones find what they keep in memory.
    const cacheIn = this.current ? undefined : this.opts.stateDir;
    const changed = this.changed;
    const whole = this.whole || !this.current;
    this.changed = new Set();
    this.whole = false;
    const walks = this.walks;
    const kept = this.opts.keptNames;
    const loading = rev
      ? loadSpecs({ specsDir: rev.dir, revision: rev.revision, resultsRoot: this.opts.resultsRoot, ...(kept ? { keptNames: kept() } : {}) })
      : whole || !this.folder
        ? (this.folder ?? new FolderLoad({ specsDir: this.opts.specsDir, resultsRoot: this.opts.resultsRoot, ...(kept ? { keptNames: kept } : {}) })).full(
            cacheIn,
          )
        : this.folder.update(changed);
    this.loading = loading
      .then(async (raw) => {
        const lastGood = this.opts.lastGood;
        if (!lastGood || raw.rootError) return raw;
        await lastGood.keep(raw);
        return lastGood.apply(raw, rev ? rev.dir : this.opts.specsDir);
      })
      .finally(() => (this.loading = undefined));
    const load = await this.loading;
    if (load.rootError) {
      // A root that cannot be read knows no attempt: the last good load stays in force (nothing is
      // removed for it), and every later look loads again until the folder is back.
      this.dirty = true;
      this.whole = true;
      const msg = `${load.rootError.file}: ${load.rootError.message}`;
      if (msg !== this.rootProblem) this.opts.log.error(`${msg}; the last specs read stay in force until it can be read again`);
      this.rootProblem = msg;
      if (this.current) return this.current;
      return load;
    }
    if (this.rootProblem) this.opts.log.info(`specs folder readable again: ${this.opts.specsDir}`);
    this.rootProblem = undefined;
    const names = changedNames(this.current, load, whole ? undefined : this.folder?.touched);
    this.current = load;
    if (names.length) this.onChange(names, load);
    this.opts.onLoaded?.(load, this.walks !== walks);
    return load;
  }

  /** Loads again now (a new revision of the git source). */
  reload(): void {
    this.dirty = true;
    this.whole = true;
    this.specs().catch((err: unknown) => this.opts.log.error(`loading specs failed: ${(err as Error).message}`));
  }

  watch(): void {
    const root = path.resolve(this.opts.specsDir);
    const berthignore = path.join(root, BERTHIGNORE);
    this.watcher = new SpecsWatch(root, {
      // The specs folder's .berthignore is watched: its patterns decide which files are specs.
      ignored: (name, abs) => abs !== berthignore && isIgnoredName(name),
      // Folders made inside a fixture: no walk (the files there are not specs; each is read alone).
      quietFolder: (abs) => this.folder?.claims(abs) === true,
      ...(this.opts.burstLimit !== undefined ? { burstLimit: this.opts.burstLimit } : {}),
      onPath: (file, kind) => {
        if (file === berthignore) {
          this.opts.log.debug(`specs folder: ${kind} ${BERTHIGNORE}; walking it again`);
          this.pendingWhole = true;
          this.later(0);
          return;
        }
        // Only spec files are read; any other name (a README, an editor's temp file) changes nothing.
        if (!isSpecFileName(path.basename(file))) return;
        this.opts.log.debug(`specs folder: ${kind} ${path.relative(root, file)}`);
        this.pending.add(file);
        // A file made may still be being written: it settles as a write does; a removal does not.
        this.later(kind === 'unlink' ? 0 : (this.opts.settleMs ?? 60));
      },
      onWhole: (why) => {
        this.opts.log.debug(`specs folder: ${why}; walking it again`);
        this.pendingWhole = true;
        this.later(0);
      },
      onError: (err) => {
        this.opts.log.warn(
          `specs folder watch: ${err.message}${this.watcher?.degraded ? '; while it cannot be watched, every look at the specs (each batch, every resync) walks the whole folder again' : ''}`,
        );
        // What it missed is unknown: the next load walks the folder.
        this.dirty = true;
        this.whole = true;
      },
    });
  }

  /** Loads once the folder has been quiet for the debounce and the files written for `settleMs`. */
  private later(settleMs: number): void {
    const now = Date.now();
    this.settleAt = Math.max(this.settleAt, now + settleMs, now + this.opts.debounceMs);
    clearTimeout(this.timer);
    const fire = (): void => {
      const left = this.settleAt - Date.now();
      if (left > 0) {
        this.timer = setTimeout(fire, left);
        return;
      }
      this.timer = undefined;
      for (const f of this.pending) this.noteChange('change', f);
      if (this.pendingWhole) this.noteChange('whole', this.opts.specsDir);
      this.pending = new Set();
      this.pendingWhole = false;
      this.specs().catch((err: unknown) => this.opts.log.error(`loading specs failed: ${(err as Error).message}`));
    };
    this.timer = setTimeout(fire, this.settleAt - now);
  }

  /** A change the watcher reported (settled): a file's (`add`, `change`, `unlink`) is loaded again alone; any other, the whole folder. */
  noteChange(event: string, file: string): void {
    this.dirty = true;
    if (event === 'add' || event === 'change' || event === 'unlink') this.changed.add(file);
    else this.whole = true;
  }

  /** Resolves once the watcher is armed: every change after it is seen. */
  ready(): Promise<void> {
    return this.watcher?.whenReady() ?? Promise.resolve();
  }

  async close(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    const w = this.watcher;
    this.watcher = undefined;
    await w?.close();
  }
}

/**
 * Path containment for the loader's safety checks: lexical containment, and containment after
 * resolving links for paths that may not exist yet (the longest existing prefix is resolved).
 */
import { lstatSync, readdirSync, realpathSync } from 'node:fs';
import * as path from 'node:path';

/** An absolute path in normal form (no `.`, `..`, doubled or trailing separators). */
function normalAbsolute(p: string): boolean {
  if (path.sep === '/') {
    // The same test as below without path.normalize (it runs several times per spec).
    if (p.charCodeAt(0) !== 47) return false;
    if (p.length === 1) return true;
    return !p.endsWith('/') && !p.endsWith('/.') && !p.endsWith('/..') && !p.includes('//') && !p.includes('/./') && !p.includes('/../');
  }
  return path.isAbsolute(p) && path.normalize(p) === p && (p.length === 1 || !p.endsWith(path.sep));
}

const normalRoots = new Map<string, boolean>();
/** normalAbsolute of a root: the same few roots are asked about for every spec, so remembered (a bounded map). */
function normalRoot(root: string): boolean {
  let n = normalRoots.get(root);
  if (n === undefined) {
    if (normalRoots.size >= 64) normalRoots.clear();
    normalRoots.set(root, (n = normalAbsolute(root)));
  }
  return n;
}

/** Whether `p` lies strictly inside `root` (both absolute, compared lexically). */
export function isInside(root: string, p: string): boolean {
  // Both in normal form (what path.resolve and realpath give): a prefix test, without
  // path.relative's two resolves (a set's thousands of children each check their results folder).
  if (normalRoot(root) && normalAbsolute(p)) {
    const prefix = root.endsWith(path.sep) ? root : root + path.sep;
    return p.length > prefix.length && p.startsWith(prefix);
  }
  const rel = path.relative(root, p);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

/** `p` is `root` or lies inside it. */
export function isWithin(root: string, p: string): boolean {
  if (normalAbsolute(root) && normalAbsolute(p)) return root === p || isInside(root, p);
  return path.resolve(root) === path.resolve(p) || isInside(root, p);
}

/** realpath of `p` (synchronous: one call, not a promise round trip per file), or undefined. */
function realOrUndefined(p: string): string | undefined {
  try {
    // A missing path is common here (results folders not made yet): ask without an exception.
    if (!lstatSync(p, { throwIfNoEntry: false })) return undefined;
    return realpathSync.native(p);
  } catch {
    return undefined;
  }
}

/**
 * realpath results within one load. Folders shared by many paths (the results root, with a set's
 * thousands of children under it) are resolved once, and once a folder has been asked about for
 * more than a few of its entries, its entries are read once (readdir with their types): a name
 * that is not there does not exist, a name that is there and no link resolves to the folder's
 * real path joined with it, and only links are resolved one by one.
 */
export class RealCache {
  private readonly real = new Map<string, string | undefined>();
  private readonly asked = new Map<string, number>();
  private readonly listings = new Map<string, Map<string, boolean> | null>();

  /** realpath of `p` (absolute, normal), or undefined when it does not exist. */
  get(p: string): string | undefined {
    if (this.real.has(p)) return this.real.get(p);
    const r = this.resolve(p);
    this.real.set(p, r);
    return r;
  }

  private resolve(p: string): string | undefined {
    const parent = path.dirname(p);
    if (parent === p) return realOrUndefined(p);
    const n = (this.asked.get(parent) ?? 0) + 1;
    this.asked.set(parent, n);
    if (n <= LISTING_AFTER) return realOrUndefined(p);
    // A folder that does not exist has no entries (a results root not made yet).
    const parentReal = this.get(parent);
    if (parentReal === undefined) return undefined;
    const entries = this.listing(parent);
    if (!entries) return realOrUndefined(p);
    const isLink = entries.get(path.basename(p));
    if (isLink === undefined) return undefined;
    if (isLink) return realOrUndefined(p);
    const base = path.basename(p);
    // parentReal is a realpath (normal, absolute): joined as path.join would, without its normalize.
    return path.sep === '/' && parentReal !== '/' ? `${parentReal}/${base}` : path.join(parentReal, base);
  }

  /**
   * `name` (one segment) in folder `dir` (absolute, normal) is not a link: absent, or an entry of
   * another type, by one listing of `dir` for all its entries (a set's thousands of results
   * folders under the results root); false when it is a link, `dir` cannot be listed, or `dir`
   * was asked about for fewer than LISTING_AFTER entries yet (then ask get).
   * A folder that does not exist has no entries.
   */
  noLinkIn(dir: string, name: string): boolean {
    // A folder asked about for a few entries only is not listed (as get does).
    if ((this.asked.get(dir) ?? 0) < LISTING_AFTER) return false;
    if (this.get(dir) === undefined) return true;
    const entries = this.listing(dir);
    return entries !== null && entries.get(name) !== true;
  }

  /** Entry name → whether it is a link; null when the folder cannot be listed. */
  private listing(dir: string): Map<string, boolean> | null {
    let l = this.listings.get(dir);
    if (l === undefined) {
      try {
        l = new Map(readdirSync(dir, { withFileTypes: true }).map((e) => [e.name, e.isSymbolicLink()]));
      } catch {
        l = null;
      }
      this.listings.set(dir, l);
    }
    return l;
  }
}

/** Entries of one folder asked about before the folder is listed instead. */
const LISTING_AFTER = 8;

/** realpath of `p`, or of its longest existing ancestor joined with the rest. Never throws. */
export async function realpathLoose(p: string, cache?: RealCache): Promise<string> {
  return realpathLooseSync(p, cache);
}

/** realpathLoose, synchronously. */
export function realpathLooseSync(p: string, cache?: RealCache): string {
  // A path already in normal absolute form is what path.resolve would give back.
  const abs = normalAbsolute(p) ? p : path.resolve(p);
  const rest: string[] = [];
  let cur = abs;
  const real1 = (q: string): string | undefined => (cache ? cache.get(q) : realOrUndefined(q));
  // No exception per missing level: a throw costs a stack trace, and a set's thousands of
  // children each have a results folder not made yet.
  for (;;) {
    const real = real1(cur);
    if (real !== undefined) {
      if (!rest.length) return real;
      // The rest are plain names (abs is resolved): joined as path.join would, without its normalize.
      if (path.sep === '/' && normalAbsolute(real)) return `${real === '/' ? '' : real}/${rest.reverse().join('/')}`;
      return path.join(real, ...rest.reverse());
    }
    const parent = path.dirname(cur);
    if (parent === cur) return abs;
    rest.push(path.basename(cur));
    cur = parent;
  }
}

/** Forward-slash form of a relative path, for names stable across platforms. */
export function toPosix(rel: string): string {
  return rel.split(path.sep).join('/');
}

const normalCwds = new Map<string, boolean>();
/** path.normalize leaves cwd as it is (a trailing separator allowed): asked once per working directory. */
function normalCwd(cwd: string): boolean {
  let n = normalCwds.get(cwd);
  if (n === undefined) {
    if (normalCwds.size >= 64) normalCwds.clear();
    normalCwds.set(cwd, (n = path.isAbsolute(cwd) && path.normalize(cwd) === cwd));
  }
  return n;
}

/** How a user sees a path: relative to the working directory when inside it, else absolute. */
export function displayPath(abs: string, cwd: string = process.cwd()): string {
  // The common cases without path.relative (it resolves both sides, ~10 µs a path): a normalized
  // absolute path and a normalized absolute cwd are compared as strings. Under cwd: the rest of
  // the path; anywhere else (cwd itself included): the path as it is.
  // (normalAbsolute, not path.normalize: a short command's few hundred calls make V8 optimize
  // normalize's loop on a background thread, ~2.5 ms of CPU the command then waits for.)
  if (abs.length > 1 && normalAbsolute(abs) && normalCwd(cwd)) {
    const under = cwd.endsWith(path.sep) ? cwd : cwd + path.sep;
    return abs.startsWith(under) ? abs.slice(under.length) : abs;
  }
  const rel = path.relative(cwd, abs);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : abs;
}

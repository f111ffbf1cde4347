/**
 * Path containment for the loader's safety checks: lexical containment, and containment after
 * resolving links for paths that may not exist yet (the longest existing prefix is resolved).
 */
import { lstatSync, realpathSync } from 'node:fs';
import * as path from 'node:path';

/** An absolute path in normal form (no `.`, `..`, doubled or trailing separators). */
function normalAbsolute(p: string): boolean {
  return path.isAbsolute(p) && path.normalize(p) === p && (p.length === 1 || !p.endsWith(path.sep));
}

/** Whether `p` lies strictly inside `root` (both absolute, compared lexically). */
export function isInside(root: string, p: string): boolean {
  // Both in normal form (what path.resolve and realpath give): a prefix test, without
  // path.relative's two resolves (a set's thousands of children each check their results folder).
  if (normalAbsolute(root) && normalAbsolute(p)) {
    const prefix = root.endsWith(path.sep) ? root : root + path.sep;
    return p.length > prefix.length && p.startsWith(prefix);
  }
  const rel = path.relative(root, p);
  return rel !== '' && rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel);
}

/** `p` is `root` or lies inside it. */
export function isWithin(root: string, p: string): boolean {
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

/** realpath of `p`, or of its longest existing ancestor joined with the rest. Never throws. */
export async function realpathLoose(p: string, cache?: Map<string, Promise<string | undefined>>): Promise<string> {
  const abs = path.resolve(p);
  const rest: string[] = [];
  let cur = abs;
  const real1 = (q: string): Promise<string | undefined> => {
    let r = cache?.get(q);
    if (!r) {
      r = Promise.resolve(realOrUndefined(q));
      cache?.set(q, r);
    }
    return r;
  };
  // No exception per missing level: a throw costs a stack trace, and a set's thousands of
  // children each have a results folder not made yet.
  for (;;) {
    const real = await real1(cur);
    if (real !== undefined) return rest.length ? path.join(real, ...rest.reverse()) : real;
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

/** How a user sees a path: relative to the working directory when inside it, else absolute. */
export function displayPath(abs: string, cwd: string = process.cwd()): string {
  // The common case without path.relative (it resolves both sides): a normalized path under cwd.
  if (path.isAbsolute(abs) && abs.startsWith(cwd + path.sep) && path.normalize(abs) === abs && !abs.endsWith(path.sep)) {
    return abs.slice(cwd.length + 1);
  }
  const rel = path.relative(cwd, abs);
  return rel !== '' && !rel.startsWith('..') && !path.isAbsolute(rel) ? rel : abs;
}

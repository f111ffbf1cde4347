/**
 * path.join(dir, name) for the common case, without path.join's normalize of the whole: `dir` in
 * normal form (absolute or relative, or '') and `name` one plain file name (what readdir gives)
 * are joined by one separator. Anything else goes to path.join. Start-up (issue 55): a short
 * command's few hundred joins otherwise make V8 optimize normalize's loop on a background thread,
 * ~2.5 ms of CPU the command then waits for at its exit.
 */
import * as path from 'node:path';

const normalDirs = new Map<string, boolean>();

export function joinName(dir: string, name: string): string {
  if (name === '' || name === '.' || name === '..' || name.includes('/') || name.includes(path.sep)) return path.join(dir, name);
  if (dir === '') return name;
  let normal = normalDirs.get(dir);
  if (normal === undefined) {
    if (normalDirs.size >= 64) normalDirs.clear();
    normalDirs.set(dir, (normal = dir !== '.' && isNormal(dir)));
  }
  if (!normal) return path.join(dir, name);
  return dir.endsWith(path.sep) ? dir + name : dir + path.sep + name;
}

/** `p` is what path.normalize gives back for it, without a trailing separator (but a root's). */
function isNormal(p: string): boolean {
  return path.normalize(p) === p && (!p.endsWith(path.sep) || path.dirname(p) === p);
}

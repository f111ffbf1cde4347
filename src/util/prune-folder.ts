/** Bounding a cache folder by its number of files. */
import { readdirSync, rmSync, statSync } from 'node:fs';
import path from 'node:path';

/**
 * Keeps at most `max` files in `dir` (of those whose names `match`, all when none): the least
 * recently written go first. `keep` (a path in `dir`, the file just written) is never removed and
 * counts among the `max`. Never throws: a folder that cannot be read, or a file gone meanwhile, is
 * left for the next write.
 */
export function pruneOldest(dir: string, max: number, o: { match?: RegExp; keep?: string } = {}): void {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => !o.match || o.match.test(n));
  } catch {
    return;
  }
  if (names.length <= max) return;
  const keep = o.keep !== undefined ? path.basename(o.keep) : undefined;
  const aged: { name: string; at: number }[] = [];
  for (const name of names) {
    if (name === keep) continue;
    try {
      aged.push({ name, at: statSync(path.join(dir, name)).mtimeMs });
    } catch {
      // gone meanwhile
    }
  }
  aged.sort((a, b) => a.at - b.at);
  const over = aged.length + (keep !== undefined && names.includes(keep) ? 1 : 0) - max;
  for (const { name } of aged.slice(0, Math.max(0, over))) {
    try {
      rmSync(path.join(dir, name), { force: true });
    } catch {
      // best effort: the next write tries again
    }
  }
}

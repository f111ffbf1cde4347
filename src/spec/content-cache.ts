/**
 * The sha256 of a fixture file, kept by the file's identity and version (device, inode, size,
 * mtime and ctime, to the nanosecond): a fixture that has not changed is not read again on every
 * load (a 1.2 GiB fixture cost seconds per pass). Any write to a file changes its ctime, which
 * no one can set back, so a kept digest is never stale. A digest is kept only when the file's
 * stat is the same after the read as before it (a file written meanwhile is read again next
 * time). Between processes, fixture-scan.ts keeps the same on disk (digest-store.ts).
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, type BigIntStats } from 'node:fs';
import { nextTurn } from '../util/pool';

const MAX_ENTRIES = 100_000;
const CHUNK = 1024 * 1024;
const cache = new Map<string, { version: string; sha256: string }>();
const stats = { hits: 0, misses: 0 };

type Identity = Pick<BigIntStats, 'dev' | 'ino' | 'size' | 'mtimeNs' | 'ctimeNs'>;
/** A file's identity (device, inode) and version (size, mtime, ctime), as compared here and on disk (digest-store.ts). */
export interface StatKey {
  id: string;
  version: string;
}
export const statKey = (st: Identity): StatKey => ({ id: `${st.dev}:${st.ino}`, version: `${st.size}:${st.mtimeNs}:${st.ctimeNs}` });
const version = (st: Identity) => `${st.size}:${st.mtimeNs}:${st.ctimeNs}`;

/** The digest kept for the file whose (l)stat gives `key`, if it has not changed since; counts a hit. */
export function knownSha256(key: StatKey): string | undefined {
  const hit = cache.get(key.id);
  if (!hit || hit.version !== key.version) return undefined;
  stats.hits++;
  return hit.sha256;
}

/** Keeps `sha256` for the file whose stat gives `key` (one the caller knows holds those bytes). */
export function rememberSha256(key: StatKey, sha256: string): void {
  cache.delete(key.id);
  if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
  cache.set(key.id, { version: key.version, sha256 });
}

/**
 * sha256 hex of the regular file at `abs` (opened without following a link), from the cache when
 * it has not changed; `stat`: the file's stat when it held the whole read (its digest is then kept).
 */
export async function hashFile(abs: string): Promise<{ sha256: string; stat?: BigIntStats }> {
  const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const before = fstatSync(fd, { bigint: true });
    const key = statKey(before);
    const known = knownSha256(key);
    if (known !== undefined) return { sha256: known, stat: before };
    stats.misses++;
    const h = createHash('sha256');
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
      await nextTurn(); // a big fixture never holds the event loop for more than one chunk
    }
    const sha256 = h.digest('hex');
    if (version(fstatSync(fd, { bigint: true })) !== key.version) return { sha256 };
    rememberSha256(key, sha256);
    return { sha256, stat: before };
  } finally {
    closeSync(fd);
  }
}

/** sha256 hex of the regular file at `abs` (opened without following a link), from the cache when it has not changed. */
export async function fileSha256(abs: string): Promise<string> {
  return (await hashFile(abs)).sha256;
}

/** Hits and misses so far (tests, bench): a miss is a file read whole. */
export function contentCacheStats(): { hits: number; misses: number } {
  return { ...stats };
}

/** Forget every kept digest (tests). */
export function clearContentCache(): void {
  cache.clear();
}

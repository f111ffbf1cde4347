/**
 * The sha256 of a fixture file, kept by the file's identity and version (device, inode, size,
 * mtime and ctime, to the nanosecond): a fixture that has not changed is not read again on every
 * load (a 1.2 GiB fixture cost seconds per pass). Any write to a file changes its ctime, which
 * no one can set back, so a kept digest is never stale. A digest is kept only when the file's
 * stat is the same after the read as before it (a file written meanwhile is read again next
 * time).
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, openSync, readSync, type BigIntStats } from 'node:fs';
import { setImmediate as yieldLoop } from 'node:timers/promises';

const MAX_ENTRIES = 100_000;
const CHUNK = 1024 * 1024;
const cache = new Map<string, { version: string; sha256: string }>();
const stats = { hits: 0, misses: 0 };

const identity = (st: BigIntStats) => `${st.dev}:${st.ino}`;
const version = (st: BigIntStats) => `${st.size}:${st.mtimeNs}:${st.ctimeNs}`;

/** sha256 hex of the regular file at `abs` (opened without following a link), from the cache when it has not changed. */
export async function fileSha256(abs: string): Promise<string> {
  const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  try {
    const before = fstatSync(fd, { bigint: true });
    const key = identity(before);
    const hit = cache.get(key);
    if (hit && hit.version === version(before)) {
      stats.hits++;
      return hit.sha256;
    }
    stats.misses++;
    const h = createHash('sha256');
    const buf = Buffer.allocUnsafe(CHUNK);
    for (;;) {
      const n = readSync(fd, buf, 0, CHUNK, null);
      if (n === 0) break;
      h.update(buf.subarray(0, n));
      await yieldLoop(); // a big fixture never holds the event loop for more than one chunk
    }
    const sha256 = h.digest('hex');
    if (version(fstatSync(fd, { bigint: true })) === version(before)) {
      cache.delete(key);
      if (cache.size >= MAX_ENTRIES) cache.delete(cache.keys().next().value as string);
      cache.set(key, { version: version(before), sha256 });
    }
    return sha256;
  } finally {
    closeSync(fd);
  }
}

/** Hits and misses so far (tests, bench). */
export function contentCacheStats(): { hits: number; misses: number } {
  return { ...stats };
}

/** Forget every kept digest (tests). */
export function clearContentCache(): void {
  cache.clear();
}

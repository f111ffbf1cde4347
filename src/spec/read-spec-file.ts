/**
 * Reads one spec file under the size cap and decodes it as strict UTF-8. Never throws:
 * failures come back as `io`, `too-large` or `encoding` with a position.
 *
 * The reads are synchronous: a spec file is small and local, and four promise round trips
 * (open, fstat, read, close) per file were ~120 ms of a cold load of a thousand files.
 */
import { closeSync, constants as fsConstants, fstatSync, openSync, readSync, type BigIntStats } from 'node:fs';
import type { SpecErrorCode } from './types';
import { decodeUtf8 } from './utf8';

export type ReadOutcome = { ok: true; text: string } | { ok: false; code: SpecErrorCode; message: string; line: number; col: number };

/** `noFollow`: a file the walk found as a regular file, so one swapped for a link since is not read. */
export function readSpecFile(absPath: string, maxBytes: number, noFollow = false): Promise<ReadOutcome> {
  return Promise.resolve(readSpecFileSync(absPath, maxBytes, noFollow));
}

/**
 * A regular file's bytes, at most `maxBytes` (one more than its stat's size is asked for, so a
 * file that has grown since the stat is still caught), with the open file's own stat, taken
 * before the read. Opened non-blocking, so a fifo named like a spec cannot hang the loader (the
 * stat then refuses it). Throws what the filesystem throws.
 */
export function readBoundedSync(
  absPath: string,
  maxBytes: number,
  noFollow = false,
): { kind: 'read'; bytes: Buffer; stat: BigIntStats } | { kind: 'not-a-file' } | { kind: 'too-large'; size: number } {
  const fd = openSync(absPath, fsConstants.O_RDONLY | (fsConstants.O_NONBLOCK ?? 0) | (noFollow ? fsConstants.O_NOFOLLOW : 0));
  try {
    const stat = fstatSync(fd, { bigint: true });
    if (!stat.isFile()) return { kind: 'not-a-file' };
    const size = Number(stat.size);
    if (size > maxBytes) return { kind: 'too-large', size };
    const buf = Buffer.alloc(size + 1);
    let total = 0;
    while (total < buf.length) {
      const want = buf.length - total;
      const bytesRead = readSync(fd, buf, total, want, total);
      total += bytesRead;
      // A regular file's short read is its end (no second read to hear 0 bytes: a thousand
      // files' cold load made 2,000 reads of them otherwise).
      if (bytesRead < want) break;
    }
    if (total > maxBytes) return { kind: 'too-large', size: total };
    return { kind: 'read', bytes: buf.subarray(0, total), stat };
  } finally {
    try {
      closeSync(fd);
    } catch {
      // nothing to do: the file was read or refused already
    }
  }
}

export function readSpecFileSync(absPath: string, maxBytes: number, noFollow = false): ReadOutcome {
  try {
    const r = readBoundedSync(absPath, maxBytes, noFollow);
    if (r.kind === 'not-a-file') return { ok: false, code: 'io', message: 'not a regular file', line: 1, col: 1 };
    if (r.kind === 'too-large') return tooLarge(r.size, maxBytes);
    const decoded = decodeUtf8(r.bytes);
    if (!decoded.ok) {
      return {
        ok: false,
        code: 'encoding',
        message: `not valid UTF-8 (bad byte at offset ${decoded.offset})`,
        line: decoded.line,
        col: decoded.col,
      };
    }
    return { ok: true, text: decoded.text };
  } catch (err) {
    return { ok: false, code: 'io', message: `cannot read: ${ioReason(err)}`, line: 1, col: 1 };
  }
}

function tooLarge(size: number, maxBytes: number): ReadOutcome {
  return {
    ok: false,
    code: 'too-large',
    message: `file is larger than ${maxBytes} bytes (${size} bytes)`,
    line: 1,
    col: 1,
  };
}

/** A short reason for a filesystem error, without the path (the caller names the file). */
export function ioReason(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  switch (code) {
    case 'ENOENT':
      return 'no such file or folder';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'is a folder';
    case 'ENOTDIR':
      return 'a parent is not a folder';
    case 'ELOOP':
      return 'too many levels of symbolic links';
    default:
      return typeof code === 'string' ? code : String((err as Error | null)?.message ?? err);
  }
}

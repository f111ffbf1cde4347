/**
 * Crash-safe files. `writeFileAtomic` writes a uniquely named temp file next to the target,
 * fsyncs it, renames it over the target and fsyncs the folder, so a reader (or a restart after a
 * crash) sees either the old content or the new, never a torn write; concurrent writers of one
 * path leave exactly one of their contents. `readJsonFile` reads such a file back.
 */

import { randomBytes } from 'node:crypto';
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';

export interface WriteFileAtomicOptions {
  /** Permission bits of the file, applied exactly (not masked by the umask). Default: 0o666 & ~umask. */
  mode?: number;
}

/** The temp file name for `target`: hidden, in the same folder, unique per call. */
export function tempPathFor(target: string): string {
  const dir = path.dirname(target);
  return path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

/** Replaces `target` with `data` atomically and durably. */
export async function writeFileAtomic(target: string, data: string | Buffer, options: WriteFileAtomicOptions = {}): Promise<void> {
  const temp = tempPathFor(target);
  let renamed = false;
  try {
    const handle = await fs.open(temp, 'wx', options.mode ?? 0o666);
    try {
      if (options.mode !== undefined) await handle.chmod(options.mode);
      await handle.writeFile(data);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, target);
    renamed = true;
    await syncDir(path.dirname(target));
  } finally {
    if (!renamed) await fs.rm(temp, { force: true }).catch(() => undefined);
  }
}

/** fsyncs a folder so a rename in it is durable; a no-op where folders cannot be opened (Windows). */
export async function syncDir(dir: string): Promise<void> {
  let handle: fs.FileHandle;
  try {
    handle = await fs.open(dir, 'r');
  } catch (err) {
    if (isCode(err, 'EISDIR', 'EPERM', 'EACCES')) return;
    throw err;
  }
  try {
    await handle.sync();
  } catch (err) {
    if (!isCode(err, 'EINVAL', 'ENOTSUP', 'EPERM', 'EBADF')) throw err;
  } finally {
    await handle.close();
  }
}

/** A file that exists but does not hold valid JSON. */
export class CorruptJsonError extends Error {
  readonly code = 'CorruptJson';
  constructor(
    readonly file: string,
    readonly detail: string,
  ) {
    super(`${file}: not valid JSON (${detail}); fix or remove the file`);
    this.name = 'CorruptJsonError';
  }
}

/**
 * Parses the JSON file at `file`: undefined when it does not exist, CorruptJsonError when it is
 * not valid JSON. The result is not validated: `T` is the caller's claim about the shape.
 */
export async function readJsonFile<T>(file: string): Promise<T | undefined> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if (isCode(err, 'ENOENT')) return undefined;
    throw err;
  }
  return parseJsonText<T>(file, text);
}

/** `readJsonFile`, synchronously: for bulk reads of many small files (see `mapChunked`). */
export function readJsonFileSync<T>(file: string): T | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    if (isCode(err, 'ENOENT')) return undefined;
    throw err;
  }
  return parseJsonText<T>(file, text);
}

function parseJsonText<T>(file: string, text: string): T {
  try {
    return JSON.parse(text) as T;
  } catch (err) {
    throw new CorruptJsonError(file, text.trim() === '' ? 'empty file' : (err as Error).message);
  }
}

export function isCode(err: unknown, ...codes: string[]): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && codes.includes(code);
}

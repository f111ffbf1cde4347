/**
 * Crash-safe files. `writeFileAtomic` writes a uniquely named temp file next to the target,
 * fsyncs it, renames it over the target and fsyncs the folder, so a reader (or a restart after a
 * crash) sees either the old content or the new, never a torn write; concurrent writers of one
 * path leave exactly one of their contents. `readJsonFile` reads such a file back.
 */

import { randomBytes } from 'node:crypto';
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { pidAlive } from '../util/pid';

export interface WriteFileAtomicOptions {
  /** Permission bits of the file, applied exactly (not masked by the umask). Default: 0o666 & ~umask. */
  mode?: number;
}

/** The temp file name for `target`: hidden, in the same folder, unique per call. */
export function tempPathFor(target: string): string {
  const dir = path.dirname(target);
  return path.join(dir, `.${path.basename(target)}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`);
}

const TEMP_NAME = /^\.(.+)\.(\d+)\.[0-9a-f]{12}\.tmp$/;

/** The target and writer pid of a temp file name made by `tempPathFor`, or undefined for any other name. */
export function parseTempName(name: string): { target: string; pid: number } | undefined {
  const m = TEMP_NAME.exec(name);
  return m ? { target: m[1] as string, pid: Number(m[2]) } : undefined;
}

/**
 * Removes the temp files that interrupted `writeFileAtomic`s left in `dir`: those whose writer
 * is gone, and any older than `maxAgeMs` (a write takes milliseconds; an old one's pid may
 * have been reused, or belong to another host or pid namespace sharing the folder). A live
 * writer's fresh temp file is left alone. Returns the names removed; a missing folder is empty.
 */
export async function removeStaleTemps(dir: string, maxAgeMs: number, now = Date.now()): Promise<string[]> {
  let names: string[];
  try {
    names = await fs.readdir(dir);
  } catch (err) {
    if (isCode(err, 'ENOENT', 'ENOTDIR')) return [];
    throw err;
  }
  const removed: string[] = [];
  for (const name of names) {
    const t = parseTempName(name);
    if (!t) continue;
    const file = path.join(dir, name);
    const st = await fs.lstat(file).catch(() => undefined);
    if (!st?.isFile()) continue;
    if (pidAlive(t.pid) && now - st.mtimeMs < maxAgeMs) continue;
    await fs.rm(file, { force: true });
    removed.push(name);
  }
  return removed;
}

/** Replaces `target` with `data` atomically and durably. */
export async function writeFileAtomic(target: string, data: string | Buffer, options: WriteFileAtomicOptions = {}): Promise<void> {
  await writeFileAtomicWith(target, (handle) => handle.writeFile(data), options);
}

/** As writeFileAtomic, the content written by `write` into the open temp file (a stream, piece by piece). */
export async function writeFileAtomicWith<T>(target: string, write: (handle: fs.FileHandle) => Promise<T>, options: WriteFileAtomicOptions = {}): Promise<T> {
  const temp = tempPathFor(target);
  let renamed = false;
  try {
    const handle = await fs.open(temp, 'wx', options.mode ?? 0o666);
    let out: T;
    try {
      if (options.mode !== undefined) await handle.chmod(options.mode);
      out = await write(handle);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await fs.rename(temp, target);
    renamed = true;
    await syncDir(path.dirname(target));
    return out;
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
    throw new CorruptJsonError(file, jsonProblem(text, (err as Error).message));
  }
}

/**
 * What is wrong with `text` that JSON.parse refused, in words that never quote the text: the
 * file may hold anything (a secret pasted by mistake, bytes that would garble a terminal), and
 * the parser's own message repeats the start of it.
 */
export function jsonProblem(text: string, parserMessage: string): string {
  if (text.trim() === '') return 'empty file';
  // NUL, other control characters, or bytes that are not UTF-8 (decoded as U+FFFD).
  // eslint-disable-next-line no-control-regex -- looking for exactly those characters
  if (/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f\ufffd]/.test(text)) return 'binary content, not text';
  const pos = Number(/at position (\d+)/.exec(parserMessage)?.[1] ?? NaN);
  const end = text.trimEnd().length;
  if (/end of JSON input/.test(parserMessage) || pos >= end) return `truncated: ends inside the JSON after ${Buffer.byteLength(text)} bytes`;
  if (Number.isInteger(pos)) {
    const before = text.slice(0, pos).split('\n');
    return `syntax error at line ${before.length}, column ${(before[before.length - 1] ?? '').length + 1}`;
  }
  return 'syntax error';
}

export function isCode(err: unknown, ...codes: string[]): boolean {
  const code = (err as NodeJS.ErrnoException | undefined)?.code;
  return code !== undefined && codes.includes(code);
}

/**
 * Requests to a running controller (`rerun`, `delete`, `regrade` while it holds the instance):
 * files in the state folder, `<state>/<instance>/requests/`, a folder of mode 0700.
 *
 * - The command writes `<id>.request.json` atomically (a temp file renamed) and waits for
 *   `<id>.answer.json`.
 * - The controller takes a request by renaming it to `<id>.taken.json` (so a command that gives
 *   up can tell "never taken", its unlink succeeds, from "taken", its unlink finds nothing),
 *   carries it out, writes the answer atomically and removes the taken file.
 * - The command reads the answer and removes it.
 *
 * Who may ask: whoever can write the state folder, as whoever can write it can write the status
 * records. The controller checks each request: a regular file (never a link), at most 64 KiB,
 * owned by the controller's own user, by the owner of the state folder, or by root; anything
 * else is answered with a refusal and not carried out.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { isCode, writeFileAtomic } from './atomic-file';

export const REQUEST_COMMANDS = ['rerun', 'delete', 'regrade', 'release'] as const;
export type RequestCommand = (typeof REQUEST_COMMANDS)[number];

export interface ControllerRequest {
  id: string;
  command: RequestCommand;
  names: string[];
  /** `release`: the exit code the sandbox's run ends with (0 to 255). */
  exitCode?: number;
  /** ISO time it was asked. */
  at: string;
  /** Who asked (for the controller's log). */
  by: { pid: number; hostname: string; user: string };
}

/** One attempt's outcome: refused (nothing done), or carried out (the operations its action ran, or the error it ended with). */
export interface RequestResult {
  name: string;
  refused?: string;
  /** The plan's operations for it (types, in order), when an action was carried out. */
  ops?: string[];
  error?: string;
}

export interface RequestAnswer {
  id: string;
  /** The whole request refused (not carried out at all). */
  refused?: string;
  results: RequestResult[];
}

/** Biggest request file read. */
const MAX_BYTES = 64 * 1024;
const ID_RE = /^[0-9a-f]{16,64}$/;
const NAME_RE = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;

export function requestsDir(stateDir: string, instance: string): string {
  return path.join(stateDir, instance, 'requests');
}

const file = (dir: string, id: string, kind: 'request' | 'taken' | 'answer') => path.join(dir, `${id}.${kind}.json`);

/** Writes a request for the controller; returns its id. */
export async function sendRequest(
  stateDir: string,
  instance: string,
  command: RequestCommand,
  names: string[],
  now = new Date(),
  extra: { exitCode?: number } = {},
): Promise<string> {
  const dir = requestsDir(stateDir, instance);
  await fs.mkdir(dir, { recursive: true, mode: 0o700 });
  const id = randomBytes(16).toString('hex');
  const req: ControllerRequest = {
    id,
    command,
    names,
    ...(extra.exitCode !== undefined ? { exitCode: extra.exitCode } : {}),
    at: now.toISOString(),
    by: { pid: process.pid, hostname: os.hostname(), user: safeUser() },
  };
  await writeFileAtomic(file(dir, id, 'request'), JSON.stringify(req) + '\n', { mode: 0o600 });
  return id;
}

function safeUser(): string {
  try {
    return os.userInfo().username;
  } catch {
    return String(process.getuid?.() ?? '?');
  }
}

export type Waited = { answer: RequestAnswer } | { withdrawn: true } | { taken: true };

/**
 * Waits for the answer to request `id`, looking every `pollMs`. Gives up after `timeoutMs`, or
 * as soon as `gone()` says the controller is no longer there: the request is then withdrawn
 * (`withdrawn`: nothing was done) unless the controller took it already (`taken`: it may still
 * carry it out).
 */
export async function awaitAnswer(
  stateDir: string,
  instance: string,
  id: string,
  o: { timeoutMs: number; pollMs?: number; gone?: () => Promise<boolean> },
): Promise<Waited> {
  const dir = requestsDir(stateDir, instance);
  const deadline = Date.now() + o.timeoutMs;
  let lookedGone = Date.now();
  for (;;) {
    const answer = await readAnswer(dir, id);
    if (answer) return { answer };
    const over = Date.now() >= deadline;
    let gone = false;
    if (!over && o.gone && Date.now() - lookedGone >= 1000) {
      lookedGone = Date.now();
      gone = await o.gone().catch(() => false);
    }
    if (over || gone) {
      try {
        await fs.unlink(file(dir, id, 'request'));
        return { withdrawn: true };
      } catch (err) {
        if (!isCode(err, 'ENOENT')) throw err;
      }
      // taken meanwhile: its answer may just have come
      const late = await readAnswer(dir, id);
      return late ? { answer: late } : { taken: true };
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(o.pollMs ?? 100, Math.max(0, deadline - Date.now()))));
  }
}

async function readAnswer(dir: string, id: string): Promise<RequestAnswer | undefined> {
  const p = file(dir, id, 'answer');
  let text: string;
  try {
    text = await readBounded(p);
  } catch (err) {
    if (isCode(err, 'ENOENT')) return undefined;
    throw err;
  }
  await fs.rm(p, { force: true });
  const a = JSON.parse(text) as RequestAnswer;
  return a;
}

/** A regular file's text, at most MAX_BYTES (a link is refused: ELOOP). */
async function readBounded(p: string): Promise<string> {
  const h = await fs.open(p, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const st = await h.stat();
    if (!st.isFile()) throw new Error('not a regular file');
    if (st.size > MAX_BYTES) throw new Error(`over ${MAX_BYTES} bytes`);
    const buf = Buffer.alloc(st.size);
    const { bytesRead } = await h.read(buf, 0, st.size, 0);
    return buf.subarray(0, bytesRead).toString('utf8');
  } finally {
    await h.close();
  }
}

/** A request the controller took: carried out, or refused whole (`refused`). */
export type Taken = { request: ControllerRequest } | { id: string; refused: string };

/** The controller's side: takes every request waiting (oldest name first), checked as the header says. */
export async function takeRequests(stateDir: string, instance: string): Promise<Taken[]> {
  const dir = requestsDir(stateDir, instance);
  const names = await fs.readdir(dir).catch((err: unknown) => {
    if (isCode(err, 'ENOENT', 'ENOTDIR')) return [] as string[];
    throw err;
  });
  const out: Taken[] = [];
  const stateOwner = await fs.stat(stateDir).then(
    (s) => s.uid,
    () => undefined,
  );
  const self = process.getuid?.();
  for (const n of names.sort()) {
    const m = /^(.+)\.request\.json$/.exec(n);
    if (!m || !ID_RE.test(m[1] ?? '')) continue;
    const id = m[1] as string;
    const taken = file(dir, id, 'taken');
    try {
      await fs.rename(path.join(dir, n), taken);
    } catch (err) {
      if (isCode(err, 'ENOENT')) continue; // withdrawn meanwhile
      throw err;
    }
    try {
      const st = await fs.lstat(taken);
      if (!st.isFile()) throw new Error('not a regular file');
      if (self !== undefined && st.uid !== self && st.uid !== stateOwner && st.uid !== 0)
        throw new Error(`owned by uid ${st.uid}, neither the controller's user nor the state folder's owner`);
      out.push({ request: parseRequest(id, await readBounded(taken)) });
    } catch (err) {
      out.push({ id, refused: `request refused: ${(err as Error).message}` });
    }
  }
  return out;
}

function parseRequest(id: string, text: string): ControllerRequest {
  const v = JSON.parse(text) as Partial<ControllerRequest> | null;
  if (typeof v !== 'object' || v === null) throw new Error('not a request');
  if (v.id !== id) throw new Error('its id is not its file name');
  if (!REQUEST_COMMANDS.includes(v.command as RequestCommand)) throw new Error(`unknown command ${JSON.stringify(v.command)}`);
  if (!Array.isArray(v.names) || v.names.length === 0 || !v.names.every((n) => typeof n === 'string' && NAME_RE.test(n)))
    throw new Error('names: a list of attempt names expected');
  if (v.exitCode !== undefined && !(Number.isInteger(v.exitCode) && v.exitCode >= 0 && v.exitCode <= 255))
    throw new Error('exitCode: an integer from 0 to 255 expected');
  return v as ControllerRequest;
}

/** The controller's answer to request `id` (the taken file then goes). */
export async function answerRequest(stateDir: string, instance: string, answer: RequestAnswer): Promise<void> {
  const dir = requestsDir(stateDir, instance);
  await writeFileAtomic(file(dir, answer.id, 'answer'), JSON.stringify(answer) + '\n', { mode: 0o600 });
  await fs.rm(file(dir, answer.id, 'taken'), { force: true });
}

/** Start-up housekeeping: answers nobody read and requests taken by a controller that is gone, older than `maxAgeMs`. */
export async function sweepRequests(stateDir: string, instance: string, maxAgeMs: number, now = Date.now()): Promise<void> {
  const dir = requestsDir(stateDir, instance);
  const names = await fs.readdir(dir).catch(() => [] as string[]);
  for (const n of names) {
    if (!/\.(answer|taken)\.json$/.test(n)) continue;
    const st = await fs.lstat(path.join(dir, n)).catch(() => undefined);
    if (st && now - st.mtimeMs > maxAgeMs) await fs.rm(path.join(dir, n), { force: true });
  }
}

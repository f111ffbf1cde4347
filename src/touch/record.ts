/**
 * A run's record of the execs and copies made into it (docs/CONTRACT.md, "Exec, copy and
 * sandboxes"): `<run folder>/execs.jsonl`, one JSON line when each begins (written, and synced,
 * before anything reaches the container: one cut short still counts) and one when it ends (its
 * exit code, duration, the start of its output redacted as logs are). A run whose record holds
 * an exec or a copy that was not refused is `touched`.
 *
 * The file is opened below the results root with no link followed (util/no-follow.ts), appended
 * to (O_APPEND: lines of several writers never mix), never read whole: its reader counts as it
 * streams.
 */
import { createReadStream, constants as C, promises as fsp } from 'node:fs';
import path from 'node:path';
import type * as Readline from 'node:readline';
import { EXEC } from '../constants';
import { resultsBase } from '../harvest/run-folder';
import type { Touched } from '../status/types';
import { coalesced } from '../util/coalesce';
import { atFd, componentsBelow, openDirBelow } from '../util/no-follow';

export type TouchKind = 'exec' | 'copy-in' | 'copy-out';

/** What begins: the command (or the copy's paths), where it comes from, as asked. */
export interface BeginLine {
  id: string;
  at: string;
  event: 'begin';
  kind: TouchKind;
  /** `cli` (berth exec, berth cp) or `api`. */
  by: 'cli' | 'api';
  cmd?: string[];
  cwd?: string;
  tty?: boolean;
  timeoutSeconds?: number;
  /** A copy: from and to, `NAME:PATH` on the container's side. */
  from?: string;
  to?: string;
}

/** How it ended. */
export interface EndLine {
  id: string;
  at: string;
  event: 'end';
  kind: TouchKind;
  exitCode: number;
  durationMs: number;
  /** Refused before anything reached the container (not running, say): it does not count. */
  refused?: string;
  timedOut?: true;
  /** Past its timeout or its client gone: whether berth's helper killed it in the container. */
  killed?: boolean;
  stdout?: string;
  stderr?: string;
  /** Output past EXEC.recordOutputBytes (each stream) was left out of the line. */
  outputCut?: true;
  /** Why the output is not in the line (a secret that could not be read to redact it). */
  outputNotKept?: string;
  /** A copy: bytes of file data moved. */
  bytes?: number;
  error?: string;
}

export type RecordLine = BeginLine | EndLine;

/** Where a run's record lies: its run folder (the results folder's parent). */
export function recordOf(resultsRoot: string | undefined, resultsDir: string): { base: string; runDir: string; file: string } {
  const runDir = path.dirname(path.resolve(resultsDir));
  return { base: resultsBase(resultsRoot, resultsDir), runDir, file: path.join(runDir, EXEC.record) };
}

/**
 * The syncs of each run's record, one at a time (a group commit): a sync asked while one runs is
 * covered by the one after it, which syncs every line written before it began. 100 execs beginning
 * at once then cost a few syncs, not 100 (each a journal commit the controller's own status
 * writes waited behind: bench row exec-busy-engine).
 */
const syncs = new Map<string, { fh: fsp.FileHandle | undefined; run: () => Promise<void>; waiting: number }>();

async function synced(key: string, fh: fsp.FileHandle): Promise<void> {
  let s = syncs.get(key);
  if (!s) {
    const made = {
      fh: undefined as fsp.FileHandle | undefined,
      waiting: 0,
      // the file's latest handle: every waiter keeps its own open until the sync that covers it has ended
      run: coalesced(async () => {
        const h = made.fh;
        made.fh = undefined;
        if (h) await h.datasync();
      }),
    };
    syncs.set(key, made);
    s = made;
  }
  s.fh = fh;
  s.waiting++;
  try {
    await s.run();
  } finally {
    if (--s.waiting === 0 && syncs.get(key) === s) syncs.delete(key);
  }
}

/** Appends one line (synced when `sync`), the file opened below `base` with no link followed. */
export async function appendLine(where: { base: string; runDir: string }, line: RecordLine, sync = false): Promise<void> {
  const dir = await openDirBelow(where.base, componentsBelow(where.base, where.runDir));
  try {
    const fh = await fsp.open(atFd(dir.fd, EXEC.record), C.O_WRONLY | C.O_APPEND | C.O_CREAT | C.O_NOFOLLOW, 0o644);
    try {
      await fh.write(JSON.stringify(line) + '\n');
      if (sync) await synced(path.join(where.runDir, EXEC.record), fh);
    } finally {
      await fh.close();
    }
  } finally {
    await dir.close();
  }
}

/** The count of a record's file (undefined: none, or nothing in it counts). Streams it; a line that does not parse is skipped. */
export async function readTouched(where: { base: string; runDir: string }): Promise<Touched | undefined> {
  let fh: fsp.FileHandle;
  try {
    const dir = await openDirBelow(where.base, componentsBelow(where.base, where.runDir));
    try {
      fh = await fsp.open(atFd(dir.fd, EXEC.record), C.O_RDONLY | C.O_NOFOLLOW);
    } finally {
      await dir.close();
    }
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const begun = new Map<string, { kind: TouchKind; at: string }>();
  const refused = new Set<string>();
  try {
    // node:readline loaded here, by the command that reads a record (start-up, issue 55)
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const lines = (require('node:readline') as typeof Readline).createInterface({
      input: createReadStream('', { fd: fh.fd, autoClose: false }),
      crlfDelay: Infinity,
    });
    for await (const text of lines) {
      let l: Partial<RecordLine>;
      try {
        l = JSON.parse(text) as Partial<RecordLine>;
      } catch {
        continue;
      }
      if (typeof l.id !== 'string' || typeof l.at !== 'string') continue;
      if (l.event === 'begin' && (l.kind === 'exec' || l.kind === 'copy-in' || l.kind === 'copy-out')) begun.set(l.id, { kind: l.kind, at: l.at });
      else if (l.event === 'end' && typeof (l as EndLine).refused === 'string') refused.add(l.id);
    }
  } finally {
    await fh.close();
  }
  return countTouched([...begun.entries()].filter(([id]) => !refused.has(id)).map(([, b]) => b));
}

/** The count of the execs and copies begun (pure). */
export function countTouched(begun: readonly { kind: TouchKind; at: string }[]): Touched | undefined {
  if (!begun.length) return undefined;
  const ats = begun.map((b) => b.at).sort();
  return {
    execs: begun.filter((b) => b.kind === 'exec').length,
    copies: begun.filter((b) => b.kind !== 'exec').length,
    first: ats[0] as string,
    last: ats[ats.length - 1] as string,
  };
}

export { touchedText } from './text';

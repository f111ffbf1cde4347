/**
 * One writer (a controller, `reconcile --once`, `clean`) per state folder and instance: `<stateDir>/<instance>.lock`, JSON naming its
 * holder (pid, host, start time). A second acquirer is refused with a LockHeldError naming the
 * holder. A lock whose holder is gone (crashed; checked with signal 0 plus the process start time
 * from /proc, so a reused pid does not count) is taken over, and two acquirers racing for a stale
 * lock cannot both win.
 *
 * How it stays exclusive:
 * - The lock's content is written to a private temp file first and published with link(2), an
 *   exclusive create like O_EXCL, so a lock file is never seen half-written.
 * - Taking over stale generation T needs the claim file `<lock>.takeover-<T.token>`, also created
 *   with link(2). Holding it, the taker checks the lock still holds T and renames its own file over
 *   it. Only the claim holder of T can replace T, so exactly one contender wins; the others find the
 *   claim taken (or the lock changed) and see the new holder.
 * - A claim left by a taker that died mid-takeover is itself taken over the same way, by a claim
 *   named after the dead taker's token.
 *
 * A lock file that cannot be read (not JSON, not a lock, a folder or a link where the file should
 * be) names no holder. Alone, the lock cannot tell whether a writer it cannot read still runs, so
 * it refuses (LockUnreadableError). A caller that holds the instance's engine lock
 * (engine-lock.ts), the authority on who writes, knows no other writer runs: with
 * `unreadableIsStale` the file is set aside into `<state>/<instance>/damaged/` as a damaged
 * record is (damaged.ts), by the claim of its generation (its inode and change time) as above,
 * and the lock taken.
 */

import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { systemClock, type Clock } from '../util/clock';
import { CorruptJsonError, isCode, readJsonFile, syncDir, tempPathFor } from './atomic-file';
import { checkStateFolder, setAside } from './damaged';
import { currentProcess, liveness, type HeldLock, type HeldLockOptions, type HolderIdentity, type Self } from './liveness';

/** What a lock file holds. */
export interface LockInfo extends HolderIdentity {
  /** ISO time the lock was taken. */
  startedAt: string;
  instance: string;
  /** Random; identifies this acquisition, so release never removes someone else's lock. */
  token: string;
}

export interface Lock extends HeldLock<LockInfo> {
  readonly path: string;
}

export interface LockOptions extends HeldLockOptions {
  clock?: Clock;
  /**
   * The caller holds the instance's engine lock, so no other berth process writes this
   * instance: an unreadable lock file is no live writer's. It is set aside (with one warning)
   * instead of refused.
   */
  unreadableIsStale?: boolean;
}

/** "pid 1234 on host h since 2025-01-01T00:00:00.000Z" */
export function describeHolder(info: LockInfo): string {
  return `pid ${info.pid} on host ${info.hostname} since ${info.startedAt}`;
}

export class LockHeldError extends Error {
  readonly code = 'LockHeld';
  constructor(
    readonly path: string,
    readonly holder: LockInfo,
    readonly otherHost: boolean,
  ) {
    super(
      `${path}: instance "${holder.instance}" is already run by another berth process: ${describeHolder(holder)}` +
        (otherHost
          ? ` (another host or pid namespace, so berth cannot tell whether it still runs; remove the file if it does not)`
          : `. Wait for it to end, or stop it (kill ${holder.pid}: it leaves its attempts running, the next reconcile adopts them)`),
    );
    this.name = 'LockHeldError';
  }
}

export class LockUnreadableError extends Error {
  readonly code = 'LockUnreadable';
  constructor(
    readonly path: string,
    readonly detail: string,
  ) {
    super(`${path}: unreadable lock file (${detail}); remove it if no berth controller runs for this instance`);
    this.name = 'LockUnreadableError';
  }
}

/** How often acquisition starts over when the lock changes under it before giving up. */
const MAX_ROUNDS = 8;
/** How many dead takers in a row a takeover follows (each one a crash mid-takeover). */
const MAX_CLAIM_DEPTH = 8;
/** A lock file is a few hundred bytes: a bigger one is not read, it is damaged. */
const MAX_LOCK_BYTES = 64 * 1024;

/** Takes `<stateDir>/<instance>.lock`, or throws LockHeldError naming the live holder. */
export async function acquireLock(stateDir: string, instance: string, options: LockOptions = {}): Promise<Lock> {
  if (instance === '' || instance === '.' || instance === '..' || /[/\\\0]/.test(instance)) {
    throw new RangeError(`lock instance must be a plain file name, got ${JSON.stringify(instance)}`);
  }
  checkStateFolder(stateDir);
  await fs.mkdir(stateDir, { recursive: true });
  const lockPath = path.join(stateDir, `${instance}.lock`);
  const self = await currentProcess();
  const info: LockInfo = {
    pid: process.pid,
    hostname: self.hostname,
    startedAt: new Date((options.clock ?? systemClock).now()).toISOString(),
    instance,
    token: randomBytes(16).toString('hex'),
    ...(self.processStart !== undefined && { processStart: self.processStart }),
    ...(self.bootId !== undefined && { bootId: self.bootId }),
    ...(self.pidNamespace !== undefined && { pidNamespace: self.pidNamespace }),
  };
  const candidate = tempPathFor(lockPath);
  await fs.writeFile(candidate, JSON.stringify(info, null, 2) + '\n', { flag: 'wx', flush: true });
  try {
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (await linkExclusive(candidate, lockPath)) return newLock(lockPath, info, undefined, options);
      const seen = await inspectLock(lockPath);
      if (seen === undefined) continue; // released meanwhile: try again
      if ('unreadable' in seen) {
        if (!options.unreadableIsStale) throw new LockUnreadableError(lockPath, seen.unreadable);
        const damagedDir = path.join(stateDir, instance, 'damaged');
        let kept: string | undefined;
        const outcome = await takeOver(lockPath, candidate, seen.generation, self, {
          still: async () => (await generationOf(lockPath)) === seen.generation,
          replace: async () => {
            try {
              kept = await setAside(lockPath, damagedDir, (options.clock ?? systemClock).now());
            } catch (err) {
              throw new Error(
                `${lockPath}: unreadable lock file (${seen.unreadable}) could not be set aside into ${damagedDir} (${(err as NodeJS.ErrnoException).code ?? String(err)}); ` +
                  `no other berth process holds the instance's engine lock, so remove the file`,
                { cause: err },
              );
            }
            return linkExclusive(candidate, lockPath);
          },
        });
        if (kept) {
          options.logger?.warn(
            `${lockPath}: unreadable lock file (${seen.unreadable}) set aside as ${kept}: the instance's engine lock, held by this berth, shows no other writer`,
          );
        }
        if (outcome === 'won') return newLock(lockPath, info, undefined, options);
        if (outcome !== 'retry') throw new LockHeldError(lockPath, outcome, false);
        continue;
      }
      const holder = seen.holder;
      const state = await liveness(holder, self);
      if (state !== 'dead') throw new LockHeldError(lockPath, holder, state === 'other-host');
      const outcome = await takeOver(lockPath, candidate, holder.token, self, {
        still: async () => (await readLock(lockPath))?.token === holder.token,
        replace: async () => {
          await fs.rename(candidate, lockPath);
          await syncDir(path.dirname(lockPath));
          return true;
        },
      });
      if (outcome === 'won') {
        options.logger?.warn(`${lockPath}: took over a stale lock: ${describeHolder(holder)} is no longer running`);
        return newLock(lockPath, info, holder, options);
      }
      if (outcome !== 'retry') throw new LockHeldError(lockPath, outcome, false);
    }
    throw new Error(`${lockPath}: could not take the lock: it kept changing while berth tried`);
  } finally {
    await fs.rm(candidate, { force: true });
  }
}

/** What holds the lock path: a holder, an unreadable file (what is wrong, and its generation), or nothing. */
async function inspectLock(file: string): Promise<{ holder: LockInfo } | { unreadable: string; generation: string } | undefined> {
  let st;
  try {
    st = await fs.lstat(file, { bigint: true });
  } catch (err) {
    if (isCode(err, 'ENOENT')) return undefined;
    throw err;
  }
  const generation = `damaged-${st.ino}-${st.ctimeNs}`;
  if (st.isSymbolicLink()) return { unreadable: 'a symbolic link, not a file', generation };
  if (st.isDirectory()) return { unreadable: 'a folder, not a file', generation };
  if (!st.isFile()) return { unreadable: 'not a regular file', generation };
  if (st.size > MAX_LOCK_BYTES) return { unreadable: `${st.size} bytes, more than any lock file`, generation };
  try {
    const holder = await readLock(file);
    return holder ? { holder } : undefined;
  } catch (err) {
    if (err instanceof LockUnreadableError) return { unreadable: err.detail, generation };
    throw err;
  }
}

/** The generation of the file at the lock path (as inspectLock names it), undefined when there is none. */
async function generationOf(file: string): Promise<string | undefined> {
  try {
    const st = await fs.lstat(file, { bigint: true });
    return `damaged-${st.ino}-${st.ctimeNs}`;
  } catch (err) {
    if (isCode(err, 'ENOENT')) return undefined;
    throw err;
  }
}

/**
 * Replaces the stale lock of generation `guard` (a dead holder's token, or an unreadable file's
 * generation), holding the takeover claim for it: `still` checks the lock is that generation yet,
 * `replace` puts `candidate` in its place (false when someone else's lock got there first).
 * Returns 'won', 'retry' when the lock changed meanwhile, or the live contender taking it over.
 */
async function takeOver(
  lockPath: string,
  candidate: string,
  guard: string,
  self: Self,
  stale: { still: () => Promise<boolean>; replace: () => Promise<boolean> },
): Promise<'won' | 'retry' | LockInfo> {
  const deadClaims: string[] = [];
  let claim: string | undefined;
  for (let depth = 0; depth < MAX_CLAIM_DEPTH && claim === undefined; depth++) {
    const claimPath = `${lockPath}.takeover-${guard}`;
    if (await linkExclusive(candidate, claimPath)) {
      claim = claimPath;
      break;
    }
    const taker = await readLock(claimPath);
    if (taker === undefined) return 'retry'; // its taker finished: the lock has changed
    if ((await liveness(taker, self)) !== 'dead') return taker;
    deadClaims.push(claimPath);
    guard = taker.token;
  }
  if (claim === undefined) throw new Error(`${lockPath}: too many abandoned takeover claims; remove ${lockPath}.takeover-*`);
  let won: boolean;
  try {
    if (!(await stale.still())) return 'retry';
    won = await stale.replace();
  } finally {
    await fs.rm(claim, { force: true });
  }
  // Claims of dead takers guard a generation that no longer exists: nobody can use them now.
  for (const dead of deadClaims) await fs.rm(dead, { force: true });
  return won ? 'won' : 'retry';
}

function newLock(lockPath: string, info: LockInfo, stale: LockInfo | undefined, options: LockOptions): Lock {
  let released = false;
  const isHeld = async (): Promise<boolean> => {
    try {
      return (await readLock(lockPath))?.token === info.token;
    } catch (err) {
      if (err instanceof LockUnreadableError) return false;
      throw err;
    }
  };
  return {
    path: lockPath,
    info,
    stale,
    isHeld,
    async release() {
      if (released) return false;
      released = true;
      if (!(await isHeld())) {
        options.logger?.warn(`${lockPath}: lock is no longer ours at release; leaving the file alone`);
        return false;
      }
      await fs.rm(lockPath, { force: true });
      return true;
    },
  };
}

/** link(2): creates `to` only if it does not exist. */
async function linkExclusive(from: string, to: string): Promise<boolean> {
  try {
    await fs.link(from, to);
    return true;
  } catch (err) {
    if (isCode(err, 'EEXIST')) return false;
    throw err;
  }
}

/** The path of the instance's lock file in the state folder. */
export function lockFilePath(stateDir: string, instance: string): string {
  return path.join(stateDir, `${instance}.lock`);
}

/**
 * Removes `<stateDir>/<instance>.lock` whoever holds it (`berth unlock`, which judged the holder
 * first): a file or a link is unlinked (never followed), a folder in its place removed. True when
 * there was one.
 */
export async function breakLockFile(stateDir: string, instance: string): Promise<boolean> {
  const file = lockFilePath(stateDir, instance);
  try {
    const st = await fs.lstat(file);
    if (st.isDirectory()) await fs.rm(file, { recursive: true, force: true });
    else await fs.unlink(file);
    return true;
  } catch (err) {
    if (isCode(err, 'ENOENT') || isCode(err, 'ENOTDIR')) return false;
    throw err;
  }
}

/** The holder named by `<stateDir>/<instance>.lock`; undefined when there is none (LockUnreadableError when it cannot be read). */
export function readLockFile(stateDir: string, instance: string): Promise<LockInfo | undefined> {
  return readLock(path.join(stateDir, `${instance}.lock`));
}

/** The lock file's content; undefined when there is none. */
async function readLock(file: string): Promise<LockInfo | undefined> {
  let value: unknown;
  try {
    value = await readJsonFile<unknown>(file);
  } catch (err) {
    if (err instanceof CorruptJsonError) throw new LockUnreadableError(file, `not JSON: ${err.detail}`);
    throw err;
  }
  if (value === undefined) return undefined;
  const v = value as Partial<Record<keyof LockInfo, unknown>> | null;
  if (
    typeof v !== 'object' ||
    v === null ||
    !(typeof v.pid === 'number' && Number.isInteger(v.pid) && v.pid > 0) ||
    typeof v.hostname !== 'string' ||
    typeof v.startedAt !== 'string' ||
    typeof v.instance !== 'string' ||
    typeof v.token !== 'string' ||
    !/^[0-9a-f]{1,64}$/.test(v.token) ||
    (v.processStart !== undefined && typeof v.processStart !== 'string') ||
    (v.bootId !== undefined && typeof v.bootId !== 'string') ||
    (v.pidNamespace !== undefined && typeof v.pidNamespace !== 'string')
  ) {
    throw new LockUnreadableError(file, 'missing or malformed pid, hostname, startedAt, instance or token');
  }
  return v as LockInfo;
}

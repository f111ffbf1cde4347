/**
 * Whether the process that holds a lock still runs: by pid (signal 0) plus the process start time
 * from /proc, so a reused pid does not count, and the boot id, so a pid from before a reboot does
 * not either. Only a holder on this host, in this pid namespace, can be judged (berth in two
 * containers may share a host name and even a pid). Used by the state folder's lock file
 * (lock.ts) and the engine-side instance lock (engine-lock.ts).
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import { isCode } from './atomic-file';

/** What a lock records about its holding process. */
export interface HolderIdentity {
  pid: number;
  hostname: string;
  /** The holder's start time in clock ticks after boot (/proc/<pid>/stat field 22), where known. */
  processStart?: string;
  /** /proc/sys/kernel/random/boot_id of the holder's host, where known. */
  bootId?: string;
  /** The holder's pid namespace (the target of /proc/self/ns/pid), where known. */
  pidNamespace?: string;
}

/** A lock this process holds: the state folder's lock file or the engine-side instance lock. */
export interface HeldLock<I extends HolderIdentity> {
  readonly info: I;
  /** The previous holder, when the lock was taken over from a process that is gone. */
  readonly stale: I | undefined;
  /** Whether the lock still names this holder. */
  isHeld(): Promise<boolean>;
  /** Removes the lock if it is still ours; true when it did. Safe to call more than once. */
  release(): Promise<boolean>;
}

/** What taking either lock is told. */
export interface HeldLockOptions {
  clock?: { now(): number };
  /** Told when a stale lock is taken over or a lock turns out to be gone at release. */
  logger?: { warn(message: string): void };
}

export interface Self {
  hostname: string;
  processStart: string | undefined;
  bootId: string | undefined;
  pidNamespace: string | undefined;
}

export async function currentProcess(): Promise<Self> {
  return {
    hostname: os.hostname(),
    processStart: await processStartOf(process.pid),
    bootId: await readTrimmed('/proc/sys/kernel/random/boot_id'),
    pidNamespace: await fs.readlink('/proc/self/ns/pid').catch(() => undefined),
  };
}

/**
 * 'alive' when the holder's process runs, 'dead' when it provably does not (no such pid, another
 * boot, or the pid now belongs to a process that started later), 'other-host' when it cannot tell
 * (another host, or another pid namespace on this one).
 */
export async function liveness(holder: HolderIdentity, self: Self): Promise<'alive' | 'dead' | 'other-host'> {
  if (holder.hostname !== self.hostname) return 'other-host';
  if (holder.bootId !== undefined && self.bootId !== undefined && holder.bootId !== self.bootId) return 'dead';
  if (holder.pidNamespace !== undefined && self.pidNamespace !== undefined && holder.pidNamespace !== self.pidNamespace) return 'other-host';
  try {
    process.kill(holder.pid, 0);
  } catch (err) {
    if (isCode(err, 'ESRCH')) return 'dead';
    if (!isCode(err, 'EPERM')) throw err;
  }
  if (holder.processStart === undefined) return 'alive';
  const start = await processStartOf(holder.pid);
  return start === undefined || start === holder.processStart ? 'alive' : 'dead';
}

/** Field 22 of /proc/<pid>/stat (start time in clock ticks after boot); undefined without /proc. */
export async function processStartOf(pid: number): Promise<string | undefined> {
  const stat = await readTrimmed(`/proc/${pid}/stat`);
  if (stat === undefined) return undefined;
  // Field 2 is "(comm)" and may hold spaces or parentheses: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[19];
}

async function readTrimmed(file: string): Promise<string | undefined> {
  try {
    return (await fs.readFile(file, 'utf8')).trim();
  } catch {
    return undefined;
  }
}

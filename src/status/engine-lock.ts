/**
 * The instance's single-writer lock, kept on the engine it guards: the volume
 * `berth.lock.<instance>` (constants.ts `lockVolumeName`), whose labels name the holder (a random
 * token, pid, host, boot id, process start time, state folder, command, since when; nothing
 * secret). Every command that changes the engine for an instance holds it, so two state folders,
 * or a `reconcile --once` beside a controller, never drive one instance on one engine at once.
 * The lock file in the state folder (lock.ts) only sees writers that share the folder.
 *
 * How it stays exclusive:
 * - Creating a volume whose name exists returns the existing volume: the engine serializes
 *   creates of one name and keeps the first one's labels (labels never change afterwards). So
 *   create-then-inspect tells every contender the same holder; the one whose token comes back won.
 *   (Measured on engine 20.10: 50 rounds of 20 concurrent creates, and 15 rounds from 20
 *   processes: every contender always saw one and the same token, the stored one.)
 * - A holder on this host that is gone (liveness.ts) is taken over: the taker of stale generation
 *   T first wins the claim volume `berth.lock-takeover.<instance>.<T>` the same way, checks the lock
 *   still holds T, removes it and creates its own. Only T's claim holder removes T, so a lock is
 *   never removed from under a live holder; a fresh acquirer may still create the lock between
 *   that removal and the taker's create, and then it, not the taker, holds it: one holder either way.
 * - A claim left by a taker that died is followed by a claim named after the dead taker's token.
 * - A holder on another host (or in another pid namespace) cannot be judged: refused, with how to
 *   break the lock deliberately.
 */

import { randomBytes } from 'node:crypto';
import { LOCK_LABELS, lockClaimName, lockVolumeName } from '../constants';
import { describeEngineError, isNotFound } from '../engine/errors';
import type { Engine, Labels } from '../engine/types';
import { systemClock, type Clock } from '../util/clock';
import { currentProcess, liveness, type HeldLock, type HeldLockOptions, type HolderIdentity, type Self } from './liveness';

/** What the lock volume's labels say about its holder. */
export interface EngineLockInfo extends HolderIdentity {
  instance: string;
  /** Random; identifies this acquisition, so release never removes someone else's lock. */
  token: string;
  /** The holder's state folder (absolute). */
  stateDir: string;
  /** What holds it, e.g. `reconcile --once`. */
  command: string;
  /** ISO time the lock was taken. */
  startedAt: string;
}

/** release() never throws: an engine that cannot be reached keeps the lock, for the next berth to take over. */
export interface EngineLock extends HeldLock<EngineLockInfo> {
  /** The lock volume's name. */
  readonly volume: string;
}

export interface EngineLockOptions extends HeldLockOptions {
  stateDir: string;
  command: string;
  clock?: Clock;
}

/** "berth reconcile --once, pid 1234 on host h, state folder /x/.berth, since 2025-01-01T00:00:00.000Z" */
export function describeEngineHolder(info: EngineLockInfo): string {
  return `berth ${info.command}, pid ${info.pid} on host ${info.hostname}, state folder ${info.stateDir}, since ${info.startedAt}`;
}

/** How to break a lock whose holder berth cannot judge. */
export function unlockHint(instance: string): string {
  return `berth --instance ${instance} unlock --force`;
}

export class EngineLockHeldError extends Error {
  readonly code = 'EngineLockHeld';
  constructor(
    readonly volume: string,
    readonly holder: EngineLockInfo,
    readonly otherHost: boolean,
  ) {
    super(
      `instance "${holder.instance}" is held on this engine by another berth process: ${describeEngineHolder(holder)}` +
        (otherHost
          ? ` (on another host or in another pid namespace, so berth cannot tell whether it still runs; if it does not, break the lock with \`${unlockHint(holder.instance)}\`)`
          : `. Wait for it to end, or stop it (kill ${holder.pid}: it leaves its attempts running, the next reconcile adopts them); a controller takes rerun, delete and regrade itself`),
    );
    this.name = 'EngineLockHeldError';
  }
}

export class EngineLockUnreadableError extends Error {
  readonly code = 'EngineLockUnreadable';
  constructor(
    readonly volume: string,
    readonly instance: string,
  ) {
    super(
      `volume ${volume} holds instance "${instance}"'s lock name but not berth's lock labels; if no berth process drives this instance, remove it with \`${unlockHint(instance)}\``,
    );
    this.name = 'EngineLockUnreadableError';
  }
}

/** How often acquisition starts over when the lock changes under it before giving up. */
const MAX_ROUNDS = 8;
/** How many dead takers in a row a takeover follows (each one a crash mid-takeover). */
const MAX_CLAIM_DEPTH = 8;

/** Tokens of the engine locks this process holds or is acquiring now (not yet released or given up). */
const heldHere = new Set<string>();

/**
 * `liveness`, plus one case only this process can judge: a holder that is this very process
 * (pid, start time, host, namespace) with a token it no longer holds was left by an earlier
 * command of this process whose release could not reach the engine: stale.
 */
async function holderState(holder: EngineLockInfo, self: Self): Promise<'alive' | 'dead' | 'other-host'> {
  const state = await liveness(holder, self);
  const thisProcess = holder.pid === process.pid && holder.processStart === self.processStart && holder.hostname === self.hostname;
  return state === 'alive' && thisProcess && !heldHere.has(holder.token) ? 'dead' : state;
}

/** Takes the instance's engine lock, or throws EngineLockHeldError naming the live holder. */
export async function acquireEngineLock(engine: Engine, instance: string, options: EngineLockOptions): Promise<EngineLock> {
  const volume = lockVolumeName(instance);
  const self = await currentProcess();
  const info: EngineLockInfo = {
    pid: process.pid,
    hostname: self.hostname,
    ...(self.processStart !== undefined && { processStart: self.processStart }),
    ...(self.bootId !== undefined && { bootId: self.bootId }),
    ...(self.pidNamespace !== undefined && { pidNamespace: self.pidNamespace }),
    instance,
    token: randomBytes(16).toString('hex'),
    stateDir: options.stateDir,
    command: options.command,
    startedAt: new Date((options.clock ?? systemClock).now()).toISOString(),
  };
  heldHere.add(info.token);
  try {
    return await acquire(engine, volume, info, self, options);
  } catch (err) {
    heldHere.delete(info.token);
    throw err;
  }
}

async function acquire(engine: Engine, volume: string, info: EngineLockInfo, self: Self, options: EngineLockOptions): Promise<EngineLock> {
  const instance = info.instance;
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const holder = await createOrGet(engine, volume, toLabels(info, LOCK_LABELS.lock), instance);
    if (holder === undefined) continue; // released between create and inspect: try again
    if (holder.token === info.token) return won(engine, volume, info, undefined, self, options);
    const state = await holderState(holder, self);
    if (state !== 'dead') throw new EngineLockHeldError(volume, holder, state === 'other-host');
    const outcome = await takeOver(engine, volume, info, holder, self);
    if (outcome === 'won') {
      options.logger?.warn(`instance "${instance}": took over a stale engine lock: ${describeEngineHolder(holder)} is no longer running`);
      return won(engine, volume, info, holder, self, options);
    }
    if (outcome !== 'retry') throw new EngineLockHeldError(volume, outcome, false);
  }
  throw new Error(`instance "${instance}": could not take the engine lock ${volume}: it kept changing while berth tried`);
}

/** Removes the instance's lock volume whoever holds it (`berth unlock --force`); returns the holder it removed. */
export async function breakEngineLock(engine: Engine, instance: string): Promise<EngineLockInfo | 'unreadable' | undefined> {
  const volume = lockVolumeName(instance);
  let holder: EngineLockInfo | 'unreadable' | undefined;
  try {
    holder = await readHolder(engine, volume, instance);
  } catch (err) {
    if (!(err instanceof EngineLockUnreadableError)) throw err;
    holder = 'unreadable';
  }
  if (holder !== undefined) await engine.volumes.remove(volume);
  return holder;
}

/** The lock's holder, undefined when there is no lock. */
export async function readEngineLock(engine: Engine, instance: string): Promise<EngineLockInfo | undefined> {
  return readHolder(engine, lockVolumeName(instance), instance);
}

/**
 * Replaces the stale lock `stale` with ours, holding the takeover claim for its generation.
 * Returns 'won', 'retry' when the lock changed meanwhile, or the live contender that holds it.
 */
async function takeOver(engine: Engine, volume: string, info: EngineLockInfo, stale: EngineLockInfo, self: Self): Promise<'won' | 'retry' | EngineLockInfo> {
  const deadClaims: string[] = [];
  let guard = stale;
  let claim: string | undefined;
  for (let depth = 0; depth < MAX_CLAIM_DEPTH && claim === undefined; depth++) {
    const name = lockClaimName(info.instance, guard.token);
    const taker = await createOrGet(engine, name, toLabels(info, LOCK_LABELS.claim), info.instance);
    if (taker === undefined) return 'retry'; // its taker finished: the lock has changed
    if (taker.token === info.token) {
      claim = name;
      break;
    }
    if ((await holderState(taker, self)) !== 'dead') return taker;
    deadClaims.push(name);
    guard = taker;
  }
  if (claim === undefined) {
    throw new Error(
      `instance "${info.instance}": too many abandoned takeover claims of the engine lock; remove the volumes named berth.lock-takeover.${info.instance}.*`,
    );
  }
  let outcome: 'won' | 'retry' | EngineLockInfo;
  try {
    if ((await readHolder(engine, volume, info.instance))?.token !== stale.token) return 'retry';
    await engine.volumes.remove(volume);
    const now = await createOrGet(engine, volume, toLabels(info, LOCK_LABELS.lock), info.instance);
    outcome = now === undefined ? 'retry' : now.token === info.token ? 'won' : now;
  } finally {
    await engine.volumes.remove(claim);
  }
  // Claims of dead takers guard a generation that no longer exists: nobody can use them now.
  for (const dead of deadClaims) await engine.volumes.remove(dead);
  return outcome;
}

async function won(
  engine: Engine,
  volume: string,
  info: EngineLockInfo,
  stale: EngineLockInfo | undefined,
  self: Self,
  options: EngineLockOptions,
): Promise<EngineLock> {
  // Housekeeping, not part of taking the lock: it runs while the holder starts its work, and the
  // release waits for it. A claim it could not remove stays for the next holder to sweep.
  const swept = sweepDeadClaims(engine, info, self).catch((err: unknown) => {
    options.logger?.warn(`instance "${info.instance}": could not sweep abandoned takeover claims of the engine lock: ${describeEngineError(err)}`);
  });
  let released = false;
  const isHeld = async (): Promise<boolean> => {
    try {
      return (await readHolder(engine, volume, info.instance))?.token === info.token;
    } catch (err) {
      if (err instanceof EngineLockUnreadableError) return false;
      throw err;
    }
  };
  return {
    volume,
    info,
    stale,
    isHeld,
    async release() {
      if (released) return false;
      released = true;
      heldHere.delete(info.token);
      await swept;
      try {
        if (!(await isHeld())) {
          options.logger?.warn(`instance "${info.instance}": the engine lock ${volume} is no longer ours at release; leaving it alone`);
          return false;
        }
        return await engine.volumes.remove(volume);
      } catch (err) {
        // The engine is gone or refuses: the lock stays, and the next berth takes it over as stale.
        options.logger?.warn(`instance "${info.instance}": could not release the engine lock ${volume}: ${describeEngineError(err)}`);
        return false;
      }
    },
  };
}

/**
 * Claims left by takers that died after their takeover ended (between creating the new lock and
 * removing their claim) guard generations that are gone now that we hold the lock: removed, so
 * they do not pile up. Claims of live takers are theirs to remove.
 */
async function sweepDeadClaims(engine: Engine, info: EngineLockInfo, self: Self): Promise<void> {
  for (const v of await engine.volumes.list([`${LOCK_LABELS.claim}=${info.instance}`])) {
    const taker = parseLabels(v.labels, LOCK_LABELS.claim, info.instance);
    if (taker && (await holderState(taker, self)) === 'dead') await engine.volumes.remove(v.name);
  }
}

/** Creates the volume unless it exists, then reads who holds it; undefined if it vanished meanwhile. */
async function createOrGet(engine: Engine, name: string, labels: Labels, instance: string): Promise<EngineLockInfo | undefined> {
  await engine.volumes.create({ name, labels });
  return readHolder(engine, name, instance);
}

async function readHolder(engine: Engine, name: string, instance: string): Promise<EngineLockInfo | undefined> {
  let labels: Labels;
  try {
    labels = (await engine.volumes.inspect(name)).labels;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
  const kind = labels[LOCK_LABELS.lock] !== undefined ? LOCK_LABELS.lock : LOCK_LABELS.claim;
  const info = parseLabels(labels, kind, instance);
  if (!info) throw new EngineLockUnreadableError(name, instance);
  return info;
}

function toLabels(info: EngineLockInfo, kind: typeof LOCK_LABELS.lock | typeof LOCK_LABELS.claim): Labels {
  return {
    [kind]: info.instance,
    [LOCK_LABELS.token]: info.token,
    [LOCK_LABELS.pid]: String(info.pid),
    [LOCK_LABELS.hostname]: info.hostname,
    ...(info.bootId !== undefined && { [LOCK_LABELS.bootId]: info.bootId }),
    ...(info.processStart !== undefined && { [LOCK_LABELS.processStart]: info.processStart }),
    ...(info.pidNamespace !== undefined && { [LOCK_LABELS.pidNamespace]: info.pidNamespace }),
    [LOCK_LABELS.stateDir]: info.stateDir,
    [LOCK_LABELS.command]: info.command,
    [LOCK_LABELS.startedAt]: info.startedAt,
  };
}

function parseLabels(labels: Labels, kind: string, instance: string): EngineLockInfo | undefined {
  const pid = Number(labels[LOCK_LABELS.pid]);
  const token = labels[LOCK_LABELS.token];
  const hostname = labels[LOCK_LABELS.hostname];
  if (labels[kind] !== instance || !Number.isInteger(pid) || pid <= 0 || !token || !/^[0-9a-f]{1,64}$/.test(token) || !hostname) return undefined;
  const bootId = labels[LOCK_LABELS.bootId];
  const processStart = labels[LOCK_LABELS.processStart];
  const pidNamespace = labels[LOCK_LABELS.pidNamespace];
  return {
    pid,
    hostname,
    ...(processStart !== undefined && { processStart }),
    ...(pidNamespace !== undefined && { pidNamespace }),
    ...(bootId !== undefined && { bootId }),
    instance,
    token,
    stateDir: labels[LOCK_LABELS.stateDir] ?? '?',
    command: labels[LOCK_LABELS.command] ?? '?',
    startedAt: labels[LOCK_LABELS.startedAt] ?? '?',
  };
}

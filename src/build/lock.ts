/**
 * One build of a build hash at a time across berths (processes, instances, state folders) on one
 * engine: the volume `berth.build-lock.<16 hex>` on the engine (as the instance's engine lock,
 * src/status/engine-lock.ts: creating a volume whose name exists returns the existing one, so
 * create-then-inspect tells every contender the same holder). Its labels name the holder (pid,
 * host, boot, process start, pid namespace, instance, since; LOCK_LABELS' identity). A berth that
 * finds another live one holding it waits for its image; a holder on this host that is gone
 * (liveness.ts) is replaced: the lock is removed only while it still names that dead holder (read
 * again just before), so a live holder's lock is not removed but in the instant between that read
 * and the removal (two takers of one dead lock: the image is then built twice, harmlessly). A holder
 * on another host cannot be judged: waited for, its message says how to remove the volume.
 */
import { randomBytes } from 'node:crypto';
import { BUILD, BUILD_LOCK_LABELS, LOCK_LABELS } from '../constants';
import { isNotFound } from '../engine/errors';
import type { Engine, Labels } from '../engine/types';
import { currentProcess, liveness, type HolderIdentity } from '../status/liveness';

export interface BuildLockHolder extends HolderIdentity {
  token: string;
  instance: string;
  startedAt: string;
}

export type BuildLockAttempt =
  | { held: true; release(): Promise<void> }
  /** Held by another berth: who (for the attempts' message), and whether it may be judged dead later (this host). */
  | { held: false; holder: string };

export const buildLockName = (hash: string): string => `${BUILD.lockPrefix}${hash.slice(0, BUILD.hexLength)}`;

function labelsOf(hash: string, h: BuildLockHolder): Labels {
  return {
    [BUILD_LOCK_LABELS.lock]: hash,
    [BUILD_LOCK_LABELS.instance]: h.instance,
    [LOCK_LABELS.token]: h.token,
    [LOCK_LABELS.pid]: String(h.pid),
    [LOCK_LABELS.hostname]: h.hostname,
    [LOCK_LABELS.startedAt]: h.startedAt,
    ...(h.processStart !== undefined ? { [LOCK_LABELS.processStart]: h.processStart } : {}),
    ...(h.bootId !== undefined ? { [LOCK_LABELS.bootId]: h.bootId } : {}),
    ...(h.pidNamespace !== undefined ? { [LOCK_LABELS.pidNamespace]: h.pidNamespace } : {}),
  };
}

function holderOf(labels: Labels): BuildLockHolder | undefined {
  const token = labels[LOCK_LABELS.token];
  const pid = Number(labels[LOCK_LABELS.pid]);
  if (!token || !Number.isInteger(pid)) return undefined;
  const opt = (k: string) => labels[k];
  return {
    token,
    pid,
    hostname: labels[LOCK_LABELS.hostname] ?? '',
    instance: labels[BUILD_LOCK_LABELS.instance] ?? '',
    startedAt: labels[LOCK_LABELS.startedAt] ?? '',
    ...(opt(LOCK_LABELS.processStart) !== undefined ? { processStart: opt(LOCK_LABELS.processStart) as string } : {}),
    ...(opt(LOCK_LABELS.bootId) !== undefined ? { bootId: opt(LOCK_LABELS.bootId) as string } : {}),
    ...(opt(LOCK_LABELS.pidNamespace) !== undefined ? { pidNamespace: opt(LOCK_LABELS.pidNamespace) as string } : {}),
  };
}

export const describeBuildHolder = (h: BuildLockHolder): string =>
  `another berth (pid ${h.pid} on host ${h.hostname}, instance ${h.instance}, since ${h.startedAt})`;

/** The lock's holder now, undefined when there is no lock (or it says no holder). */
async function readHolder(engine: Engine, name: string): Promise<BuildLockHolder | undefined> {
  try {
    return holderOf((await engine.volumes.inspect(name)).labels);
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** Takes the build lock of `hash`, or says who holds it. */
export async function tryBuildLock(engine: Engine, hash: string, instance: string, now: () => number = Date.now): Promise<BuildLockAttempt> {
  const name = buildLockName(hash);
  const self = await currentProcess();
  const me: BuildLockHolder = {
    token: randomBytes(16).toString('hex'),
    pid: process.pid,
    hostname: self.hostname,
    instance,
    startedAt: new Date(now()).toISOString(),
    ...(self.processStart !== undefined ? { processStart: self.processStart } : {}),
    ...(self.bootId !== undefined ? { bootId: self.bootId } : {}),
    ...(self.pidNamespace !== undefined ? { pidNamespace: self.pidNamespace } : {}),
  };
  for (let round = 0; round < 4; round++) {
    await engine.volumes.create({ name, labels: labelsOf(hash, me) });
    const holder = await readHolder(engine, name);
    if (holder === undefined) continue; // removed between the create and the read: again
    if (holder.token === me.token) {
      return {
        held: true,
        release: async () => {
          // only while it is still ours
          const now = await readHolder(engine, name).catch(() => undefined);
          if (now?.token === me.token) await engine.volumes.remove(name).catch(() => false);
        },
      };
    }
    const state = await liveness(holder, self);
    if (state !== 'dead') {
      const where = state === 'other-host' ? ` (on another host: if it no longer runs, remove the volume ${name})` : '';
      return { held: false, holder: `${describeBuildHolder(holder)}${where}` };
    }
    // a holder that is gone: its lock goes, if it still names it
    const again = await readHolder(engine, name);
    if (again?.token === holder.token) await engine.volumes.remove(name).catch(() => false);
  }
  return { held: false, holder: `another berth (the lock ${name} kept changing)` };
}

/** Whether a build lock of `hash` is there now. */
export async function buildLockHeld(engine: Engine, hash: string): Promise<boolean> {
  return (await readHolder(engine, buildLockName(hash))) !== undefined;
}

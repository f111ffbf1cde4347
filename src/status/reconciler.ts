/**
 * Whether something reconciles an instance into a state folder now, for the commands that wait
 * on its status records (`berth wait`): a live holder of the state folder's lock (lock.ts), or
 * of the engine-side lock (engine-lock.ts) with this state folder. A holder berth cannot judge
 * (another host or pid namespace, a lock that cannot be read) counts as one. The engine is asked
 * only when the lock file names no live holder; when it cannot be asked, the lock file decides
 * (a writer of this folder holds both locks).
 */
import path from 'node:path';
import { isEngineDown } from '../engine/errors';
import type { Engine } from '../engine/types';
import { describeEngineHolder, readEngineLock } from './engine-lock';
import { currentProcess, liveness } from './liveness';
import { readLockFile } from './lock';

export type Reconciler =
  /** Something (maybe) writes this state folder's records for the instance. */
  | { kind: 'this-folder' }
  /** A live berth drives the instance with another state folder: these records do not change. */
  | { kind: 'other-folder'; holder: string; stateDir: string }
  /** Nobody holds either lock. */
  | { kind: 'none' };

export async function reconcilerOf(stateDir: string, instance: string, engine: Engine | undefined): Promise<Reconciler> {
  const self = await currentProcess();
  try {
    const file = await readLockFile(stateDir, instance);
    if (file && (await liveness(file, self)) !== 'dead') return { kind: 'this-folder' };
  } catch {
    return { kind: 'this-folder' }; // unreadable: cannot be judged
  }
  if (!engine) return { kind: 'none' };
  let held;
  try {
    held = await readEngineLock(engine, instance);
  } catch (err) {
    if (isEngineDown(err)) return { kind: 'none' }; // the lock file is the only word left
    return { kind: 'this-folder' };
  }
  if (!held || (await liveness(held, self)) === 'dead') return { kind: 'none' };
  if (path.resolve(held.stateDir) === path.resolve(stateDir)) return { kind: 'this-folder' };
  return { kind: 'other-folder', holder: describeEngineHolder(held), stateDir: held.stateDir };
}

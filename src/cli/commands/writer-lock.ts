/**
 * The locks of a command that changes the engine for an instance (`reconcile`, `reconcile
 * --once`, `clean`): the state folder's lock file (src/status/lock.ts: one writer per folder and
 * instance) and the engine-side instance lock (src/status/engine-lock.ts: one writer per instance
 * on the engine, whatever its state folder). A command that cannot take both is refused: the
 * message names the instance and what holds it, the caller exits 1.
 */
import type { Engine } from '../../engine/types';
import { acquireEngineLock, EngineLockHeldError, EngineLockUnreadableError } from '../../status/engine-lock';
import { acquireLock, LockHeldError, LockUnreadableError } from '../../status/lock';
import type { Context } from '../context';

export interface WriterLocks {
  /** Whether both locks are still ours. */
  isHeld(): Promise<boolean>;
  /** Releases both (each only if still ours). */
  release(): Promise<void>;
}

/**
 * Both locks, or undefined after telling stderr who holds the instance. `recoverAlongside`: the
 * writer's start-up (below) runs on after the locks are returned, for a caller that awaits
 * `store.recover()` itself before its first write (a reconcile pass does): its engine lists
 * need not wait for the records to be read.
 */
export async function takeWriterLocks(
  ctx: Context,
  engine: Engine,
  command: string,
  opts: { recoverAlongside?: boolean } = {},
): Promise<WriterLocks | undefined> {
  const logger = { warn: (m: string) => ctx.log.warn(m) };
  const refused = (err: unknown): undefined => {
    if (!(err instanceof LockHeldError || err instanceof LockUnreadableError || err instanceof EngineLockHeldError || err instanceof EngineLockUnreadableError))
      throw err;
    ctx.io.err(`berth: ${err.message}\n`);
    return undefined;
  };
  // The engine lock first, so a lock file in the state folder means the engine lock is held too,
  // and the engine lock decides: holding it, an unreadable lock file is no writer's (set aside).
  let onEngine;
  try {
    onEngine = await acquireEngineLock(engine, ctx.instance, { stateDir: ctx.stateDir, command, logger });
  } catch (err) {
    return refused(err);
  }
  let file;
  try {
    file = await acquireLock(ctx.stateDir, ctx.instance, { logger, unreadableIsStale: true });
  } catch (err) {
    await onEngine.release();
    return refused(err);
  }
  // A writer's start-up, now that it is the only writer: temp files of interrupted writes go,
  // damaged records are set aside (src/status/store.ts). A failure here is retried by the first write.
  const recovered = ctx
    .store()
    .recover()
    .catch((err: unknown) => ctx.log.warn(`status records of instance ${ctx.instance}: ${(err as Error).message}`));
  if (!opts.recoverAlongside) await recovered;
  return {
    isHeld: async () => (await file.isHeld()) && (await onEngine.isHeld()),
    release: async () => {
      try {
        await onEngine.release();
      } finally {
        await file.release();
      }
    },
  };
}

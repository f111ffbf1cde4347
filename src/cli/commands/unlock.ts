/**
 * `berth unlock [--force]`: removes the instance's locks, the engine-side lock and the state
 * folder's lock file, when the process holding them is gone. A holder on this host that is gone
 * needs no flag (every writer takes such a lock over by itself anyway); one that still runs, one
 * berth cannot judge (another host or pid namespace), or a lock that cannot be read needs
 * `--force`: the person says it no longer drives the instance. Both are judged before either is
 * removed, so a refusal removes nothing.
 */
import { EXIT } from '../../constants';
import { breakEngineLock, describeEngineHolder, EngineLockUnreadableError, readEngineLock, type EngineLockInfo } from '../../status/engine-lock';
import { breakLockFile, describeHolder, lockFilePath, LockUnreadableError, readLockFile, type LockInfo } from '../../status/lock';
import { currentProcess, liveness, type HolderIdentity } from '../../status/liveness';
import type { Context } from '../context';

export async function runUnlock(ctx: Context, o: { force?: boolean }): Promise<number> {
  const engine = ctx.engine();
  const refuse = (message: string): number => {
    ctx.io.err(`berth: ${message}\n`);
    return EXIT.failed;
  };
  let holder: EngineLockInfo | undefined;
  try {
    holder = await readEngineLock(engine, ctx.instance);
  } catch (err) {
    if (!(err instanceof EngineLockUnreadableError)) throw err;
    if (!o.force) return refuse(err.message);
  }
  let fileHolder: LockInfo | undefined;
  try {
    fileHolder = await readLockFile(ctx.stateDir, ctx.instance);
  } catch (err) {
    // A lock file that is not JSON, a folder, a link: no writer berth can name.
    if (!(err instanceof LockUnreadableError) && !['EISDIR', 'ELOOP'].includes((err as NodeJS.ErrnoException).code ?? '')) throw err;
    if (!o.force)
      return refuse(
        `${err instanceof LockUnreadableError ? err.message : `${lockFilePath(ctx.stateDir, ctx.instance)}: unreadable lock file`}; add --force to remove it`,
      );
  }
  if (!o.force) {
    const self = await currentProcess();
    const why = async (h: HolderIdentity): Promise<string | undefined> => {
      const state = await liveness(h, self);
      if (state === 'dead') return undefined;
      return state === 'alive' ? 'it still runs' : 'it runs on another host or in another pid namespace, so berth cannot tell whether it still runs';
    };
    const engineWhy = holder && (await why(holder));
    if (holder && engineWhy)
      return refuse(`instance "${ctx.instance}" is held by ${describeEngineHolder(holder)}; ${engineWhy}. Add --force if it no longer drives this instance`);
    const fileWhy = fileHolder && (await why(fileHolder));
    if (fileHolder && fileWhy)
      return refuse(
        `${lockFilePath(ctx.stateDir, ctx.instance)}: instance "${ctx.instance}" is held by ${describeHolder(fileHolder)}; ${fileWhy}. Add --force if it no longer drives this instance`,
      );
  }
  const removed = await breakEngineLock(engine, ctx.instance);
  if (removed === undefined) ctx.io.out(`instance ${ctx.instance}: no engine lock\n`);
  else
    ctx.io.out(
      `instance ${ctx.instance}: removed the engine lock${removed === 'unreadable' ? ' (it carried no holder labels)' : ` of ${describeEngineHolder(removed)}`}\n`,
    );
  if (await breakLockFile(ctx.stateDir, ctx.instance)) {
    ctx.io.out(
      `instance ${ctx.instance}: removed the lock file ${lockFilePath(ctx.stateDir, ctx.instance)}${fileHolder ? ` of ${describeHolder(fileHolder)}` : ' (unreadable)'}\n`,
    );
  }
  return EXIT.ok;
}

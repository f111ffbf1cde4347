/**
 * `berth unlock [--force]`: removes the instance's engine-side lock when the process holding it
 * is gone. A holder on this host that is gone needs no flag (every writer takes such a lock over
 * by itself anyway); one that still runs, or one berth cannot judge (another host or pid
 * namespace), needs `--force`: the person says it no longer drives the instance.
 */
import { EXIT } from '../../constants';
import { breakEngineLock, describeEngineHolder, EngineLockUnreadableError, readEngineLock, type EngineLockInfo } from '../../status/engine-lock';
import { currentProcess, liveness } from '../../status/liveness';
import type { Context } from '../context';

export async function runUnlock(ctx: Context, o: { force?: boolean }): Promise<number> {
  const engine = ctx.engine();
  let holder: EngineLockInfo | undefined;
  try {
    holder = await readEngineLock(engine, ctx.instance);
  } catch (err) {
    if (!(err instanceof EngineLockUnreadableError)) throw err;
    if (!o.force) {
      ctx.io.err(`berth: ${err.message}\n`);
      return EXIT.failed;
    }
  }
  if (holder !== undefined && !o.force) {
    const state = await liveness(holder, await currentProcess());
    if (state !== 'dead') {
      const why = state === 'alive' ? 'it still runs' : 'it runs on another host or in another pid namespace, so berth cannot tell whether it still runs';
      ctx.io.err(`berth: instance "${ctx.instance}" is held by ${describeEngineHolder(holder)}; ${why}. Add --force if it no longer drives this instance\n`);
      return EXIT.failed;
    }
  }
  const removed = await breakEngineLock(engine, ctx.instance);
  if (removed === undefined) ctx.io.out(`instance ${ctx.instance}: no engine lock\n`);
  else
    ctx.io.out(
      `instance ${ctx.instance}: removed the engine lock${removed === 'unreadable' ? ' (it carried no holder labels)' : ` of ${describeEngineHolder(removed)}`}\n`,
    );
  return EXIT.ok;
}

/**
 * `berth reconcile` without --once: a long-running controller. One writer per instance (a
 * lock file in the state folder); passes are triggered by spec folder changes (debounced, so
 * editors' atomic saves and half-written files settle first), by engine events of this
 * instance, by requeue times and by the resync period. SIGTERM/SIGINT: finish the pass in
 * flight, release the lock, exit 0; attempts keep running.
 */
import chokidar from 'chokidar';
import path from 'node:path';
import { EXIT } from '../../constants';
import { reconcilePass } from '../../controller/pass';
import { Waker } from '../../controller/waker';
import { describeEngineError } from '../../engine/errors';
import { changeCount } from '../../plan/render';
import { acquireLock, LockHeldError } from '../../status/lock';
import { passConfig, type Context } from '../context';
import type { ReconcileOptions } from './reconcile';
import { reportLoadErrors } from './shared';

const DEBOUNCE_MS = 150;

export async function runController(ctx: Context, o: ReconcileOptions, signal?: AbortSignal): Promise<number> {
  const cfg = passConfig(ctx, o);
  const engine = ctx.engine();
  const store = ctx.store();
  let lock;
  try {
    lock = await acquireLock(ctx.stateDir, ctx.instance);
  } catch (err) {
    if (err instanceof LockHeldError) {
      ctx.io.err(`berth: ${err.message}\n`);
      return EXIT.failed;
    }
    throw err;
  }
  const waker = new Waker();
  const stop = new AbortController();
  const onSignal = (sig: string) => {
    ctx.log.info(`${sig}: finishing the pass in flight, then exiting; attempts keep running`);
    stop.abort();
    waker.poke();
  };
  const onTerm = () => onSignal('SIGTERM');
  const onInt = () => onSignal('SIGINT');
  process.on('SIGTERM', onTerm);
  process.on('SIGINT', onInt);
  signal?.addEventListener('abort', () => onSignal('abort'), { once: true });

  let debounce: NodeJS.Timeout | undefined;
  const watcher = chokidar.watch(ctx.specsDir, {
    ignoreInitial: true,
    ignored: (p: string) => path.basename(p).startsWith('.') && p !== ctx.specsDir,
    awaitWriteFinish: { stabilityThreshold: 100, pollInterval: 25 },
  });
  watcher.on('all', () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => waker.poke(), DEBOUNCE_MS);
  });
  waker.followEngine(engine, ctx.instance, ctx.log);
  const resyncMs = (o.resync ?? 30) * 1000;
  ctx.log.info(`controller started`, { instance: ctx.instance, specs: ctx.specsDir, resync: `${resyncMs / 1000}s` });

  let firstPass = true;
  try {
    while (!stop.signal.aborted) {
      let next = resyncMs;
      try {
        store.invalidate();
        const res = await reconcilePass({ ...cfg, log: ctx.log.child({ reconcileId: Date.now().toString(36) }) }, engine, store);
        if (firstPass) reportLoadErrors(ctx, res.load);
        firstPass = false;
        for (const f of res.results.filter((r) => !r.ok)) ctx.log.warn(`${f.attempt}: ${f.error}`);
        const requeue = res.plan.actions.map((a) => a.requeueAfterMs).filter((x): x is number => x !== undefined);
        next = changeCount(res.plan) > 0 ? 0 : Math.min(resyncMs, ...requeue.map((x) => x + 50));
      } catch (err) {
        ctx.log.error(`pass failed: ${describeEngineError(err)}`);
        next = 1000;
      }
      if (stop.signal.aborted) break;
      await waker.wait(next);
    }
  } finally {
    clearTimeout(debounce);
    waker.close();
    await watcher.close();
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
    await lock.release();
  }
  ctx.log.info('controller stopped');
  return EXIT.ok;
}

/**
 * `berth regrade` sees its grades through (issue 56: a regrade needed a second command to
 * finish). Marked and begun, the grades end one of two ways:
 *
 * - No controller runs the instance: the command, still holding the instance's writer locks,
 *   runs the controller's finite loop (`reconcile --once --wait`'s) over the attempts it marked
 *   only (ControllerOptions.only): graders wait for slots (--max-running, the sets'
 *   maxParallel), exits are seen from the engine's events, and it ends once each attempt is
 *   settled, its grade recorded. The instance's other attempts are left as they are (they still
 *   hold their slots).
 * - A controller runs it: the controller carries the grades out; the command reads the records
 *   again whenever the records folder changes (as `berth wait`) until none of the attempts has a
 *   grade to come, or nothing reconciles the instance into this state folder any more.
 */
import { DEFAULTS, EXIT } from '../../constants';
import type * as ControllerMod from '../../controller/controller';
import type { PassConfig } from '../../controller/pass';
import { describeEngineError } from '../../engine/errors';
import type { Engine } from '../../engine/types';
import { gradePending } from '../../sets/grade-state';
import { loadSpecs } from '../../spec/loader';
import type { LoadedSpec } from '../../spec/types';
import { reconcilerOf } from '../../status/reconciler';
import { StatusStore } from '../../status/store';
import { coalesced } from '../../util/coalesce';
import { Waker } from '../../util/waker';
import { watchFolder } from '../../util/watch-folder';
import { specsOptions, type Context } from '../context';
import { diag, plural } from '../diag';
import { settled, watched } from '../wait-condition';

/** Without a controller, holding the writer locks: the controller's finite loop over `names` until each is settled. */
export async function seeThroughHere(ctx: Context, cfg: PassConfig, engine: Engine, store: StatusStore, names: readonly string[]): Promise<number> {
  const { Controller } = require('../../controller/controller') as typeof ControllerMod;
  const only = new Set(names);
  const { promise: ended, resolve: end, reject: fail } = Promise.withResolvers<number>();
  const check = coalesced(async () => {
    const load = controller.latestLoad();
    if (!load || !controller.idle()) return;
    const statuses = await store.loadAll();
    const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
    const left = names.filter((n) => controller.pending(n) || !settled(watched(n, specs.get(n), statuses.get(n), cfg.policy.infraRetries)));
    if (left.length === 0 && controller.idle()) end(EXIT.ok);
  });
  const controller = new Controller({
    cfg,
    engine,
    store,
    log: cfg.log,
    workers: cfg.concurrency,
    resyncMs: 0,
    finite: true,
    only,
    watcher: {
      settled: () => void check().catch(fail),
      engineDown: (err) => {
        diag(ctx, 'error', `${describeEngineError(err)} (the grades under way are finished by the next reconcile)`);
        end(EXIT.failed);
      },
    },
  });
  try {
    await controller.start();
    return await ended;
  } finally {
    await controller.stop();
  }
}

/** A controller carries the grades out: the records read again on every change until none of `names` has a grade to come. */
export async function awaitGrades(ctx: Context, names: readonly string[]): Promise<number> {
  const load = await loadSpecs({ specsDir: ctx.specsDir, resultsRoot: ctx.resultsRoot, ...specsOptions(ctx) });
  const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
  const store = () => new StatusStore(ctx.stateDir, ctx.instance);
  const waker = new Waker();
  const watch = watchFolder(
    store().dir,
    () => waker.poke(),
    (err) => ctx.log.debug(`records folder watch: ${err.message}`),
  );
  let engine: Engine | undefined;
  let unreconciledSince: number | undefined;
  try {
    for (;;) {
      const statuses = await store().loadAll();
      const left = names.filter((n) => {
        const rec = statuses.get(n);
        const loaded: LoadedSpec | undefined = specs.get(n);
        // a grade to come (a regrade the controller has not begun yet included)
        return loaded !== undefined && gradePending(loaded, rec);
      });
      if (left.length === 0) return EXIT.ok;
      engine ??= ctx.engine();
      const found = await reconcilerOf(ctx.stateDir, ctx.instance, engine);
      if (found.kind === 'this-folder') unreconciledSince = undefined;
      else unreconciledSince ??= Date.now();
      const graceLeft = unreconciledSince === undefined ? Infinity : DEFAULTS.unreconciledWaitGraceMs - (Date.now() - unreconciledSince);
      if (graceLeft <= 0) {
        diag(
          ctx,
          'error',
          `${plural(left.length, 'attempt')} not graded yet: ${left.join(', ')}; the controller stopped: the next reconcile grades them (berth reconcile --once --wait)`,
        );
        return EXIT.failed;
      }
      await waker.wait(Math.min(graceLeft, 60_000));
    }
  } finally {
    watch.close();
    waker.close();
  }
}

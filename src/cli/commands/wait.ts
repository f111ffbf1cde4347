/**
 * `berth wait [NAME...] [-l SELECTOR] [--for finished|phase=X] [--timeout DUR]`: waits until
 * the condition holds for every attempt chosen (all of the instance when no name or selector is
 * given), reading the status records again each time the records folder changes (file events,
 * never a sleep loop). Exit codes as `reconcile --wait`: 0 the condition holds for all; 3 an
 * attempt ended Failed or TimedOut (finished, or it can no longer reach the phase waited for);
 * 1 `--timeout` passed first, or an attempt is Blocked; 2 an Invalid attempt or a usage error.
 */
import { gradePending } from '../../plan/grade';
import { EXIT } from '../../constants';
import { Waker } from '../../util/waker';
import { loadSpecs } from '../../spec/loader';
import { StatusStore } from '../../status/store';
import { watchFolder } from '../../util/watch-folder';
import { specsRevision, UsageError, type Context } from '../context';
import { diag, plural } from '../diag';
import { parseWaitFor, settled, verdict, type Watched } from '../wait-condition';
import { collectRows } from './get';

export interface WaitOptions {
  selector?: string[];
  for?: string;
  /** Milliseconds. */
  timeout?: number;
}

export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

export async function runWait(ctx: Context, names: string[], o: WaitOptions): Promise<number> {
  const want = parseWaitFor(o.for ?? 'finished');
  if (!want)
    throw new UsageError(`--for ${JSON.stringify(o.for)}: use finished or phase=<Phase> (Pending, Running, Succeeded, Failed, TimedOut, Invalid, Blocked)`);
  const timeoutMs = o.timeout ?? DEFAULT_WAIT_TIMEOUT_MS;
  const rows = await collectRows(ctx, names, o.selector ?? []);
  const found = new Set(rows.map((r) => r.name));
  const missing = [...new Set(names)].filter((n) => !found.has(n));
  if (missing.length) {
    for (const n of missing) diag(ctx, 'error', `attempt ${JSON.stringify(n)} not found`);
    return EXIT.failed;
  }
  if (rows.length === 0) {
    diag(ctx, 'error', "no attempts match: nothing to wait for (berth get lists the instance's attempts; check -l, --specs and --instance)");
    return EXIT.failed;
  }
  const load = await loadSpecs({ specsDir: ctx.specsDir, resultsRoot: ctx.resultsRoot, ...specsRevision(ctx) });
  const retries = new Map(load.specs.map((s) => [s.spec.name, s.spec.retries]));
  const loaded = new Map(load.specs.map((s) => [s.spec.name, s]));
  const label = want.kind === 'finished' ? 'finished' : `phase=${want.phase}`;

  const waker = new Waker();
  const store = () => new StatusStore(ctx.stateDir, ctx.instance);
  const watch = watchFolder(
    store().dir,
    () => waker.poke(),
    (err) => ctx.log.debug(`records folder watch: ${err.message}`),
  );
  const started = Date.now();
  const told = new Set<string>();
  try {
    for (;;) {
      // A fresh store each time: the records are another process's to write.
      const statuses = await store().loadAll();
      const items: Watched[] = rows.map((r) => {
        const st = statuses.get(r.name);
        const sp = loaded.get(r.name);
        // spec.grade: a finished run whose grade is still to come is not settled
        const grading = sp !== undefined && gradePending(sp, st);
        return { name: r.name, retries: retries.get(r.name) ?? 0, ...(st ? { status: st } : {}), ...(grading ? { gradePending: true } : {}) };
      });
      const v = verdict(items, want);
      for (const n of v.met) {
        if (told.has(n)) continue;
        told.add(n);
        ctx.io.out(`attempt/${n} condition met (${label}: ${statuses.get(n)?.phase ?? 'Pending'})\n`);
      }
      if (v.code !== undefined) {
        if (v.code !== EXIT.ok) {
          const off = items.filter((i) => settled(i) && i.status?.phase !== (want.kind === 'finished' ? 'Succeeded' : want.phase));
          diag(ctx, 'error', off.map((i) => `${i.name} ended ${i.status?.phase ?? 'Pending'}${i.status?.reason ? ` (${i.status.reason})` : ''}`).join(', '));
        }
        return v.code;
      }
      const left = timeoutMs - (Date.now() - started);
      if (left <= 0) {
        const list = items.filter((i) => v.unmet.includes(i.name)).map((i) => `${i.name} (${i.status?.phase ?? 'Pending'})`);
        diag(
          ctx,
          'error',
          `--timeout ${timeoutMs % 1000 ? `${timeoutMs}ms` : `${timeoutMs / 1000}s`} passed with ${plural(list.length, 'attempt')} not ${label}: ${list.join(', ')}`,
        );
        return EXIT.failed;
      }
      await waker.wait(left);
    }
  } finally {
    watch.close();
    waker.close();
  }
}

/**
 * `berth wait [NAME...] [-l SELECTOR] [--for finished|phase=X] [--timeout DUR]`: waits until
 * the condition holds for every attempt chosen (all of the instance when no name or selector is
 * given), reading the status records again each time the records folder changes (file events,
 * never a sleep loop). It ends with one line counting passed, failed and infrastructure
 * outcomes (sets/outcome.ts). Exit codes as `reconcile --wait`: 0 the condition holds for all and
 * nothing failed; 3 a task failure, 5 an infrastructure outcome (Invalid and Blocked included;
 * 5 wins), as `--fail-on` says (failed, infra, none); 1 `--timeout` passed first, a harvest
 * failed, or an attempt can no longer reach the phase waited for and nothing else says so; 2 a
 * usage error. The records change only while something reconciles the instance into this state
 * folder (status/reconciler.ts): with nothing doing so for DEFAULTS.unreconciledWaitGraceMs (a
 * writer started beside the wait has that long to take its locks), the wait ends at once, exit 1,
 * saying what to run, instead of waiting out its --timeout for records that cannot change.
 */
import { DEFAULTS, EXIT, REASONS } from '../../constants';
import type { Engine } from '../../engine/types';
import { endLine, tally } from '../../sets/outcome';
import { reconcilerOf, type Reconciler } from '../../status/reconciler';
import { Waker } from '../../util/waker';
import { StatusStore } from '../../status/store';
import { watchFolder } from '../../util/watch-folder';
import { UsageError, type Context } from '../context';
import { diag, plural } from '../diag';
import { failOnOf, outcomeOf, parseWaitFor, settled, verdict, watched, type Watched } from '../wait-condition';
import { collectView } from './get';
import { heldNote } from './get-notes';

export interface WaitOptions {
  selector?: string[];
  for?: string;
  /** Milliseconds. */
  timeout?: number;
  /** Which outcomes make the exit code non-zero (default failed). */
  failOn?: string;
}

export const DEFAULT_WAIT_TIMEOUT_MS = 30_000;

export async function runWait(ctx: Context, names: string[], o: WaitOptions): Promise<number> {
  const want = parseWaitFor(o.for ?? 'finished');
  if (!want)
    throw new UsageError(`--for ${JSON.stringify(o.for)}: use finished or phase=<Phase> (Pending, Running, Succeeded, Failed, TimedOut, Invalid, Blocked)`);
  const failOn = failOnOf(o.failOn);
  const timeoutMs = o.timeout ?? DEFAULT_WAIT_TIMEOUT_MS;
  const { rows, load } = await collectView(ctx, names, o.selector ?? []);
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
  // attempts held at their last good spec (a broken file): judged under it, and said so
  heldNote(ctx, rows);
  const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
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
  let engine: Engine | undefined;
  /** Since when nothing has reconciled the instance into this state folder, and what was found. */
  let unreconciled: { since: number; found: Exclude<Reconciler, { kind: 'this-folder' }> } | undefined;
  try {
    for (;;) {
      // A fresh store each time: the records are another process's to write.
      const statuses = await store().loadAll();
      const items: Watched[] = rows.map((r) => {
        return watched(r.name, specs.get(r.name), statuses.get(r.name));
      });
      const v = verdict(items, want, failOn);
      for (const n of v.met) {
        if (told.has(n)) continue;
        told.add(n);
        ctx.io.out(`attempt/${n} condition met (${label}: ${statuses.get(n)?.phase ?? 'Pending'})\n`);
      }
      const counted = () => ctx.io.out(`${endLine(tally(items.map((i) => ({ name: i.name, outcome: outcomeOf(i) }))))}\n`);
      if (v.code !== undefined) {
        counted();
        if (v.code !== EXIT.ok) {
          // What ended the wait: failures and infrastructure outcomes, or (phase=X) attempts that can no longer reach X.
          const off = items.flatMap((i) => {
            const c = outcomeOf(i);
            const bad =
              want.kind === 'finished'
                ? c.outcome === 'failed' || c.outcome === 'infra' || i.status?.reason === REASONS.harvestFailed
                : settled(i) && i.status?.phase !== want.phase;
            const why = c.outcome === 'infra' ? c.reason : i.status?.reason;
            return bad && settled(i) ? [`${i.name} ended ${i.status?.phase ?? 'Pending'}${why ? ` (${why})` : ''}`] : [];
          });
          diag(ctx, 'error', off.join(', '));
        }
        return v.code;
      }
      const list = items.filter((i) => v.unmet.includes(i.name)).map((i) => `${i.name} (${i.status?.phase ?? 'Pending'})`);
      engine ??= ctx.engine();
      const found = await reconcilerOf(ctx.stateDir, ctx.instance, engine);
      if (found.kind === 'this-folder') unreconciled = undefined;
      else unreconciled ??= { since: Date.now(), found };
      const graceLeft = unreconciled ? DEFAULTS.unreconciledWaitGraceMs - (Date.now() - unreconciled.since) : Infinity;
      if (unreconciled && graceLeft <= 0) {
        counted();
        diag(ctx, 'error', `${plural(list.length, 'attempt')} not ${label}: ${list.join(', ')}; ${nobodyReconciles(ctx, unreconciled.found)}`);
        return EXIT.failed;
      }
      const left = timeoutMs - (Date.now() - started);
      if (left <= 0) {
        counted();
        diag(
          ctx,
          'error',
          `--timeout ${timeoutMs % 1000 ? `${timeoutMs}ms` : `${timeoutMs / 1000}s`} passed with ${plural(list.length, 'attempt')} not ${label}: ${list.join(', ')}` +
            (unreconciled ? `; ${nobodyReconciles(ctx, unreconciled.found)}` : ''),
        );
        return EXIT.failed;
      }
      await waker.wait(Math.min(left, graceLeft));
    }
  } finally {
    watch.close();
    waker.close();
  }
}

/** Why the records will not change, and what to run. */
function nobodyReconciles(ctx: Context, found: Exclude<Reconciler, { kind: 'this-folder' }>): string {
  if (found.kind === 'other-folder')
    return `instance "${ctx.instance}" is reconciled by ${found.holder} into another state folder, so the records in ${ctx.stateDir} do not change: wait with --state ${found.stateDir}`;
  return `nothing reconciles instance "${ctx.instance}" (no berth holds its lock), so their records do not change: run \`berth reconcile --once --wait\` (or keep \`berth reconcile\` running), which records what their containers did`;
}

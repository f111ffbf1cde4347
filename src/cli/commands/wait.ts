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
import { collectView, resultText, scoreOf } from './get';
import type { Classified } from '../../sets/outcome';
import { latestGrade } from '../../sets/grade-state';
import type { AttemptStatus } from '../../status/types';
import type { LoadedSpec } from '../../spec/types';
import { inGithubActions, outcomeAnnotations } from '../format-errors';
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
        // `finished` names how the run counts (as get's RESULT: `failed (score 0)`), a phase wait the phase
        const item = items.find((i) => i.name === n);
        const shown = want.kind === 'finished' && item ? outcomeText(outcomeOf(item), specs.get(n), statuses.get(n)) : (statuses.get(n)?.phase ?? 'Pending');
        ctx.io.out(`attempt/${n} condition met (${label}: ${shown})\n`);
      }
      const touched = items.filter((i) => statuses.get(i.name)?.touched).map((i) => i.name);
      const counted = () => ctx.io.out(`${endLine(tally(items.map((i) => ({ name: i.name, outcome: outcomeOf(i) }))), touched)}\n`);
      if (v.code !== undefined) {
        counted();
        annotateOutcomes(
          ctx,
          items.map((w) => ({ w, loaded: specs.get(w.name), status: statuses.get(w.name) })),
        );
        if (v.code !== EXIT.ok) {
          // What ended the wait: failures and infrastructure outcomes, or (phase=X) attempts that can no longer reach X.
          const off = items.flatMap((i) => {
            const c = outcomeOf(i);
            const bad =
              want.kind === 'finished'
                ? c.outcome === 'failed' || c.outcome === 'infra' || i.status?.reason === REASONS.harvestFailed
                : settled(i) && i.status?.phase !== want.phase;
            if (!bad || !settled(i)) return [];
            if (want.kind === 'finished' && i.status?.reason !== REASONS.harvestFailed)
              return [`${i.name} ${outcomeText(c, specs.get(i.name), statuses.get(i.name))}`];
            const why = c.outcome === 'infra' ? c.reason : i.status?.reason;
            return [`${i.name} ended ${i.status?.phase ?? 'Pending'}${why ? ` (${why})` : ''}`];
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

/**
 * How a settled run counts, in words: `passed`, `failed (score 0)`, `failed (Error, exit 1)`,
 * `infra (ScoreMissing)`: the outcome first, as get's RESULT (not the phase: a run that
 * Succeeded with score 0 failed).
 */
export function outcomeText(c: Classified, loaded: LoadedSpec | undefined, st: AttemptStatus | undefined): string {
  const score = scoreOf(loaded, st);
  if (c.outcome !== 'failed' && c.outcome !== 'passed') return resultText({ outcome: c, score, reason: '' });
  // spec.grade: the grade decided it, not the run's own exit
  const g = loaded?.spec.grade && st ? latestGrade(st) : undefined;
  const why =
    score !== null
      ? `score ${score}`
      : g
        ? `grade-${g.k}${g.exitCode !== undefined ? `: exit ${g.exitCode}` : ''}`
        : c.outcome === 'failed'
          ? [st?.reason, st?.exitCode !== undefined ? `exit ${st.exitCode}` : undefined].filter(Boolean).join(', ')
          : '';
  return `${c.outcome}${why ? ` (${why})` : ''}`;
}

/**
 * Inside GitHub Actions, an annotation for each attempt that did not pass (at its spec's line), on
 * stderr beside the end line: stdout stays the command's output.
 */
export function annotateOutcomes(ctx: Context, items: readonly { w: Watched; loaded: LoadedSpec | undefined; status: AttemptStatus | undefined }[]): void {
  if (!inGithubActions(ctx.env)) return;
  const bad = items.flatMap(({ w, loaded, status }) => {
    const c = outcomeOf(w);
    if (c.outcome !== 'failed' && c.outcome !== 'infra') return [];
    const text = outcomeText(c, loaded, status);
    return [{ name: w.name, outcome: c.outcome, text, ...(loaded ? { file: loaded.source.file, line: loaded.source.line } : {}) }];
  });
  if (bad.length) ctx.io.err(outcomeAnnotations(bad, { cwd: process.cwd(), workspace: ctx.env.GITHUB_WORKSPACE }));
}

/** Why the records will not change, and what to run. */
function nobodyReconciles(ctx: Context, found: Exclude<Reconciler, { kind: 'this-folder' }>): string {
  if (found.kind === 'other-folder')
    return `instance "${ctx.instance}" is reconciled by ${found.holder} into another state folder, so the records in ${ctx.stateDir} do not change: wait with --state ${found.stateDir}`;
  return `nothing reconciles instance "${ctx.instance}" (no berth holds its lock), so their records do not change: run \`berth reconcile --once --wait\` (or keep \`berth reconcile\` running), which records what their containers did`;
}

/**
 * `berth rerun NAME... | -l SELECTOR | --all`: a new run of finished attempts, same spec. The record
 * gets `rerunRequested` (for its current run); the planner turns it into run n+1 with a new run
 * folder (earlier results stay), and one pass over those attempts starts it now, or leaves it
 * Pending when --max-running has no slot (the next reconcile starts it). Retry budgets start
 * again. A `berth delete`d attempt may be re-run: the mark goes. An attempt recorded Running gets
 * one pass first (rerun holds the writer locks, so nothing else records it): a run that ended
 * while nothing reconciled the instance is then recorded finished, and re-run. While a
 * controller runs the instance, it is asked to do it (mark-and-pass.ts).
 */
import { EXIT, FINISHED_PHASES } from '../../constants';
import type { Context } from '../context';
import { plural } from '../diag';
import { chooseAttempts } from './choose';
import { markAndPass } from './mark-and-pass';

export async function runRerun(ctx: Context, names: string[], o: { selector?: string[]; all?: boolean; timeout?: number }): Promise<number> {
  const chosen = await chooseAttempts(ctx, 'rerun', names, o.selector, o.all === true);
  if (typeof chosen === 'number') return chosen;
  // --all: the finished attempts (and deleted ones); a run still going is left to go on
  const rows = o.all ? chosen.filter((r) => r.spec && r.status && (FINISHED_PHASES.has(r.status.phase) || r.status.deleted)) : chosen;
  if (!rows.length) {
    ctx.io.err('berth: rerun --all: no attempt is finished\n');
    return EXIT.failed;
  }
  const r = await markAndPass(ctx, 'rerun', rows, o.timeout !== undefined ? { timeoutMs: o.timeout } : {});
  if (!r.store) return r.code;
  for (const name of r.acted) {
    const now = await r.store.get(name);
    const what = now?.rerunRequested
      ? 'requested (the next reconcile starts it)'
      : now?.phase === 'Pending'
        ? `run ${now.run} waits for a slot (--max-running)`
        : `run ${now?.run ?? '?'} ${now?.phase ?? ''}`.trimEnd();
    ctx.io.out(`attempt/${name} rerun: ${what}\n`);
  }
  if (r.code === EXIT.ok) ctx.io.err(`${plural(r.acted.length, 'attempt')} re-run\n`);
  return r.code;
}

/**
 * `berth rerun NAME... | -l SELECTOR`: a new run of finished attempts, same spec. The record
 * gets `rerunRequested` (for its current run); the planner turns it into run n+1 with a new run
 * folder (earlier results stay), and one pass over those attempts starts it now, or leaves it
 * Pending when --max-running has no slot (the next reconcile starts it). Retry budgets start
 * again. A `berth delete`d attempt may be re-run: the mark goes. An attempt recorded Running gets
 * one pass first (rerun holds the writer locks, so nothing else records it): a run that ended
 * while nothing reconciled the instance is then recorded finished, and re-run.
 */
import { EXIT, FINISHED_PHASES } from '../../constants';
import type { Context } from '../context';
import { plural } from '../diag';
import { chooseAttempts } from './choose';
import { markAndPass } from './mark-and-pass';

export async function runRerun(ctx: Context, names: string[], o: { selector?: string[] }): Promise<number> {
  const rows = await chooseAttempts(ctx, 'rerun', names, o.selector);
  if (typeof rows === 'number') return rows;
  const at = new Date().toISOString();
  const r = await markAndPass(
    ctx,
    'rerun',
    rows,
    (row, rec, spec) => {
      if (!spec) return { refused: 'it has no valid spec: there is nothing to run' };
      if (!rec || !(FINISHED_PHASES.has(rec.phase) || rec.deleted))
        return { refused: `it is ${rec?.phase ?? 'Pending'}, not finished: only a finished attempt is re-run` };
      if (rec.specHash !== spec.hash) return { refused: 'its spec changed since its last run: reconcile replaces it with a new run anyway' };
      const { deleted: _deleted, ...kept } = rec;
      return { ...kept, rerunRequested: { at, run: rec.run } };
    },
    // A run recorded Running may have ended while nothing reconciled the instance: recorded first.
    (rec) => rec.phase === 'Running' && !rec.deleted,
  );
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

/**
 * `berth regrade [NAME...] [-l SELECTOR]`: grade finished runs again (spec.grade), without
 * running their attempts again. The record gets `regradeRequested` (its current run, after its
 * latest grade); the planner turns it into the next grade, `grade-<k+1>` (earlier grades stay),
 * and one pass over those attempts starts its grader now; the grade is recorded when the grader
 * has ended (`reconcile`, `reconcile --once --wait` or `wait` see it through).
 */
import { EXIT } from '../../constants';
import { runGrades } from '../../sets/grade-state';
import type { Context } from '../context';
import { plural } from '../diag';
import { chooseAttempts } from './choose';
import { markAndPass } from './mark-and-pass';

export async function runRegrade(ctx: Context, names: string[], o: { selector?: string[]; all?: boolean; timeout?: number }): Promise<number> {
  const chosen = await chooseAttempts(ctx, 'regrade', names, o.selector, o.all === true);
  if (typeof chosen === 'number') return chosen;
  // --all: the attempts a grader judges (the others would each be refused)
  const rows = o.all ? chosen.filter((r) => r.spec?.grade) : chosen;
  if (!rows.length) {
    ctx.io.err('berth: regrade --all: no attempt has a spec.grade\n');
    return EXIT.failed;
  }
  const r = await markAndPass(ctx, 'regrade', rows, o.timeout !== undefined ? { timeoutMs: o.timeout } : {});
  if (!r.store) return r.code;
  for (const name of r.acted) {
    const now = await r.store.get(name);
    const g = now ? runGrades(now).at(-1) : undefined;
    ctx.io.out(`attempt/${name} regrade: ${g ? `grade ${g.k} of run ${g.run} ${g.state}` : 'requested (the next reconcile starts it)'}\n`);
  }
  if (r.code === EXIT.ok) ctx.io.err(`${plural(r.acted.length, 'attempt')} regraded\n`);
  return r.code;
}

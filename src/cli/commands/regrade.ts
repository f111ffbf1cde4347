/**
 * `berth regrade [NAME...] [-l SELECTOR] [--no-wait]`: grade finished runs again (spec.grade),
 * without running their attempts again. The record gets `regradeRequested` (its current run, after
 * its latest grade); the planner turns it into the next grade, `grade-<k+1>` (earlier grades
 * stay), its grader holding a slot as a run does (--max-running, the set's maxParallel). The
 * command sees the grades through (see-through.ts): each attempt's line says its new grade once
 * recorded (`grade 2 of run 1 graded (pass)`). `--no-wait` only marks and begins what the slots allow; the next reconcile (or the
 * controller) finishes them.
 */
import { EXIT } from '../../constants';
import { runGrades } from '../../sets/grade-state';
import { gradeVerdict } from '../../sets/grade-text';
import type { Context } from '../context';
import { plural } from '../diag';
import { chooseAttempts } from './choose';
import { markAndPass } from './mark-and-pass';
import { awaitGrades } from './see-through';

export interface RegradeOptions {
  selector?: string[];
  all?: boolean;
  /** Milliseconds a running controller is given to take the request. */
  timeout?: number;
  /** false (`--no-wait`): mark and begin, do not see the grades through. */
  wait?: boolean;
  /** Runs and graders at once while this command carries the grades out (no controller running). */
  maxRunning?: number;
}

export async function runRegrade(ctx: Context, names: string[], o: RegradeOptions): Promise<number> {
  const chosen = await chooseAttempts(ctx, 'regrade', names, o.selector, o.all === true);
  if (typeof chosen === 'number') return chosen;
  // --all: the attempts a grader judges (the others would each be refused)
  const rows = o.all ? chosen.filter((r) => r.spec?.grade) : chosen;
  if (!rows.length) {
    ctx.io.err('berth: regrade --all: no attempt has a spec.grade\n');
    return EXIT.failed;
  }
  const wait = o.wait !== false;
  const r = await markAndPass(ctx, 'regrade', rows, {
    ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}),
    seeThrough: wait,
    ...(o.maxRunning !== undefined ? { flags: { maxRunning: o.maxRunning } } : {}),
  });
  if (!r.store) return r.code;
  let code = r.code;
  if (wait && r.by === 'controller' && r.acted.length) code = Math.max(code, await awaitGrades(ctx, r.acted));
  for (const name of r.acted) {
    const now = await r.store.get(name);
    const g = now ? runGrades(now).at(-1) : undefined;
    const verdict = g && g.state !== 'grading' ? ` (${gradeVerdict(g)})` : '';
    ctx.io.out(`attempt/${name} regrade: ${g ? `grade ${g.k} of run ${g.run} ${g.state}${verdict}` : 'requested (the next reconcile starts it)'}\n`);
  }
  if (code === EXIT.ok) ctx.io.err(`${plural(r.acted.length, 'attempt')} regraded\n`);
  return code;
}

/**
 * One info line for what an executed action did to its attempt (created, started, finished,
 * replaced, retried, removed, stopped, adopted), for the controller's and `reconcile --once`'s
 * logs; undefined when it did nothing worth a line (a recorded attestation, a wait).
 */
import type { AttemptAction, Operation, Plan } from '../plan/types';
import type { AttemptStatus } from '../status/types';
import { plural } from '../util/plural';
import { gradeOutcome } from '../sets/grade-text';

/** `ops`: the operations done (the plan's and their follow-ups: ActionResult.ran). */
export function activity(a: AttemptAction, ops: readonly Operation[], rec: AttemptStatus | undefined): string | undefined {
  const at = (...types: string[]) => ops.findIndex((o) => types.includes(o.type));
  const count = (t: string) => ops.filter((o) => o.type === t).length;
  // Each part where its first operation ran: a run made and ended in one action (a follow-up
  // finished it: its container exited before it was looked at) reads created, started, finished.
  const parts: { i: number; text: string }[] = [];
  const part = (i: number, text: string) => {
    if (i >= 0) parts.push({ i, text });
  };
  const run = a.desired?.run ?? rec?.run;
  part(at('stop'), 'stopped');
  const how = rec ? `${rec.phase}${rec.reason ? ` (${rec.reason}${rec.exitCode !== undefined ? `, exit ${rec.exitCode}` : ''})` : ''}` : 'finished';
  part(at('finish', 'harvest'), `finished ${how}`);
  // spec.grade: a grade begun (a regrade says why) and its verdict, once the grader has ended
  const begun = ops.find((o) => o.type === 'begin-grade');
  if (begun?.type === 'begin-grade') {
    const again = begun.grader.k > 1 || /changed|regrade/.test(begun.cause);
    part(
      at('begin-grade'),
      `${again ? 'regrading' : 'grading'} run ${begun.grader.run} (grade ${begun.grader.k})${again ? `: ${begun.cause.replace(/: graded again$/, '')}` : ''}`,
    );
  }
  const ended = ops.find((o) => o.type === 'finish-grade');
  if (ended?.type === 'finish-grade') part(at('finish-grade'), gradeEnd(rec, ended.run, ended.k));
  // a grader's removal is part of its grade's end: not counted among the run's containers
  const graders = ops.filter((o) => o.type === 'remove-container' && /_grade_\d+_\d+$/.test(o.resource)).length;
  const removed = [
    plural(count('remove-container') - graders, 'container'),
    plural(count('remove-network'), 'network'),
    plural(count('remove-volume'), 'volume'),
  ].filter((s) => !s.startsWith('0 '));
  if (removed.length) part(at('remove-container', 'remove-network', 'remove-volume'), `removed ${removed.join(', ')}`);
  part(at('adopt'), `adopted run ${run}`);
  part(at('create-container'), `${a.kind === 'replace' ? 'replaced: ' : a.kind === 'retry' ? 'retried: ' : ''}created run ${run}`);
  part(at('start'), `started run ${run}`);
  part(at('forget'), 'forgotten (no spec)');
  return parts.length
    ? `${a.attempt}: ${parts
        .sort((x, y) => x.i - y.i)
        .map((p) => p.text)
        .join('; ')}`
    : undefined;
}

/** A grade's end as a log line reads it: `graded pass (score 1)`, `graded fail (exit 1)`, `grade 1 of run 1 failed (GradeFailed: why)`. */
export function gradeEnd(rec: AttemptStatus | undefined, run: number, k: number): string {
  const g = rec?.grades?.find((x) => x.run === run && x.k === k);
  if (!g || g.state === 'grading') return `grade ${k} of run ${run} ${g ? 'under way' : 'ended'}`;
  const later = k > 1 ? ` (grade ${k} of run ${run})` : '';
  return g.state === 'graded' ? `graded ${gradeOutcome(g)}${later}` : `grade ${k} of run ${run} ${gradeOutcome(g)}`;
}

/**
 * What a plan does to many attempts at once, in one line each (beside their own lines): runs
 * graded again because spec.grade changed (`regrading 12 runs: spec.grade changed`).
 */
export function planActivity(p: Pick<Plan, 'actions'>): string[] {
  const why = new Map<string, number>();
  for (const a of p.actions) {
    const b = a.ops.find((o) => o.type === 'begin-grade');
    if (b?.type !== 'begin-grade' || !/changed|regrade/.test(b.cause)) continue;
    const cause = b.cause.replace(/: graded again$/, '');
    why.set(cause, (why.get(cause) ?? 0) + 1);
  }
  return [...why].map(([cause, n]) => `regrading ${plural(n, 'run')}: ${cause}`);
}

/**
 * Which lane of the controller an action runs in and whether it holds a running slot: decided
 * here, by the action's kind, and carried on the action (AttemptAction.ending, takesSlot); the
 * controller only follows them. `waitsForSlot` is set where the wait is decided (new-run.ts).
 */
import type { ActionKind, AttemptAction } from './types';

/** Actions that end a run: their own lane, as wide as --max-running. */
const ENDING: ReadonlySet<ActionKind> = new Set(['stop', 'finish', 'expire']);
/** Actions that start a run: each holds a slot until it ends (what it started may not be in the next lists yet); so does a grade that makes a grader. */
const STARTING: ReadonlySet<ActionKind> = new Set(['provision', 'replace', 'retry']);

export function withLane(a: AttemptAction): AttemptAction {
  if (ENDING.has(a.kind)) return { ...a, ending: true };
  if (STARTING.has(a.kind) && a.ops.length > 0) return { ...a, takesSlot: true };
  // A grade that makes a grader: the grader holds a slot as a run does (plan/grade.ts took it).
  if (a.ops.some((op) => op.type === 'create-grader')) return { ...a, takesSlot: true };
  return a;
}

/** How work on a key ended, as the controller's retry switch (Controller.endWork) takes it: from an action's plan and result. */
import type { ActionResult } from '../execute/executor';
import type { AttemptAction } from '../plan/types';

/** How work on a key ended, for the retry switch (Controller.endWork). */
export type KeyOutcome = { type: 'done' } | { type: 'requeue-after'; ms: number } | { type: 'error' } | { type: 'in-flight' };

export function outcome(a: AttemptAction, res: ActionResult | undefined): KeyOutcome {
  if (res && !res.ok) return { type: 'error' };
  return a.requeueAfterMs !== undefined ? { type: 'requeue-after', ms: a.requeueAfterMs } : { type: 'done' };
}

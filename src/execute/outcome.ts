/**
 * An error an operation met, as a typed outcome (plan/types.ts `OpOutcome`): classified by its
 * class or the engine's HTTP status, never by message text. What it means is the planner's
 * (plan/follow-up.ts).
 */
import { BackendRefusedError, describeEngineError, isNotFound, statusOf } from '../engine/errors';
import type { OpOutcome } from '../plan/types';
import { UnsafePathError } from '../util/no-follow';
import { SecretError } from '../pack/secrets';

export const DONE: OpOutcome = { type: 'done' };

/** `containerId`: the container the operation worked on (a start asked for, a copy went into). */
export function outcomeOf(err: unknown, containerId?: string): Exclude<OpOutcome, { type: 'done' }> {
  const id = containerId ? { containerId } : {};
  if (err instanceof SecretError) return { type: 'secret-missing', message: err.message, ...id };
  if (err instanceof UnsafePathError) return { type: 'unsafe-path', message: err.message, ...id };
  if (err instanceof BackendRefusedError) return { type: 'refused', reason: err.reason, message: err.message };
  const message = describeEngineError(err);
  if (isNotFound(err)) return { type: 'not-found', message, ...id };
  const status = statusOf(err);
  return { type: 'failed', message, ...(status !== undefined ? { status } : {}), ...id };
}

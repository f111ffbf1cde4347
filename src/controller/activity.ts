/**
 * One info line for what an executed action did to its attempt (created, started, finished,
 * replaced, retried, removed, stopped, adopted), for the controller's and `reconcile --once`'s
 * logs; undefined when it did nothing worth a line (a recorded attestation, a wait).
 */
import type { AttemptAction, Operation } from '../plan/types';
import type { AttemptStatus } from '../status/types';
import { plural } from '../util/plural';

/** `ops`: the operations done (the plan's and their follow-ups: ActionResult.ran). */
export function activity(a: AttemptAction, ops: readonly Operation[], rec: AttemptStatus | undefined): string | undefined {
  const has = (t: string) => ops.some((o) => o.type === t);
  const count = (t: string) => ops.filter((o) => o.type === t).length;
  const parts: string[] = [];
  const run = a.desired?.run ?? rec?.run;
  if (has('stop')) parts.push('stopped');
  if (has('finish') || has('harvest')) {
    const how = rec ? `${rec.phase}${rec.reason ? ` (${rec.reason}${rec.exitCode !== undefined ? `, exit ${rec.exitCode}` : ''})` : ''}` : 'finished';
    parts.push(`finished ${how}`);
  }
  const removed = [plural(count('remove-container'), 'container'), plural(count('remove-network'), 'network'), plural(count('remove-volume'), 'volume')].filter(
    (s) => !s.startsWith('0 '),
  );
  if (removed.length) parts.push(`removed ${removed.join(', ')}`);
  if (has('adopt')) parts.push(`adopted run ${run}`);
  if (has('create-container')) parts.push(`${a.kind === 'replace' ? 'replaced: ' : a.kind === 'retry' ? 'retried: ' : ''}created run ${run}`);
  if (has('start')) parts.push(`started run ${run}`);
  if (has('forget')) parts.push('forgotten (no spec)');
  return parts.length ? `${a.attempt}: ${parts.join('; ')}` : undefined;
}

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
  const removed = [plural(count('remove-container'), 'container'), plural(count('remove-network'), 'network'), plural(count('remove-volume'), 'volume')].filter(
    (s) => !s.startsWith('0 '),
  );
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

/**
 * `berth delete NAME... | -l SELECTOR | --all`: removes the attempts' engine resources now (a running
 * run is stopped and ends Failed, reason Deleted); the results and the status record stay. The
 * spec still exists, so the record keeps a `deleted` mark for the spec's hash: reconcile does not
 * run the attempt again until its spec changes or `berth rerun` asks for it (the way a user of
 * `reconcile --once` expects a deleted attempt to stay deleted). An attempt whose spec is gone is
 * removed as reconcile would remove it. While a controller runs the instance, it is asked to do
 * it (mark-and-pass.ts).
 */
import { EXIT } from '../../constants';
import type { Context } from '../context';
import { plural } from '../diag';
import { chooseAttempts } from './choose';
import { markAndPass } from './mark-and-pass';

export async function runDelete(ctx: Context, names: string[], o: { selector?: string[]; all?: boolean; timeout?: number }): Promise<number> {
  const chosen = await chooseAttempts(ctx, 'delete', names, o.selector, o.all === true);
  if (typeof chosen === 'number') return chosen;
  // --all: those with a valid spec not deleted yet (one without a spec goes at the next reconcile anyway)
  const rows = o.all ? chosen.filter((r) => r.spec && !r.status?.deleted) : chosen;
  if (!rows.length) {
    ctx.io.err('berth: delete --all: no attempt to delete\n');
    return EXIT.failed;
  }
  const r = await markAndPass(ctx, 'delete', rows, o.timeout !== undefined ? { timeoutMs: o.timeout } : {});
  if (!r.store) return r.code;
  for (const name of r.acted) {
    const ops = r.ops.get(name) ?? [];
    const n = (t: string) => ops.filter((op) => op === t).length;
    const removed = [plural(n('remove-container'), 'container'), plural(n('remove-network'), 'network'), plural(n('remove-volume'), 'volume')].filter(
      (s) => !s.startsWith('0 '),
    );
    const rec = await r.store.get(name);
    const stopped = ops.includes('stop') ? 'stopped; ' : '';
    const where = rec?.resultsDir ? `; results stay in ${rec.resultsDir}` : '';
    ctx.io.out(`attempt/${name} deleted (${stopped}${removed.length ? `removed ${removed.join(', ')}` : 'nothing to remove'}${where})\n`);
  }
  if (r.code === EXIT.ok) ctx.io.err(`${plural(r.acted.length, 'attempt')} deleted; not run again until the spec changes or berth rerun\n`);
  return r.code;
}

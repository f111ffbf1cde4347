/**
 * `berth delete NAME... | -l SELECTOR`: removes the attempts' engine resources now (a running
 * run is stopped and ends Failed, reason Deleted); the results and the status record stay. The
 * spec still exists, so the record keeps a `deleted` mark for the spec's hash: reconcile does not
 * run the attempt again until its spec changes or `berth rerun` asks for it (the way a user of
 * `reconcile --once` expects a deleted attempt to stay deleted). An attempt whose spec is gone is
 * removed as reconcile would remove it.
 */
import { EXIT, REASONS } from '../../constants';
import type { Context } from '../context';
import { plural } from '../diag';
import { chooseAttempts } from './choose';
import { markAndPass } from './mark-and-pass';

export async function runDelete(ctx: Context, names: string[], o: { selector?: string[] }): Promise<number> {
  const rows = await chooseAttempts(ctx, 'delete', names, o.selector);
  if (typeof rows === 'number') return rows;
  const at = new Date().toISOString();
  const r = await markAndPass(ctx, 'delete', rows, (row, rec, spec) => {
    if (!spec) {
      // No spec: reconcile removes it anyway, unless its spec is invalid (then it is protected).
      return row.reason === REASONS.invalidSpec || row.reason === REASONS.duplicateName
        ? { refused: 'its spec is invalid: fix it or remove its file, which removes the attempt' }
        : undefined;
    }
    const base = rec ?? {
      name: row.name,
      instance: ctx.instance,
      phase: 'Pending' as const,
      specHash: spec.hash,
      source: spec.relFile,
      run: 0,
      retriesUsed: 0,
      createdAt: at,
      history: [],
      updatedAt: at,
    };
    const { rerunRequested: _r, ...kept } = base;
    return { ...kept, deleted: { at, specHash: spec.hash } };
  });
  if (!r.pass) return r.code;
  for (const name of r.acted) {
    const action = r.pass.plan.actions.find((a) => a.attempt === name);
    const ops = action?.ops ?? [];
    const n = (t: string) => ops.filter((op) => op.type === t).length;
    const removed = [plural(n('remove-container'), 'container'), plural(n('remove-network'), 'network'), plural(n('remove-volume'), 'volume')].filter(
      (s) => !s.startsWith('0 '),
    );
    const rec = await r.store?.get(name);
    const stopped = ops.some((op) => op.type === 'stop') ? 'stopped; ' : '';
    const where = rec?.resultsDir ? `; results stay in ${rec.resultsDir}` : '';
    ctx.io.out(`attempt/${name} deleted (${stopped}${removed.length ? `removed ${removed.join(', ')}` : 'nothing to remove'}${where})\n`);
  }
  if (r.code === EXIT.ok) ctx.io.err(`${plural(r.acted.length, 'attempt')} deleted; not run again until the spec changes or berth rerun\n`);
  return r.code;
}

/**
 * `berth release NAME [--exit-code N]`: a running sandbox (spec.sandbox) ends with exit code N
 * (default 0), as its main process ending so would: the release is marked on its record and the
 * run is stopped, harvested, exported and graded as any run (plan/release.ts). While a
 * controller (or a `reconcile --once --wait`) runs the instance, it is asked to do it through
 * its requests folder (mark-and-pass.ts); else this command marks and makes one pass itself.
 */
import { EXIT } from '../../constants';
import type { Context } from '../context';
import { chooseAttempts } from './choose';
import { oneAttempt } from './exec';
import { markAndPass } from './mark-and-pass';

export async function runRelease(ctx: Context, nameArg: string, o: { exitCode?: number; timeout?: number }): Promise<number> {
  const name = oneAttempt(nameArg, 'release');
  const chosen = await chooseAttempts(ctx, 'release', [name], undefined, false);
  if (typeof chosen === 'number') return chosen;
  const r = await markAndPass(ctx, 'release', chosen, { ...(o.timeout !== undefined ? { timeoutMs: o.timeout } : {}), exitCode: o.exitCode ?? 0 });
  if (!r.store) return r.code;
  for (const n of r.acted) {
    const rec = await r.store.get(n);
    const what =
      rec?.releaseRequested && rec.phase === 'Running'
        ? 'release requested (the next reconcile ends it)'
        : `run ${rec?.run ?? '?'} ${rec?.phase ?? ''}`.trimEnd();
    ctx.io.out(`attempt/${n} released with exit code ${o.exitCode ?? 0}: ${what}\n`);
  }
  return r.acted.length ? r.code : EXIT.failed;
}

/** `berth plan`: what reconcile would do and why, against an engine that refuses every change. */
import { EXIT } from '../../constants';
import { planPass } from '../../controller/pass';
import { readOnlyEngine } from '../../engine/wrap';
import { changeCount, planToJson, renderPlan } from '../../plan/render';
import { passConfig, type Context } from '../context';
import { reportLoadErrors, specsRootError } from './shared';
import { gitSourceFrom, peekRevision, type GitFlags } from '../git-flags';
import type * as GitExec from '../../git/exec';

export interface PlanOptions extends GitFlags {
  output?: 'text' | 'json';
  /** Exit EXIT.changesPending (4) when the plan has changes, 0 when converged. */
  detailedExitcode?: boolean;
  maxRunning?: number;
  infraRetries?: number;
  egressProxyImage?: string;
  egressNetwork?: string;
  allowEmpty?: boolean;
}

export async function runPlan(ctx: Context, o: PlanOptions): Promise<number> {
  const git = await gitSourceFrom(ctx, o);
  if (!git) return planFrom(ctx, o);
  // The source's current commit, in a folder of the plan's own (the revision in force is left alone).
  let peek: Awaited<ReturnType<typeof peekRevision>>;
  try {
    peek = await peekRevision(git);
  } catch (err) {
    if (!(err instanceof (require('../../git/exec') as typeof GitExec).GitError)) throw err;
    ctx.io.err(`berth: ${git.cfg.url.display}: ${err.message}; nothing was planned\n`);
    return EXIT.failed;
  }
  try {
    ctx.specsDir = peek.dir;
    return await planFrom(ctx, o, peek.revision);
  } finally {
    await peek.done();
  }
}

async function planFrom(ctx: Context, o: PlanOptions, revision?: string): Promise<number> {
  const rootError = specsRootError(ctx);
  if (rootError) {
    ctx.io.err(rootError);
    return EXIT.usage;
  }
  const engine = readOnlyEngine(ctx.engine());
  const { load, plan } = await planPass({ ...passConfig(ctx, o), ...(revision !== undefined ? { revision } : {}) }, engine, ctx.store());
  if (o.output === 'json')
    ctx.io.out(JSON.stringify({ ...(planToJson(plan) as object), ...(revision !== undefined ? { revision } : {}), errors: load.errors }, null, 2) + '\n');
  else {
    reportLoadErrors(ctx, load);
    if (revision !== undefined) ctx.io.out(`revision ${revision}\n`);
    ctx.io.out(renderPlan(plan));
  }
  if (load.errors.length) return EXIT.usage;
  return o.detailedExitcode && changeCount(plan) > 0 ? EXIT.changesPending : EXIT.ok;
}

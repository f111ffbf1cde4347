/** `berth plan`: what reconcile would do and why, against an engine that refuses every change. */
import { EXIT } from '../../constants';
import { planPass } from '../../controller/pass';
import { readOnlyEngine } from '../../engine/wrap';
import { changeCount, planToJson, renderPlan } from '../../plan/render';
import { passConfig, type Context } from '../context';
import { reportLoadErrors, specsRootError } from './shared';

export interface PlanOptions {
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
  const rootError = specsRootError(ctx);
  if (rootError) {
    ctx.io.err(rootError);
    return EXIT.usage;
  }
  const engine = readOnlyEngine(ctx.engine());
  const { load, plan } = await planPass(passConfig(ctx, o), engine, ctx.store());
  if (o.output === 'json') ctx.io.out(JSON.stringify({ ...(planToJson(plan) as object), errors: load.errors }, null, 2) + '\n');
  else {
    reportLoadErrors(ctx, load);
    ctx.io.out(renderPlan(plan));
  }
  if (load.errors.length) return EXIT.usage;
  return o.detailedExitcode && changeCount(plan) > 0 ? EXIT.changesPending : EXIT.ok;
}

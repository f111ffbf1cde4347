/**
 * `berth plan`: what reconcile would do and why, against an engine that refuses every change.
 * An instance bound to another source (instance-source.ts) is refused as reconcile refuses it,
 * binding nothing; with `--move-instance` the plan is that of the move.
 */
import { EXIT, SCHEMA_VERSIONS } from '../../constants';
import type { Plan } from '../../plan/types';
import { diffForm, diffSpecs } from '../../spec/spec-diff';
import type { LoadResult } from '../../spec/types';
import type { RunSpecs } from '../../status/run-specs';
import { planPass } from '../../controller/pass';
import { readOnlyEngine } from '../../engine/wrap';
import { changeCount, planToJson, renderPlanTo } from '../../plan/render';
import { passConfig, type Context } from '../context';
import { emptySourceMessage, reportLoadErrors, specsRootError } from './shared';
import { gitSourceFrom, peekRevision, type GitFlags } from '../git-flags';
import type * as GitExec from '../../git/exec';
import { describeSource, type InstanceSource } from '../../status/source-binding';
import { folderSource, gitSourceOf, judgeSource, refusalMessage } from './instance-source';

export interface PlanOptions extends GitFlags {
  output?: 'text' | 'json';
  /** Exit EXIT.changesPending (4) when the plan has changes, 0 when converged. */
  detailedExitcode?: boolean;
  maxRunning?: number;
  infraRetries?: number;
  egressProxyImage?: string;
  egressNetwork?: string;
  allowEmpty?: boolean;
  /** The instance is bound to another source: plan as if it were moved to this one. */
  moveInstance?: boolean;
}

export async function runPlan(ctx: Context, o: PlanOptions): Promise<number> {
  const git = await gitSourceFrom(ctx, o);
  if (!git) return planFrom(ctx, o, await folderSource(ctx.specsDir));
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
    return await planFrom(ctx, o, gitSourceOf(git), peek.revision);
  } finally {
    await peek.done();
  }
}

async function planFrom(ctx: Context, o: PlanOptions, source: InstanceSource, revision?: string): Promise<number> {
  const rootError = specsRootError(ctx);
  if (rootError) {
    ctx.io.err(rootError);
    return EXIT.usage;
  }
  const engine = readOnlyEngine(ctx.engine());
  // As reconcile: an instance bound to another source is refused (exit 2); plan binds nothing.
  const verdict = await judgeSource(engine, ctx.instance, source);
  if (!verdict.ok) {
    if (!o.moveInstance) {
      ctx.io.err(refusalMessage(ctx.instance, verdict.binding, source, 'plan'));
      return EXIT.usage;
    }
    ctx.io.err(
      `berth: instance "${ctx.instance}" is bound to ${describeSource(verdict.binding.source)}: this is what reconcile --move-instance would do from ${describeSource(source)}\n`,
    );
  }
  const cfg = passConfig(ctx, o);
  // what reconcile would pull: the plan as a puller that has pulled nothing yet sees it
  if (cfg.pull) cfg.pull = { ...cfg.pull, states: () => new Map() };
  const { load, plan } = await planPass({ ...cfg, ...(revision !== undefined ? { revision } : {}) }, engine, ctx.store());
  withSpecDiffs(plan, load, ctx.store().runSpecs);
  if (o.output === 'json')
    ctx.io.out(
      JSON.stringify(
        { schemaVersion: SCHEMA_VERSIONS.plan, ...(planToJson(plan) as object), ...(revision !== undefined ? { revision } : {}), errors: load.errors },
        null,
        2,
      ) + '\n',
    );
  else {
    reportLoadErrors(ctx, load);
    if (revision !== undefined) ctx.io.out(`revision ${revision}\n`);
    renderPlanTo(plan, (s) => ctx.io.out(s));
  }
  if (load.errors.length) return EXIT.usage;
  if (plan.emptySource === 'empty' && !o.allowEmpty) {
    ctx.io.err(emptySourceMessage(ctx.instance, revision !== undefined ? `revision ${revision} (${ctx.specsDir})` : ctx.specsDir));
    return EXIT.usage;
  }
  return o.detailedExitcode && changeCount(plan) > 0 ? EXIT.changesPending : EXIT.ok;
}

/**
 * Each action that runs an attempt under a new spec hash says which fields changed: the spec the
 * attempt's run was made from (kept when it began: status/run-specs.ts) against the new one, in
 * the hashed form (secrets by name only). A run begun before berth kept its spec says so.
 */
export function withSpecDiffs(plan: Plan, load: LoadResult, kept: Pick<RunSpecs, 'get'>): void {
  const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
  for (const a of plan.actions) {
    const rec = a.status;
    const loaded = specs.get(a.attempt);
    if (!loaded || !rec?.specHash || rec.specHash === loaded.hash || a.ops.length === 0) continue;
    const was = kept.get(a.attempt);
    if (!was || was.specHash !== rec.specHash) {
      a.specDiff = {
        unknown: `the spec its run ${rec.run} was made from is not kept (a run begun before berth kept it): the fields that changed cannot be told`,
      };
    } else if (!was.spec) {
      a.specDiff = { unknown: 'the spec its run was made from was too large to keep: the fields that changed cannot be told' };
    } else {
      a.specDiff = { changes: diffSpecs(was.spec, diffForm(loaded.spec)) };
    }
  }
}

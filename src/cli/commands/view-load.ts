/**
 * The specs as the views read them (`get`, `summary`, `wait`, `report`, `describe`, names): the
 * folder (or the git revision in force) as loaded, with each AttemptSet whose file is broken as
 * its last good expansion and its children as their last good specs (spec/last-good.ts), as the
 * controller and `reconcile` plan them. So a slip in a set's file changes no result shown.
 */
import { LastGoodSets } from '../../spec/last-good';
import { loadSpecs, type LoadReport } from '../../spec/loader';
import { specsOptions, type Context } from '../context';

export async function loadView(ctx: Context): Promise<LoadReport> {
  const load = await loadSpecs({ specsDir: ctx.specsDir, resultsRoot: ctx.resultsRoot, ...specsOptions(ctx) });
  return new LastGoodSets(ctx.stateDir, ctx.instance).apply(load, ctx.specsDir);
}

/**
 * The names a command was given, resolved against what exists (names.ts): the instance's
 * attempts (valid and invalid specs, status records, damaged records) and the AttemptSets of
 * the specs. A kind berth does not know is a usage error; names that stand for nothing are
 * reported by the caller, which knows whether to go on with the rest (`get`, as kubectl's).
 */
import { loadView } from './view-load';
import { UsageError, type Context } from '../context';
import { diag } from '../diag';
import { harvestedRuns } from './logs';
import { expandRefs, parseRefs, setNames, type Expanded, type Known } from '../names';

export async function knownNames(ctx: Context): Promise<Known> {
  const [load, statuses] = await Promise.all([loadView(ctx), ctx.store().loadAll()]);
  const attempts = new Set([...load.specs.map((s) => s.spec.name), ...statuses.keys(), ...ctx.store().damaged().keys(), ...load.protectedNames]);
  const sets = new Map([...(load.sets ?? new Map())].map(([name, set]) => [name, set.children] as const));
  return { attempts, sets, instance: ctx.instance };
}

/**
 * The attempt names `args` stand for; nothing is loaded when no name was given. `harvested`
 * (`logs`): an attempt with neither spec nor record any more still counts while a run folder of
 * it with a harvested log is in the results root.
 */
export async function resolveAttempts(ctx: Context, args: readonly string[], o: { harvested?: boolean } = {}): Promise<Expanded> {
  if (!args.length) return { names: [], missing: [] };
  const refs = parseRefs(args);
  if (!Array.isArray(refs)) throw new UsageError(refs.usage);
  const known = await knownNames(ctx);
  if (!o.harvested) return expandRefs(refs, known);
  const attempts = new Set(known.attempts);
  for (const r of refs) if (r.kind === 'attempt' && !attempts.has(r.name) && (await harvestedRuns(ctx.resultsRoot, r.name)).length) attempts.add(r.name);
  return expandRefs(refs, { ...known, attempts });
}

/** Each message of `missing` as an error line; true when there was one. */
export function reportMissing(ctx: Context, r: Expanded): boolean {
  for (const m of r.missing) diag(ctx, 'error', m);
  return r.missing.length > 0;
}

/** Set names (`get --sets`, `summary`, `report`): `set/NAME` read as NAME. */
export function resolveSets(args: readonly string[]): string[] {
  const r = setNames(args);
  if (!Array.isArray(r)) throw new UsageError(r.usage);
  return r;
}

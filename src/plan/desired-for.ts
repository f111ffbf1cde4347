/**
 * The desired state of a spec's run, kept with its LoadedSpec (see DesiredStates) and built lazily.
 */
import { LEGACY_NAMING, type Naming } from '../constants';
import { policyKey } from '../policy';
import { desiredAttempt, desiredNames, type DesiredContext } from '../desired/attempt';
import { LazyDesired } from '../desired/lazy';
import type { DesiredAttempt } from '../desired/types';
import type { LoadedSpec } from '../spec/types';
import type { PlanInput } from './input';
import { runResultsDir } from './results';

/**
 * The desired states of the specs' runs, kept across plans by whoever owns their lifetime (the
 * controller, a `reconcile`'s passes: PassConfig.desired) and handed to the planner in its input,
 * so the planner holds no state of its own. desiredAttempt() is pure and the loader hands out
 * the same LoadedSpec for an unchanged file: its desired state is kept with it (weakly: a spec
 * the loader dropped takes its states with it), so a pass over a thousand unchanged attempts
 * does not build a thousand again. Desired states are never mutated.
 */
export class DesiredStates {
  private readonly memo = new WeakMap<LoadedSpec, Map<string, DesiredAttempt>>();

  /** The desired state of run `run` of `loaded` under `inp`'s settings (`legacy`: berth 0.1's names). */
  get(inp: PlanInput, loaded: LoadedSpec, run: number, legacy = false): DesiredAttempt {
    const key = [
      inp.instance,
      policyKey(inp.policy),
      inp.resultsRoot,
      run,
      legacy ? 'legacy' : '',
      inp.diskQuota ? 'quota' : '',
      inp.volumeQuota ? 'volume-quota' : '',
    ].join('\0');
    let byKey = this.memo.get(loaded);
    const hit = byKey?.get(key);
    if (hit) return hit;
    // Built on first use: most attempts of a big pass (finished, waiting) need only name, hash,
    // run and their containers' names (namesOf), which need no build.
    const ctx = desiredContext(inp, legacy ? LEGACY_NAMING : undefined);
    const root = inp.resultsRoot;
    const d = new LazyDesired(
      loaded.spec.name,
      loaded.hash,
      run,
      loaded,
      () => desiredAttempt(ctx, loaded, run, runResultsDir(root, loaded.spec.results, run)),
      () => desiredNames(ctx, loaded),
    );
    if (!byKey) this.memo.set(loaded, (byKey = new Map()));
    if (byKey.size >= 8) byKey.delete(byKey.keys().next().value as string);
    byKey.set(key, d);
    return d;
  }
}

/** The desired state of run `run` of `loaded`, from the input's DesiredStates. */
export function desiredFor(inp: PlanInput, loaded: LoadedSpec, run: number, legacy = false): DesiredAttempt {
  return inp.desired.get(inp, loaded, run, legacy);
}

function desiredContext(inp: PlanInput, naming?: Naming): DesiredContext {
  return {
    instance: inp.instance,
    ...(naming ? { naming } : {}),
    policy: inp.policy,
    ...(inp.diskQuota ? { diskQuota: true } : {}),
    ...(inp.volumeQuota ? { volumeQuota: true } : {}),
  };
}

/**
 * The desired state of a spec's run, kept with its LoadedSpec (see below) and built lazily.
 */
import { LEGACY_NAMING, type Naming } from '../constants';
import { desiredAttempt } from '../desired/attempt';
import { LazyDesired } from '../desired/lazy';
import type { DesiredAttempt } from '../desired/types';
import type { LoadedSpec } from '../spec/types';
import type { PlanInput } from './input';
import { runResultsDir } from './results';

/**
 * desiredAttempt() is pure and the loader hands out the same LoadedSpec for an unchanged file:
 * its desired state is kept with it, so a pass over a thousand unchanged attempts does not
 * build a thousand again. Desired states are never mutated.
 */
const desiredMemo = new WeakMap<LoadedSpec, Map<string, DesiredAttempt>>();

export function desiredFor(inp: PlanInput, loaded: LoadedSpec, run: number, legacy = false): DesiredAttempt {
  const key = [inp.instance, inp.egress?.proxyImage ?? '', inp.egress?.network ?? '', inp.resultsRoot, run, legacy ? 'legacy' : ''].join('\0');
  let byKey = desiredMemo.get(loaded);
  const hit = byKey?.get(key);
  if (hit) return hit;
  // Built on first use: most attempts of a big pass (finished, waiting) need only name, hash and run.
  const d = new LazyDesired(loaded.spec.name, loaded.hash, run, loaded, () => buildDesired(inp, loaded, run, legacy ? LEGACY_NAMING : undefined));
  if (!byKey) desiredMemo.set(loaded, (byKey = new Map()));
  if (byKey.size >= 8) byKey.delete(byKey.keys().next().value as string);
  byKey.set(key, d);
  return d;
}

function buildDesired(inp: PlanInput, loaded: LoadedSpec, run: number, naming?: Naming): DesiredAttempt {
  return desiredAttempt(
    {
      instance: inp.instance,
      ...(naming ? { naming } : {}),
      ...(inp.egress?.proxyImage ? { egressProxyImage: inp.egress.proxyImage } : {}),
      ...(inp.egress?.network ? { egressNetwork: inp.egress.network } : {}),
    },
    loaded,
    run,
    runResultsDir(inp.resultsRoot, loaded.spec.results, run),
  );
}

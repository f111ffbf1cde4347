/**
 * The desired state of a spec's run, kept with its LoadedSpec (see DesiredStates) and built lazily.
 */
import { LEGACY_NAMING, type Naming } from '../constants';
import { policyKey } from '../policy';
import { desiredAttempt, desiredNames, type DesiredContext } from '../desired/attempt';
import { LazyDesired, type DesiredMaker } from '../desired/lazy';
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
  /** Per spec, the states of its last few (input settings, run) pairs; most specs have one. */
  private readonly memo = new WeakMap<LoadedSpec, Slot[]>();
  /** Per input (a pass, a controller batch): its settings as one key, and the makers of its states. */
  private readonly inputs = new WeakMap<PlanInput, InputSlot>();

  /** The desired state of run `run` of `loaded` under `inp`'s settings (`legacy`: berth 0.1's names). */
  get(inp: PlanInput, loaded: LoadedSpec, run: number, legacy = false): DesiredAttempt {
    let i = this.inputs.get(inp);
    if (!i) this.inputs.set(inp, (i = inputSlot(inp)));
    const slots = this.memo.get(loaded);
    if (slots) for (const s of slots) if (s.run === run && s.legacy === legacy && s.key === i.key) return s.d;
    // Built on first use: most attempts of a big pass (finished, waiting) need only name, hash,
    // run and their containers' names (namesOf), which need no build.
    const d = new LazyDesired(loaded.spec.name, loaded.hash, run, loaded, legacy ? i.legacy : i.maker);
    const slot: Slot = { key: i.key, run, legacy, d };
    if (!slots) this.memo.set(loaded, [slot]);
    else {
      if (slots.length >= 8) slots.shift();
      slots.push(slot);
    }
    return d;
  }
}

interface Slot {
  key: string;
  run: number;
  legacy: boolean;
  d: DesiredAttempt;
}

interface InputSlot {
  key: string;
  maker: DesiredMaker;
  legacy: DesiredMaker;
}

function inputSlot(inp: PlanInput): InputSlot {
  const key = [inp.instance, policyKey(inp.policy), inp.resultsRoot, inp.diskQuota ? 'quota' : '', inp.volumeQuota ? 'volume-quota' : ''].join('\0');
  // what the makers hold: the context and the results root, never the input (a controller keeps specs, and so their states, across passes)
  const root = inp.resultsRoot;
  const maker = (ctx: DesiredContext): DesiredMaker => ({
    full: (loaded, run) => desiredAttempt(ctx, loaded, run, runResultsDir(root, loaded.spec.results, run)),
    names: (loaded) => desiredNames(ctx, loaded),
  });
  return { key, maker: maker(desiredContext(inp)), legacy: maker(desiredContext(inp, LEGACY_NAMING)) };
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

/**
 * Where a waiting attempt stands in the admission queue, for the prefetch window (pure).
 *
 * - `now`: it is among the first attempts waiting to be admitted, as many as there are free
 *   slots (in admission order, set-admission.ts): a slot waits for its images.
 * - `ahead`: past those, its image is one of the next `--prefetch` pulls: the attempts after the
 *   free slots' are walked in admission order and each image that still needs a pull takes one
 *   place; an attempt whose image is here already (IfNotPresent) takes none, and one whose image
 *   an earlier waiting attempt needs too rides on that attempt's pull (one pull per image). So
 *   `--prefetch N` pulls N images ahead of the slots, however many attempts share each.
 * - `later`: beyond that: it waits its turn.
 *
 * The puller begins a pull asked `now` before one asked `ahead`, and no `ahead` pull while a `now`
 * one is under way or waits (PullRequest.ahead): a prefetch never takes the bandwidth a free slot
 * waits on. Counted over every spec whatever the batch a controller plans, and only once a run of
 * the plan needs a pull (a plan with nothing to pull never sorts them).
 */
import { FINISHED_PHASES, REASONS } from '../constants';
import { isMain } from './ops';
import type { PlanInput } from './input';
import { repositoryOf } from '../registry/reference';
import { resolveImage } from '../observe/images';
import { admissionOrder } from './set-admission';

/** Reasons of a record whose attempt waits to be admitted (a new run not begun). */
const WAITING = new Set<string>([
  REASONS.waitingForSlot,
  REASONS.waitingForSet,
  REASONS.pulling,
  REASONS.imagePullBackOff,
  REASONS.imageMissing,
  REASONS.diskPressure,
]);

/** Where a waiting attempt's pull stands (see the header). */
export type PullTurn = 'now' | 'ahead' | 'later';

/** The turn of each attempt that waits for a new run to be admitted, with `free` slots free and `--prefetch` `prefetch`. */
export function pullTurns(inp: PlanInput, free: number, prefetch: number): Map<string, PullTurn> {
  const out = new Map<string, PullTurn>();
  const index = inp.snapshot.images;
  const held = new Map<string, boolean>();
  /** The images the free slots' attempts need, and the places of the images pulled ahead. */
  const nowRefs = new Set<string>();
  const places = new Map<string, number>();
  let waiting = 0;
  for (const s of [...inp.specs].sort(admissionOrder)) {
    const name = s.spec.name;
    const rec = inp.statuses.get(name);
    const obs = inp.snapshot.attempts.get(name);
    if (obs?.containers.some(isMain)) continue;
    const waits = !rec || rec.specHash !== s.hash || (rec.reason !== undefined && WAITING.has(rec.reason) && !FINISHED_PHASES.has(rec.phase));
    if (!waits) continue;
    const ref = s.spec.image;
    if (waiting++ < free) {
      out.set(name, 'now');
      nowRefs.add(ref);
      continue;
    }
    let here = held.get(ref);
    if (here === undefined) {
      here = index !== undefined && resolveImage(index, ref) !== undefined;
      held.set(ref, here);
    }
    // an attempt whose image is here already needs no pull: it takes no place of the window
    const pulls = !here || s.spec.pullPolicies.main === 'Always';
    if (!pulls || nowRefs.has(ref)) {
      out.set(name, 'ahead');
      continue;
    }
    let place = places.get(ref);
    if (place === undefined) places.set(ref, (place = places.size));
    out.set(name, place < prefetch ? 'ahead' : 'later');
  }
  return out;
}

/** Attempt `name`'s turn to have its images pulled (pullTurns, computed once a plan). */
export function pullWindow(ctx: { inp: PlanInput; freeAtStart: number; turns?: ReadonlyMap<string, PullTurn> }, name: string): PullTurn {
  ctx.turns ??= pullTurns(ctx.inp, ctx.freeAtStart, ctx.inp.pulls?.prefetch ?? 0);
  return ctx.turns.get(name) ?? 'now';
}

/** The reference a set's pinned image is pulled by: its repository at the pinned digest, when the pin holds one of it. */
export function pinnedPullRef(ref: string, repoDigests: readonly string[]): string | undefined {
  const repo = repositoryOf(ref);
  const d = repoDigests.find((x) => repositoryOf(x) === repo) ?? repoDigests.find((x) => x.includes('@sha256:'));
  return d ? `${repo}@${d.slice(d.indexOf('@') + 1)}` : undefined;
}

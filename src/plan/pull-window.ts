/**
 * Where a waiting attempt stands in the admission queue, for the prefetch window: its image is
 * pulled ahead only while its place is below the free slots plus `--prefetch`. A place counts the
 * attempts before it, in admission order (set-admission.ts), that wait to be admitted and still
 * need their image: one whose image the engine holds costs no pull and holds no place, so the
 * pulls go on back to back while the slots are busy, never more than free slots plus --prefetch
 * attempts' images ahead. Counted over every spec whatever the batch a controller plans, and only
 * once a run of the plan needs a pull (a plan with nothing to pull never sorts them). Pure.
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

/** The places of the attempts that wait for a new run to be admitted, in admission order. */
export function waitingPlaces(inp: PlanInput): Map<string, number> {
  const out = new Map<string, number>();
  const index = inp.snapshot.images;
  const resolved = new Map<string, boolean>();
  let place = 0;
  for (const s of [...inp.specs].sort(admissionOrder)) {
    const name = s.spec.name;
    const rec = inp.statuses.get(name);
    const obs = inp.snapshot.attempts.get(name);
    if (obs?.containers.some(isMain)) continue;
    const waits = !rec || rec.specHash !== s.hash || (rec.reason !== undefined && WAITING.has(rec.reason) && !FINISHED_PHASES.has(rec.phase));
    if (!waits) continue;
    out.set(name, place);
    // an attempt whose image is here already needs no pull: it takes no place of the window
    const ref = s.spec.image;
    let held = resolved.get(ref);
    if (held === undefined) {
      held = index !== undefined && resolveImage(index, ref) !== undefined;
      resolved.set(ref, held);
    }
    if (!held || s.spec.pullPolicies.main === 'Always') place++;
  }
  return out;
}

/** Whether attempt `name`'s images may be pulled now: its place is within the free slots plus --prefetch. */
export function pullWindow(ctx: { inp: PlanInput; freeAtStart: number; places?: ReadonlyMap<string, number> }, name: string): boolean {
  const prefetch = ctx.inp.pulls?.prefetch ?? 0;
  ctx.places ??= waitingPlaces(ctx.inp);
  const place = ctx.places.get(name) ?? 0;
  return place < ctx.freeAtStart + prefetch;
}

/** The reference a set's pinned image is pulled by: its repository at the pinned digest, when the pin holds one of it. */
export function pinnedPullRef(ref: string, repoDigests: readonly string[]): string | undefined {
  const repo = repositoryOf(ref);
  const d = repoDigests.find((x) => repositoryOf(x) === repo) ?? repoDigests.find((x) => x.includes('@sha256:'));
  return d ? `${repo}@${d.slice(d.indexOf('@') + 1)}` : undefined;
}

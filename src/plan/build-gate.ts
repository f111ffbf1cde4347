/**
 * The build gate (pure): whether the images a new run (or a grade) builds from a Dockerfile are
 * there to start it, are being built, or failed (docs/CONTRACT.md "Images built from a
 * Dockerfile"). The builds under way, failed and done are observed state (the builder keeps them,
 * as the engine keeps containers, and a failure on disk, `<state>/builds/<hash>.json`), handed to
 * the planner in its input like the snapshot; the plan asks for the builds it needs
 * (`Plan.builds`), in the order its attempts will be admitted, and the builder runs them. Nothing
 * here builds.
 *
 * An image is there when the engine holds its tag (`berth-build/<16 hex>`) with the label of its
 * whole build hash: a tag that names another image (someone else's, or a 64-bit collision) is built
 * again. A failed build holds its attempts Blocked/BuildFailed until its hash changes (another
 * image, another gate) or `berth rerun` asks again after the failure.
 */
import { buildTag } from '../constants';
import type { HeldImage } from '../observe/images';
import type { NormalizedBuild } from '../spec/types';

/** What the builder knows of one build hash. */
export interface ImageBuildState {
  /** Asked for and not begun yet (--max-builds are under way). */
  queued?: boolean;
  /** Under way: since when, the step it is at (`3/5 RUN make`), or the other berth that builds it. */
  building?: { since: number; step?: string; elsewhere?: string };
  /** The last build of this hash failed (also read back from `<state>/builds/<hash>.json`). */
  failed?: { at: number; message: string };
  /** Built (by this berth): when, and the image's id. */
  built?: { at: number; id: string };
}

/** The planner's view of the builds (PlanInput.builds). */
export interface BuildInput {
  states: ReadonlyMap<string, ImageBuildState>;
  /** `--max-builds`, for messages. */
  maxBuilds: number;
}

/** Limits a build runs under: the largest any attempt asking for it allows (null: one of them has none). */
export interface BuildLimits {
  diskBytes: number | null;
  memoryBytes: number | null;
  cpus: number | null;
}

/** A build the plan asks for: the image, the attempts that need it (admission order), the limits it runs under. */
export interface BuildRequest {
  hash: string;
  tag: string;
  build: NormalizedBuild;
  attempts: string[];
  limits: BuildLimits;
  /** An asking attempt's `berth rerun` (ms since the epoch): a failure before it is built again. */
  rerunAt?: number;
}

export type BuildVerdict =
  | { type: 'ready' }
  /** Being built, or to be built (asked for). */
  | { type: 'build'; message: string }
  /** Failed, for good until the hash changes or a rerun. */
  | { type: 'failed'; message: string };

/** Whether the engine holds `build`'s image: its tag names an image labeled with its hash. */
export function builtHeld(held: HeldImage | undefined, build: NormalizedBuild): boolean {
  return held !== undefined && held.build === build.hash;
}

/** The verdict for one build of an attempt (`of`: '' for its own image, `grader` for its grader's). */
export function gateBuild(
  build: NormalizedBuild,
  held: HeldImage | undefined,
  input: BuildInput | undefined,
  rerunAt: number | undefined,
  of: '' | 'grader',
): BuildVerdict {
  if (builtHeld(held, build)) return { type: 'ready' };
  const tag = buildTag(build.hash);
  const what = of ? `the grader's image ${tag}` : `image ${tag}`;
  const s = input?.states.get(build.hash);
  if (s?.failed && !s.building && !s.queued && (rerunAt === undefined || rerunAt <= s.failed.at))
    return { type: 'failed', message: `the build of ${what} failed: ${s.failed.message} (built again when its build hash changes, or on berth rerun)` };
  if (s?.building?.elsewhere) return { type: 'build', message: `${what} is being built by ${s.building.elsewhere}` };
  // the step under way is not in the message: a record is written when its words change, not at every step (describe shows the step)
  if (s?.building) return { type: 'build', message: `building ${what}` };
  if (s?.queued) return { type: 'build', message: `${what} waits its turn to build (--max-builds ${input?.maxBuilds ?? 1})` };
  return { type: 'build', message: `building ${what}` };
}

/** Adds `build` for attempt `name` to the plan's requests, kept in admission order, its limits widened to the attempt's. */
export function askBuild(requests: Map<string, BuildRequest>, build: NormalizedBuild, name: string, limits: BuildLimits, rerunAt: number | undefined): void {
  const r = requests.get(build.hash);
  if (!r) {
    requests.set(build.hash, { hash: build.hash, tag: buildTag(build.hash), build, attempts: [name], limits: { ...limits }, ...(rerunAt ? { rerunAt } : {}) });
    return;
  }
  if (!r.attempts.includes(name)) r.attempts.push(name);
  const wider = (a: number | null, b: number | null) => (a === null || b === null ? null : Math.max(a, b));
  r.limits = {
    diskBytes: wider(r.limits.diskBytes, limits.diskBytes),
    memoryBytes: wider(r.limits.memoryBytes, limits.memoryBytes),
    cpus: wider(r.limits.cpus, limits.cpus),
  };
  if (rerunAt !== undefined && (r.rerunAt === undefined || rerunAt > r.rerunAt)) r.rerunAt = rerunAt;
}

/**
 * The pull gate: whether a new run's images are there to start it, or must be pulled first, or
 * wait out a failed pull's back-off (docs/CONTRACT.md "Images from registries"). Pure: the pulls
 * under way, failed and done are observed state (the controller's puller keeps them, as the engine
 * keeps containers), handed to the planner in its input like the snapshot; the plan asks for the
 * pulls it needs (`Plan.pulls`), in the order its attempts will be admitted, and the puller runs
 * them. Nothing here pulls.
 */
import { DEFAULTS } from '../constants';
import type { PullErrorKind } from '../engine/errors';
import type { PullPolicy } from '../spec/types';

/** What the puller knows of one image reference (as pulled: a tag, or `name@sha256:…`). */
export interface ImagePullState {
  /** Asked for and not begun yet (--max-pulls are under way). */
  queued?: boolean;
  /** Under way: since when, and the bytes of its layers as far as the engine has told them. */
  pulling?: { since: number; done: number; total: number };
  /** The failures since its last success (the back-off clock): the first's words kept with the latest's. */
  failed?: {
    kind: PullErrorKind;
    first: string;
    latest: string;
    /** Failures that count toward --pull-retries (a rate limit's waits do not). */
    failures: number;
    /** When the next try may begin (ms since the epoch). */
    retryAt: number;
    /** The registry said how long to wait (Retry-After). */
    retryAfter?: boolean;
  };
  /** The last pull that succeeded: when, the image id and digest, and the runs it was asked for (`name#run`). */
  pulled?: { at: number; id: string; digest?: string; for: readonly string[] };
}

/** The planner's view of the pulls (PlanInput.pulls). */
export interface PullInput {
  states: ReadonlyMap<string, ImagePullState>;
  /** `--prefetch`: how many attempts beyond the free slots may have their images pulled ahead. */
  prefetch: number;
  /** `--pull-retries`, in a finite run (`--once --wait`) only: an image failed this often settles its attempts Blocked. */
  retries?: number;
}

/** A pull the plan asks for: the reference, and the attempts (and the runs, `name#run`) that need it, in admission order. */
export interface PullRequest {
  ref: string;
  attempts: string[];
  runs: string[];
  /** The platform to pull (a build's `FROM --platform=`); absent: the engine's own. */
  platform?: string;
  /** A prefetch: every attempt asking waits for a slot (pull-window.ts); begun after the pulls free slots wait for. */
  ahead?: true;
}

/** An image of a new run, as the gate sees it. */
export interface GatedImage {
  /** The reference to pull (a set's pin: `name@sha256:…`). */
  ref: string;
  /** What the spec calls it (for messages). */
  shown: string;
  policy: PullPolicy;
  /** The engine holds it now. */
  held: boolean;
  /** Whose image it is, for messages: '' (the attempt's), `sidecar NAME`, `the build` (a FROM image). */
  of: string;
  /** The platform to pull (a build's `FROM --platform=`); absent: the engine's own. */
  platform?: string;
}

export type GateVerdict =
  | { type: 'ready' }
  /** Needs a pull (asked for, or under way). */
  | { type: 'pull'; ref: string; message: string }
  /** Failed; tried again at `retryAt` (or never, when `settled`). */
  | { type: 'backoff'; ref: string; message: string; retryAt: number; settled: boolean };

/** The key of one run, as a pull's `for` names it. */
export const runKey = (name: string, run: number): string => `${name}#${run}`;

/** How an image fails, in the words of the contract: which it was, and what to do. */
export function failureText(kind: PullErrorKind, ref: string, text: string, registry: string): string {
  switch (kind) {
    case 'unauthorized':
      return `unauthorized at ${registry}: give berth a credential (docker login ${registry}, or --registry-config FILE): ${text}`;
    case 'not-found':
      return `not found: ${ref} is not in ${registry}: ${text}`;
    case 'rate-limited':
      return `rate limited by ${registry}: ${text}`;
    case 'unreachable':
      return `unreachable: ${registry}: ${text}`;
    default:
      return `registry error from ${registry}: ${text}`;
  }
}

function seconds(ms: number): string {
  return `${Math.max(0, Math.ceil(ms / 1000))} s`;
}

/** The verdict for one image of run `key` at `now`. */
export function gateImage(img: GatedImage, state: ImagePullState | undefined, key: string, now: number, input: PullInput | undefined): GateVerdict {
  const what = img.of ? `image ${img.shown} of ${img.of}` : `image ${img.shown}`;
  if (img.policy === 'Never') return { type: 'ready' };
  if (img.policy === 'IfNotPresent' && img.held) return { type: 'ready' };
  if (img.policy === 'Always' && state?.pulled?.for.includes(key) && img.held) return { type: 'ready' };
  if (!input) return { type: 'ready' }; // no puller (a read of the plan without one): the preflight decides
  const f = state?.failed;
  if (f && !state?.pulling && !state?.queued) {
    const settled = input.retries !== undefined && f.failures >= input.retries;
    if (settled || now < f.retryAt) {
      const first = f.first === f.latest ? '' : ` (first failure: ${f.first})`;
      const when = settled
        ? `; given up after ${f.failures} failed pulls (--pull-retries ${input.retries ?? ''})`
        : `; next try in ${seconds(f.retryAt - now)}${f.retryAfter ? ' (the registry’s Retry-After)' : ''}`;
      return { type: 'backoff', ref: img.ref, message: `${what}: pull failed: ${f.latest}${first}${when}`, retryAt: f.retryAt, settled };
    }
  }
  return { type: 'pull', ref: img.ref, message: `pulling ${what}` };
}

/** The next wait of an image's back-off clock after `failures` counted failures (10 s doubling, at most 5 min), or the registry's. */
export function pullBackoffMs(failures: number, retryAfterMs?: number): number {
  if (retryAfterMs !== undefined) return Math.max(0, retryAfterMs);
  return Math.min(DEFAULTS.pullBackoffBaseMs * 2 ** Math.max(0, failures - 1), DEFAULTS.pullBackoffMaxMs);
}

/**
 * Adds `ref` for attempt `name` (run key `key`) to the plan's requests, kept in admission order;
 * `ahead`: a prefetch (the request stays one only while every attempt asking is ahead).
 */
export function askPull(requests: Map<string, PullRequest>, ref: string, name: string, key: string, platform?: string, ahead = false): void {
  const had = requests.get(ref);
  const r = had ?? { ref, attempts: [], runs: [], ...(platform ? { platform } : {}), ...(ahead ? { ahead: true as const } : {}) };
  if (had && !ahead) delete r.ahead;
  if (!r.attempts.includes(name)) r.attempts.push(name);
  if (!r.runs.includes(key)) r.runs.push(key);
  requests.set(ref, r);
}

/** What the gate says of a whole new run: every image ready (undefined), or why it waits. */
export type RunGate =
  | { type: 'pull'; refs: string[]; message: string }
  | { type: 'later'; message: string }
  | { type: 'backoff'; message: string; retryAt: number; settled: boolean };

/**
 * The gate of a new run: a failed image holds it (the earliest retry decides when to look again;
 * settled only when every failed one is), else the images to pull are asked for when the run is
 * within the prefetch window (`inWindow`: its place among the attempts waiting to be admitted is
 * below the free slots plus --prefetch), else it waits its turn.
 */
export function gateRun(images: readonly GatedImage[], key: string, now: number, input: PullInput | undefined, inWindow: boolean): RunGate | undefined {
  const verdicts = images.map((img) => gateImage(img, input?.states.get(img.ref), key, now, input));
  const backoff = verdicts.filter((v): v is Extract<GateVerdict, { type: 'backoff' }> => v.type === 'backoff');
  if (backoff.length) {
    return {
      type: 'backoff',
      message: backoff.map((b) => b.message).join('; '),
      retryAt: Math.min(...backoff.map((b) => b.retryAt)),
      settled: backoff.every((b) => b.settled),
    };
  }
  const pulls = verdicts.filter((v): v is Extract<GateVerdict, { type: 'pull' }> => v.type === 'pull');
  if (!pulls.length) return undefined;
  const refs = [...new Set(pulls.map((p) => p.ref))];
  const message = pulls.map((p) => p.message).join('; ');
  if (!inWindow) return { type: 'later', message: `waits its turn to pull (--prefetch ${input?.prefetch ?? 0}): ${message.replace(/^pulling /, '')}` };
  return { type: 'pull', refs, message };
}

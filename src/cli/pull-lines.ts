/**
 * What the pulls look like to a person: one image's state (`describe`, `berth images`) and the
 * pulls under way (the progress line), from the puller's state (controller/puller.ts) or its file
 * (`<state>/<instance>/pulls.json`, written by whoever runs the pulls).
 */
import { readFileSync } from 'node:fs';
import { pullsFile, type PullsFile } from '../controller/puller';
import type { ImagePullState } from '../plan/pull-gate';
import { showBytes } from '../util/bytes';

/** The pulls file of an instance as last written (empty when none was). */
export function readPulls(stateDir: string, instance: string): ReadonlyMap<string, ImagePullState> {
  try {
    const f = JSON.parse(readFileSync(pullsFile(stateDir, instance), 'utf8')) as PullsFile;
    return new Map(Object.entries(f.pulls ?? {}));
  } catch {
    return new Map();
  }
}

/** Bytes done of total, as far as the engine has told them. */
export function bytesOf(p: { done: number; total: number }): string {
  return p.total > 0 ? `${showBytes(p.done)} of ${showBytes(p.total)}` : `${showBytes(p.done)} (size not known yet)`;
}

/** One image's pull, in a few words: queued, pulling (bytes), failed (why), pulled (when, digest). */
export function pullText(s: ImagePullState | undefined, now: number): string | undefined {
  if (!s) return undefined;
  if (s.pulling) return `pulling: ${bytesOf(s.pulling)}, for ${Math.round((now - s.pulling.since) / 1000)} s`;
  if (s.queued) return 'waiting for a pull slot (--max-pulls)';
  if (s.failed) return `failed ${s.failed.failures} time${s.failed.failures === 1 ? '' : 's'}: ${s.failed.latest}`;
  if (s.pulled) return `pulled ${new Date(s.pulled.at).toISOString()}${s.pulled.digest ? ` (${s.pulled.digest})` : ''}`;
  return undefined;
}

/** The pulls under way, for the progress line: `pulling 2 images: 30 MiB of 120 MiB`; '' when none. */
export function pullsUnderWay(states: ReadonlyMap<string, ImagePullState>): string {
  const under = [...states.values()].filter((s) => s.pulling).map((s) => s.pulling as { done: number; total: number });
  if (!under.length) return '';
  const sum = under.reduce((a, p) => ({ done: a.done + p.done, total: a.total + p.total }), { done: 0, total: 0 });
  return `pulling ${under.length} image${under.length === 1 ? '' : 's'}: ${bytesOf(sum)}`;
}

/**
 * The progress line of `reconcile --once --wait`, pure: `3/10 done: 2 passed, 1 failed; 4
 * Running, 3 Pending`, and on a terminal an estimate of the time left (`about 40s left`) and
 * colour. Elsewhere (a pipe, CI) the line has no estimate, so it is written once per change of
 * state, not once per second.
 */
import type { OutcomeClass } from '../sets/outcome';
import { duration } from './commands/shared';

export interface ProgressState {
  /** Every attempt of the specs. */
  total: number;
  /** Settled ones by how they count (passed, failed, infra, skipped). */
  outcomes: Partial<Record<OutcomeClass, number>>;
  /** Not settled yet, by phase (Pending, Running, ...). */
  busy: Map<string, number>;
}

/** ANSI colours of the outcome words (green, red, yellow), on a terminal without NO_COLOR. */
const COLOUR: Partial<Record<OutcomeClass, string>> = { passed: '32', failed: '31', infra: '33' };

/** Whether to colour what goes to a terminal: not with NO_COLOR set (any value but ''), nor TERM=dumb (https://no-color.org). */
export function useColour(isTTY: boolean, env: NodeJS.ProcessEnv): boolean {
  return isTTY && !env.NO_COLOR && env.TERM !== 'dumb';
}

/** The line without timing: what changes only when an attempt's state does. */
export function progressText(p: ProgressState, colour = false): string {
  const done = Object.values(p.outcomes).reduce((a, n) => a + (n ?? 0), 0);
  const paint = (o: OutcomeClass, s: string) => (colour && COLOUR[o] ? `\x1b[${COLOUR[o]}m${s}\x1b[0m` : s);
  const outs = (['passed', 'failed', 'infra', 'skipped'] as const).filter((o) => (p.outcomes[o] ?? 0) > 0).map((o) => paint(o, `${p.outcomes[o]} ${o}`));
  const busy = [...p.busy.entries()]
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([ph, n]) => `${n} ${ph}`);
  if (p.total === 0) return 'no attempts';
  return `${done}/${p.total} done${outs.length ? `: ${outs.join(', ')}` : ''}${busy.length ? `; ${busy.join(', ')}` : ''}`;
}

/**
 * Time left, from the pace so far (attempts settled per second from the start to the last one
 * settled, `lastSettledMs`; without it, to now), less the time since that last one: undefined
 * before the first one settles, or when all have. Once that time is used up and nothing more has
 * settled, it says so instead of counting down to a second that never comes.
 */
export function estimateLeft(p: ProgressState, elapsedMs: number, lastSettledMs?: number): string | undefined {
  const done = Object.values(p.outcomes).reduce((a, n) => a + (n ?? 0), 0);
  if (done === 0 || done >= p.total || elapsedMs <= 0) return undefined;
  const at = lastSettledMs ?? elapsedMs;
  const left = ((p.total - done) * at) / done - (elapsedMs - at);
  if (left < 1000) return `longer than the pace so far: ${duration(elapsedMs - at)} since one settled`;
  return `about ${duration(left)} left`;
}

/** How often a progress line is written again when nothing changed, where it is not redrawn in place (a CI log): a heartbeat. */
export const PROGRESS_HEARTBEAT_MS = 30_000;

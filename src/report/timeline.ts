/**
 * The timeline's numbers, pure: how many slots were held (a run provisioning or running, a grader
 * running, as `--max-running` counts them) over time, as a step function.
 */

export interface Step {
  /** ms since the epoch. */
  t: number;
  /** Slots held (runs and graders) from `t` until the next step. */
  running: number;
}

interface Span {
  provisionedAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  /** 'unfinished' while it may still be running; anything else without a finish held no slot after it began. */
  outcome: string;
}

/** The steps of the concurrency line: one per instant the count changes (an unfinished run holds its slot until `now`; a run that ended without a
 * finish time, none). */
export function concurrency(spans: readonly Span[], now: number): Step[] {
  const deltas = new Map<number, number>();
  const add = (t: number, d: number) => deltas.set(t, (deltas.get(t) ?? 0) + d);
  for (const s of spans) {
    const from = s.provisionedAt ?? s.startedAt;
    if (from === null) continue;
    const to = Math.max(from, s.finishedAt ?? (s.outcome === 'unfinished' ? now : from));
    if (to === from) continue;
    add(from, 1);
    add(to, -1);
  }
  const out: Step[] = [];
  let running = 0;
  for (const t of [...deltas.keys()].sort((a, b) => a - b)) {
    const d = deltas.get(t) as number;
    if (d === 0) continue;
    running += d;
    out.push({ t, running });
  }
  return out;
}

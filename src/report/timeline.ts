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

/**
 * `steps` sampled down to at most about `n` points over [from, to] (issue 55: a fleet of 100,000
 * runs has 200,000 steps): the window cut in `n` equal spans, each drawn at the most attempts it
 * saw held at once, so no peak is lost. Fewer steps than that are returned as they are.
 */
export function sampleSteps(steps: readonly Step[], from: number, to: number, n: number): Step[] {
  if (steps.length <= 2 * n || to <= from) return [...steps];
  const span = (to - from) / n;
  const out: Step[] = [];
  let k = 0;
  let running = 0;
  for (let b = 0; b < n; b++) {
    const start = from + b * span;
    const end = b === n - 1 ? Infinity : start + span;
    let peak = running;
    while (k < steps.length && (steps[k] as Step).t < end) {
      running = (steps[k] as Step).running;
      if (running > peak) peak = running;
      k++;
    }
    if (!out.length || (out[out.length - 1] as Step).running !== peak) out.push({ t: Math.round(start), running: peak });
    // the span's end value carries into the next one
    if (peak !== running) out.push({ t: Math.round(Math.min(end, to)), running });
  }
  return out;
}

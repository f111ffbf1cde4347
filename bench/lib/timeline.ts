/**
 * A lifecycle timeline of a contender's containers, from the engine's own event times
 * (`BENCH_FLEET_TRACE=1`, information): where a slot's time goes, create → start → die →
 * destroy, and how many of the slots were busy on average.
 */
import type { EngineEvent, RawEngine } from './engine';
import { summarize } from './stats';

const ACTIONS = ['create', 'start', 'die', 'destroy'] as const;
type Action = (typeof ACTIONS)[number];

export class Timeline {
  private readonly byId = new Map<string, Partial<Record<Action, number>>>();
  private sub: { close(): void } | undefined;

  /** Follows the container events whose name or labels hold `mark`. */
  static async open(engine: RawEngine, mark: string): Promise<Timeline> {
    const t = new Timeline();
    t.sub = await engine.subscribe({ type: ['container'], event: [...ACTIONS] }, (ev: EngineEvent) => {
      if (!Object.values(ev.attributes).some((v) => v.includes(mark))) return;
      const rec = t.byId.get(ev.id) ?? {};
      rec[ev.action as Action] ??= ev.engineMs;
      t.byId.set(ev.id, rec);
    });
    return t;
  }

  close(): void {
    this.sub?.close();
  }

  /** A one-line summary: medians of each step, and the slots' mean occupancy. */
  summary(slots: number): string {
    const recs = [...this.byId.values()].filter((r) => r.create !== undefined && r.die !== undefined);
    if (!recs.length) return 'no containers seen';
    const step = (a: Action, b: Action) => {
      const xs = recs.filter((r) => r[a] !== undefined && r[b] !== undefined).map((r) => (r[b] as number) - (r[a] as number));
      const s = summarize(xs);
      return `${a}→${b} p50 ${s.median.toFixed(0)} / mean ${(xs.reduce((x, y) => x + y, 0) / xs.length).toFixed(0)} ms`;
    };
    const t0 = Math.min(...recs.map((r) => r.create as number));
    const t1 = Math.max(...recs.map((r) => r.die as number));
    const busy = recs.reduce((sum, r) => sum + ((r.die as number) - (r.create as number)), 0);
    const running = recs.filter((r) => r.start !== undefined).reduce((sum, r) => sum + ((r.die as number) - (r.start as number)), 0);
    return [
      `${recs.length} containers over ${((t1 - t0) / 1000).toFixed(1)} s (first create → last die)`,
      step('create', 'start'),
      step('start', 'die'),
      step('die', 'destroy'),
      `slots busy (create → die) ${(busy / (t1 - t0)).toFixed(2)} of ${slots}, running (start → die) ${(running / (t1 - t0)).toFixed(2)}`,
      `slot time per attempt ${((slots * (t1 - t0)) / recs.length).toFixed(0)} ms, of which create → die ${(busy / recs.length).toFixed(0)} ms`,
    ].join('; ');
  }
}

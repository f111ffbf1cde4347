/**
 * Comparing fleets, pure (`berth compare`, the report's comparison, a git revision's outcome):
 * two sides of a set's children in, a paired comparison out.
 *
 * - **Pairs.** `--by AXIS=A,B`: a child with AXIS=A and one with AXIS=B that share every other
 *   axis value; `--baseline`: a child of the earlier summary and the child of the same name now
 *   (names come from axis values, so the same name is the same cell). A child with no partner is
 *   *unpaired*: listed, never paired.
 * - **What counts.** Only passed and failed are outcomes of the task (sets/outcome.ts); a pair in
 *   which either side is infra, skipped or unfinished is *left out* of every number and listed
 *   with both outcomes, so an infrastructure failure never reads as a regression or a fix.
 * - **Cells.** Pairs are grouped by their cell: every axis value but the compared axis and the
 *   samples axis (summary.ts). Without a samples axis a cell is one pair.
 * - **Numbers.** Both pass rates over the paired samples, their difference (after − before), a
 *   95% interval by a bootstrap over cells (paired.ts: cells are resampled, not samples, so the
 *   seeds of one task count as one piece of evidence), and the exact McNemar p-value on the
 *   discordant cells: a cell is worse when fewer of its paired samples passed after than before,
 *   better when more (with one sample per cell: passed → failed, failed → passed); equal cells
 *   are concordant. With samples, this is McNemar's test on tasks (a sign test), which the
 *   correlation of a task's samples does not fool.
 * - **Lists.** Regressions (worse cells), fixes (better cells), flaky cells (the paired samples of
 *   one side disagree), left-out pairs, unpaired children.
 * - **A regression** is a fall of the pass rate (difference < 0) with p < alpha: noise (p >= alpha)
 *   never is one.
 */
import { COMPARE } from '../constants';
import type { OutcomeClass } from './outcome';
import { bootstrapInterval, mcnemarExact, type Cluster } from './paired';

/** A child as one side of a comparison sees it (a SetSummary's children have these fields). */
export interface SideChild {
  name: string;
  coords: Record<string, string>;
  outcome: OutcomeClass;
  reason?: string | null;
}

/** A set as one side of a comparison sees it (a SetSummary, from `summary -o json` or now, has these fields). */
export interface SideSet {
  name: string;
  axes: string[];
  samplesAxis: string | null;
  children: SideChild[];
}

/** One side of a paired cell: how many of its paired samples passed, and their children. */
export interface CellSide {
  passed: number;
  names: string[];
}

export interface CellComparison {
  /** The cell's axis values (neither the compared axis nor the samples axis). */
  coords: Record<string, string>;
  /** Paired samples in the cell (both sides passed or failed). */
  n: number;
  before: CellSide;
  after: CellSide;
}

export interface LeftOut {
  before: { name: string; outcome: OutcomeClass; reason: string | null };
  after: { name: string; outcome: OutcomeClass; reason: string | null };
}

export interface Unpaired {
  /** The side it is on; the other side has no child to pair it with. */
  side: 'before' | 'after';
  name: string;
  coords: Record<string, string>;
  outcome: OutcomeClass;
}

export interface Comparison {
  /** What is compared: the two values of `--by`'s axis, or `baseline` and `now`. */
  before: string;
  after: string;
  /** `--by`: the axis; null for `--baseline`. */
  axis: string | null;
  /** The axes pairs share (`--by`: the other axes; `--baseline`: the set's axes). */
  pairedOn: string[];
  samplesAxis: string | null;
  /** Paired cells (clusters of the bootstrap) and paired samples in them. */
  cells: number;
  samples: number;
  /** Paired samples that passed, on each side. */
  passed: { before: number; after: number };
  passRate: { before: number | null; after: number | null };
  /** after − before, over the paired samples; null with none. */
  difference: number | null;
  interval: { lower: number; upper: number } | null;
  /** Cells that went down (b) and up (c): McNemar's discordant pairs. */
  discordant: { worse: number; better: number };
  pValue: number;
  /** The pass rate fell with p < alpha. */
  regression: boolean;
  regressions: CellComparison[];
  fixes: CellComparison[];
  flaky: CellComparison[];
  leftOut: LeftOut[];
  unpaired: Unpaired[];
  /** Every paired cell, in cell order (the report's difference heatmap). */
  all: CellComparison[];
}

export type SetStatus = 'compared' | 'axes-changed' | 'only-before' | 'only-after';

export interface SetComparison {
  set: string;
  status: SetStatus;
  /** Why a set was not compared, in words. */
  message: string | null;
  /** One per compared value (`--by AXIS=A,B,C`: B against A, C against A); none when not compared. */
  comparisons: Comparison[];
}

export interface CompareResult {
  schemaVersion: number;
  mode: 'by' | 'baseline';
  /** `--baseline`: the file and when its summary was made. */
  baseline: { file: string; generatedAt: string | null } | null;
  alpha: number;
  level: number;
  resamples: number;
  /** The bootstrap generator's state (xoshiro128**), as hex words. */
  seed: string[];
  sets: SetComparison[];
  /** Some comparison's pass rate fell with p < alpha. */
  regression: boolean;
}

export interface CompareOptions {
  alpha?: number;
  level?: number;
  resamples?: number;
}

const DECIDED: ReadonlySet<OutcomeClass> = new Set(['passed', 'failed']);

const key = (axes: readonly string[], coords: Readonly<Record<string, string>>) => JSON.stringify(axes.map((a) => coords[a] ?? ''));

const byCodeUnits = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

interface Pair {
  before: SideChild;
  after: SideChild;
}

interface Paired {
  pairs: Pair[];
  unpaired: Unpaired[];
}

/** Pairs grouped by cell, judged: the numbers and the lists. */
function judge(
  meta: Pick<Comparison, 'before' | 'after' | 'axis' | 'pairedOn' | 'samplesAxis'>,
  cellAxes: readonly string[],
  p: Paired,
  o: Required<CompareOptions>,
): Comparison {
  const cells = new Map<string, CellComparison>();
  const leftOut: LeftOut[] = [];
  for (const { before, after } of p.pairs) {
    if (!DECIDED.has(before.outcome) || !DECIDED.has(after.outcome)) {
      leftOut.push({
        before: { name: before.name, outcome: before.outcome, reason: before.reason ?? null },
        after: { name: after.name, outcome: after.outcome, reason: after.reason ?? null },
      });
      continue;
    }
    const k = key(cellAxes, after.coords);
    let c = cells.get(k);
    if (!c) {
      c = {
        coords: Object.fromEntries(cellAxes.map((a) => [a, after.coords[a] ?? ''])),
        n: 0,
        before: { passed: 0, names: [] },
        after: { passed: 0, names: [] },
      };
      cells.set(k, c);
    }
    c.n++;
    c.before.names.push(before.name);
    c.after.names.push(after.name);
    if (before.outcome === 'passed') c.before.passed++;
    if (after.outcome === 'passed') c.after.passed++;
  }
  // Cells in a canonical order (by their values), so the bootstrap does not depend on the order the sides were listed in.
  const all = [...cells.entries()].sort(([a], [b]) => byCodeUnits(a, b)).map(([, c]) => c);
  for (const c of all) {
    c.before.names.sort(byCodeUnits);
    c.after.names.sort(byCodeUnits);
  }
  let samples = 0;
  let passedBefore = 0;
  let passedAfter = 0;
  const clusters: Cluster[] = [];
  for (const c of all) {
    samples += c.n;
    passedBefore += c.before.passed;
    passedAfter += c.after.passed;
    clusters.push({ n: c.n, diff: c.after.passed - c.before.passed });
  }
  const regressions = all.filter((c) => c.after.passed < c.before.passed);
  const fixes = all.filter((c) => c.after.passed > c.before.passed);
  const flaky = all.filter((c) => (c.before.passed > 0 && c.before.passed < c.n) || (c.after.passed > 0 && c.after.passed < c.n));
  const difference = samples ? (passedAfter - passedBefore) / samples : null;
  const pValue = mcnemarExact(regressions.length, fixes.length);
  return {
    ...meta,
    cells: all.length,
    samples,
    passed: { before: passedBefore, after: passedAfter },
    passRate: { before: samples ? passedBefore / samples : null, after: samples ? passedAfter / samples : null },
    difference,
    interval: bootstrapInterval(clusters, { resamples: o.resamples, level: o.level, seed: COMPARE.seed }),
    discordant: { worse: regressions.length, better: fixes.length },
    pValue,
    regression: difference !== null && difference < 0 && pValue < o.alpha,
    regressions,
    fixes,
    flaky,
    leftOut: leftOut.sort((a, b) => byCodeUnits(a.after.name, b.after.name)),
    unpaired: p.unpaired.sort((a, b) => byCodeUnits(a.name, b.name) || byCodeUnits(a.side, b.side)),
    all,
  };
}

const withDefaults = (o: CompareOptions): Required<CompareOptions> => ({
  alpha: o.alpha ?? COMPARE.alpha,
  level: o.level ?? COMPARE.level,
  resamples: o.resamples ?? COMPARE.resamples,
});

const sameAxes = (a: readonly string[], b: readonly string[]) => a.length === b.length && [...a].sort().join('\0') === [...b].sort().join('\0');

/** A set of an earlier summary (before) against the same set now (after), children paired by name. */
export function compareWithBaseline(before: SideSet, after: SideSet, o: CompareOptions = {}): SetComparison {
  if (!sameAxes(before.axes, after.axes)) {
    const list = (a: readonly string[]) => (a.length ? a.join(', ') : 'none');
    return {
      set: after.name,
      status: 'axes-changed',
      message: `its axes changed (baseline: ${list(before.axes)}; now: ${list(after.axes)}): its children are named from their axis values, so none of them can be paired; compare against a baseline with the same axes`,
      comparisons: [],
    };
  }
  const was = new Map(before.children.map((c) => [c.name, c]));
  const pairs: Pair[] = [];
  const unpaired: Unpaired[] = [];
  for (const c of after.children) {
    const b = was.get(c.name);
    if (b) {
      pairs.push({ before: b, after: c });
      was.delete(c.name);
    } else unpaired.push({ side: 'after', name: c.name, coords: c.coords, outcome: c.outcome });
  }
  for (const b of was.values()) unpaired.push({ side: 'before', name: b.name, coords: b.coords, outcome: b.outcome });
  const samplesAxis = after.samplesAxis;
  const cellAxes = after.axes.filter((a) => a !== samplesAxis);
  return {
    set: after.name,
    status: 'compared',
    message: null,
    comparisons: [judge({ before: 'baseline', after: 'now', axis: null, pairedOn: after.axes, samplesAxis }, cellAxes, { pairs, unpaired }, withDefaults(o))],
  };
}

/** Why `--by` cannot compare a set (an axis or value it does not have), or null. */
export function byProblem(set: SideSet, axis: string, values: readonly string[]): string | null {
  if (!set.axes.includes(axis)) return `set ${set.name} has no axis ${JSON.stringify(axis)} (its axes: ${set.axes.join(', ') || 'none'})`;
  const present = new Set(set.children.map((c) => c.coords[axis]));
  const missing = values.filter((v) => !present.has(v));
  if (missing.length)
    return `set ${set.name} has no ${axis}=${missing.map((m) => JSON.stringify(m)).join(', ')} (its values: ${[...present].filter((v) => v !== undefined).join(', ')})`;
  return null;
}

/**
 * Within one set: the children with `axis` = values[0] (before) against those with each later
 * value (after), paired on the other axes. Check byProblem first.
 */
export function compareByAxis(set: SideSet, axis: string, values: readonly string[], o: CompareOptions = {}): SetComparison {
  const other = set.axes.filter((a) => a !== axis);
  const samplesAxis = set.samplesAxis === axis ? null : set.samplesAxis;
  const cellAxes = other.filter((a) => a !== samplesAxis);
  const of = (v: string) => new Map(set.children.filter((c) => c.coords[axis] === v).map((c) => [key(other, c.coords), c]));
  const [first, ...rest] = values;
  const opts = withDefaults(o);
  const comparisons = rest.map((v) => {
    const before = of(first as string);
    const pairs: Pair[] = [];
    const unpaired: Unpaired[] = [];
    for (const [k, c] of of(v)) {
      const b = before.get(k);
      if (b) {
        pairs.push({ before: b, after: c });
        before.delete(k);
      } else unpaired.push({ side: 'after', name: c.name, coords: c.coords, outcome: c.outcome });
    }
    for (const b of before.values()) unpaired.push({ side: 'before', name: b.name, coords: b.coords, outcome: b.outcome });
    return judge({ before: first as string, after: v, axis, pairedOn: other, samplesAxis }, cellAxes, { pairs, unpaired }, opts);
  });
  return { set: set.name, status: 'compared', message: null, comparisons };
}

/** A set on one side only (`--baseline`: in the summary and not now, or now and not in the summary). */
export function oneSided(set: string, side: 'before' | 'after'): SetComparison {
  return {
    set,
    status: side === 'before' ? 'only-before' : 'only-after',
    message: side === 'before' ? 'in the baseline, not among the sets now' : 'not in the baseline (a new set?)',
    comparisons: [],
  };
}

/** The whole answer: the sets' comparisons with the settings that made them. */
export function compareResult(
  mode: CompareResult['mode'],
  sets: SetComparison[],
  o: CompareOptions & { baseline?: CompareResult['baseline'] } = {},
): CompareResult {
  const d = withDefaults(o);
  return {
    schemaVersion: COMPARE.schemaVersion,
    mode,
    baseline: o.baseline ?? null,
    alpha: d.alpha,
    level: d.level,
    resamples: d.resamples,
    seed: COMPARE.seed.map((w) => `0x${w.toString(16).padStart(8, '0')}`),
    sets,
    regression: sets.some((s) => s.comparisons.some((c) => c.regression)),
  };
}

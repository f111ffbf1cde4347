/**
 * The summary of AttemptSets, pure: loaded children and their status records in, numbers out.
 *
 * - Per set: counts by outcome as sets/outcome.ts classifies (passed, failed — TimedOut and
 *   OOMKilled included —, infra, skipped, unfinished; infra reasons apart),
 *   durations (engine start → finish) and queue waits (the current run eligible → start:
 *   `eligibleSince`) p50/p95.
 * - Per cell: the children that share every axis value except the samples axis (an axis named
 *   seed, sample, trial, attempt, try or run, or `--samples AXIS`): n finished samples (passed +
 *   failed; infra outcomes are not samples), c passed, unbiased pass@k = 1 − C(n−c,k)/C(n,k) and
 *   pass^k = C(c,k)/C(n,k) for 1 <= k <= n.
 *   Without a samples axis, each child is its own cell (n <= 1).
 * - Per axis value: the mean pass rate over its finished children with its standard error, and
 *   pass@k averaged over its cells (for k up to the smallest n among them).
 * - A child the set declares but whose spec did not load counts as infra (Invalid).
 */
import { judge, latestGrade } from './grade-state';
import { countByGrade } from './grade-text';
import { REASONS, type Phase } from '../constants';
import type { TagMove } from '../status/pins';
import type { AttemptStatus, ImageProvenance, Touched } from '../status/types';
import type { LoadedSet, LoadedSpec, SetPolicy } from '../spec/types';
import type { OutcomeClass } from './outcome';
import { mean, passAtK, passHatK, percentile, rateWithStderr } from './stats';

/** A child whose spec did not load counts under its phase, as `classify` counts Invalid and Blocked. */
const INVALID: Phase = 'Invalid';

export const SUMMARY_SCHEMA_VERSION = 1;
const SAMPLE_AXES = ['seed', 'sample', 'trial', 'attempt', 'try', 'run'];

export interface Counts {
  n: number;
  passed: number;
  failed: number;
  infra: number;
  skipped: number;
  unfinished: number;
}

export interface ChildSummary {
  name: string;
  coords: Record<string, string>;
  outcome: OutcomeClass;
  phase: string;
  reason: string | null;
  score: number | null;
  /** spec.grade: the latest grade of the run (`grade-<k>`), the verdict the outcome comes from; null without one. */
  grade: { k: number; state: string; passed: boolean | null; reason: string | null } | null;
  durationMs: number | null;
  queueMs: number | null;
  resultsDir: string | null;
  /** The run's results were past spec.harvest's caps (ResultsTruncated: its reason, or a warning of a failed run). */
  resultsTruncated: boolean;
  /** The run had execs or copies (berth exec, berth cp, the API): its result is not a clean run's; null: none. */
  touched: Touched | null;
  /** Specs from git: the commit the child's current run was created from. */
  revision: string | null;
  /** The image its current run's container was made from (reference, id, repo digests; `pinned`: its set's pinned id). */
  image: ImageProvenance | null;
}

export interface CellSummary extends Counts {
  /** The cell's axis values (without the samples axis). */
  coords: Record<string, string>;
  /** pass@k for k = 1..samples (samples = passed + failed); key is k. */
  passAtK: Record<string, number>;
  /** pass^k (every one of k samples passes) for k = 1..samples. */
  passHatK: Record<string, number>;
  /** Children by outcome. */
  ids: Record<OutcomeClass, string[]>;
}

export interface AxisValueSummary extends Counts {
  value: string;
  passRate: number | null;
  stderr: number | null;
  passAtK: Record<string, number>;
  passHatK: Record<string, number>;
}

export interface SetSummary extends Counts {
  name: string;
  axes: string[];
  samplesAxis: string | null;
  scored: boolean;
  /** spec.grade: the children counted by the grade (k) their outcome comes from (`{"1": 3, "2": 1}`); null when none has a grade. */
  grades: Record<string, number> | null;
  infraReasons: Record<string, number>;
  /** Children whose results were past spec.harvest's caps, whatever their outcome. */
  resultsTruncated: number;
  /** Children whose current run had an exec or a copy (touched), whatever their outcome. */
  touched: number;
  passRate: number | null;
  stderr: number | null;
  passAtK: Record<string, number>;
  passHatK: Record<string, number>;
  durationMs: { p50: number | null; p95: number | null };
  queueMs: { p50: number | null; p95: number | null };
  byAxis: Record<string, AxisValueSummary[]>;
  cells: CellSummary[];
  children: ChildSummary[];
  /** The image every child that was created ran, when they all share one id; null when none was created yet or they differ. */
  image: ImageProvenance | null;
  /** Tags that moved under the set's pinned image (observe/tag-moves.ts); absent when the engine was not asked. */
  tagMoved?: TagMove[];
  /**
   * The set's file is broken (or its `fromDir` missing): this is its last good expansion
   * (spec/last-good.ts), and these are the errors that hold it. Absent otherwise.
   */
  heldBy?: HeldIssue[];
}

/** A spec error that holds a set at its last good expansion, as the summary shows it. */
export interface HeldIssue {
  file: string;
  line: number;
  col: number;
  path: string;
  message: string;
}

export interface Summary {
  schemaVersion: number;
  generatedAt: string;
  sets: SetSummary[];
  /** The plain Attempts (in no set) as one suite, PLAIN_SUITE, no axes; absent when there are none. */
  attempts?: SetSummary;
}

/** The name of the plain Attempts' suite (no set can be named so: a set's name is a DNS label, this one is too, so it is said apart by its place,
 * `attempts`, not `sets`). */
export const PLAIN_SUITE = 'attempts';

const ms = (iso: string | undefined) => (iso ? Date.parse(iso) : NaN);

/**
 * When the record's current run became eligible to run (ms since the epoch; NaN when unknown):
 * `eligibleAt`; a record written before berth kept it, the later of its creation and the end of
 * its previous run (a retry or rerun never waited before the run it follows had ended). Not the
 * record's creation alone: after an edit that is when the attempt first appeared, minutes or days
 * before its new run could start.
 */
export function eligibleSince(rec: Pick<AttemptStatus, 'eligibleAt' | 'createdAt' | 'history'> | undefined): number {
  const eligible = ms(rec?.eligibleAt);
  if (Number.isFinite(eligible)) return eligible;
  const created = ms(rec?.createdAt);
  const prevEnd = ms(rec?.history.at(-1)?.finishedAt);
  return Number.isFinite(prevEnd) && Number.isFinite(created) ? Math.max(created, prevEnd) : created;
}

/** A child of a set as the summary sees it: loaded, or declared by the set but invalid (its spec did not load). */
export interface SetChild {
  name: string;
  coords: Record<string, string>;
  loaded?: LoadedSpec;
}

function invalidChild(c: SetChild, rec: AttemptStatus | undefined): ChildSummary {
  return {
    name: c.name,
    coords: c.coords,
    outcome: 'infra',
    phase: INVALID,
    reason: INVALID,
    score: null,
    grade: null,
    durationMs: null,
    queueMs: null,
    resultsDir: rec?.resultsDir ?? null,
    resultsTruncated: false,
    touched: rec?.touched ?? null,
    revision: rec?.revision ?? null,
    image: rec?.image ?? null,
  };
}

/** A set's child, or (no `loaded.set`) a plain Attempt, judged with no set's policy, as `wait` judges it. */
function child(loaded: LoadedSpec, rec: AttemptStatus | undefined): ChildSummary {
  const m = loaded.set;
  // A record of another spec hash is an earlier spec's: this child has not run yet.
  const current = rec && rec.specHash === loaded.hash ? rec : undefined;
  // spec.grade: the grader's verdict, when one judges the run; its score, never the attempt's own
  const c = judge(loaded, current);
  const g = loaded.spec.grade ? latestGrade(current) : undefined;
  const score = loaded.spec.grade ? g?.score : current?.score;
  const started = ms(current?.startedAt);
  const finished = ms(current?.finishedAt);
  const eligible = eligibleSince(current);
  return {
    name: loaded.spec.name,
    coords: m?.coords ?? {},
    outcome: c.outcome,
    phase: current?.phase ?? 'Pending',
    reason: c.reason ?? current?.reason ?? null,
    score: typeof score === 'number' ? score : null,
    grade: g ? { k: g.k, state: g.state, passed: g.passed ?? null, reason: g.reason ?? null } : null,
    durationMs: Number.isFinite(started) && Number.isFinite(finished) && c.outcome !== 'unfinished' ? Math.max(0, finished - started) : null,
    queueMs: Number.isFinite(started) && Number.isFinite(eligible) ? Math.max(0, started - eligible) : null,
    resultsDir: current?.resultsDir ?? null,
    resultsTruncated:
      !!current && (current.reason === REASONS.resultsTruncated || (current.warnings ?? []).some((w) => w.startsWith(`${REASONS.resultsTruncated}:`))),
    touched: current?.touched ?? null,
    revision: current?.revision ?? null,
    image: current?.image ?? null,
  };
}

function counts(cs: readonly ChildSummary[]): Counts {
  const out: Counts = { n: cs.length, passed: 0, failed: 0, infra: 0, skipped: 0, unfinished: 0 };
  for (const c of cs) out[c.outcome]++;
  return out;
}

function perK(n: number, f: (k: number) => number): Record<string, number> {
  const out: Record<string, number> = {};
  for (let k = 1; k <= n; k++) out[String(k)] = f(k);
  return out;
}

/** A per-k estimate averaged over cells, for k up to the smallest number of samples among cells that have any. */
function meanOverCells(cells: readonly CellSummary[], of: (c: CellSummary) => Record<string, number>): Record<string, number> {
  const sampled = cells.filter((c) => c.passed + c.failed > 0);
  if (sampled.length === 0) return {};
  const kmax = Math.min(...sampled.map((c) => c.passed + c.failed));
  return perK(kmax, (k) => mean(sampled.map((c) => of(c)[String(k)] as number)) as number);
}

function rate(cs: Counts): { passRate: number | null; stderr: number | null } {
  const r = rateWithStderr(cs.passed, cs.passed + cs.failed);
  return { passRate: r?.rate ?? null, stderr: r?.stderr ?? null };
}

export function samplesAxisOf(policy: SetPolicy, chosen?: string): string | null {
  if (chosen !== undefined) return policy.axes.includes(chosen) ? chosen : null;
  return SAMPLE_AXES.find((a) => policy.axes.includes(a)) ?? null;
}

/** A set's children judged as its summary judges them, without the rest of the summary (cells, axis values, pass@k): what `berth compare` reads. */
export function judgeSet(
  policy: SetPolicy,
  children: readonly SetChild[],
  statuses: ReadonlyMap<string, AttemptStatus>,
  samples?: string,
): Pick<SetSummary, 'name' | 'axes' | 'samplesAxis' | 'children'> {
  return {
    name: policy.name,
    axes: policy.axes,
    samplesAxis: samplesAxisOf(policy, samples),
    children: children.map((c) => (c.loaded ? child(c.loaded, statuses.get(c.name)) : invalidChild(c, statuses.get(c.name)))),
  };
}

/** The summary of one set from its children in expansion order. */
export function summarizeSet(policy: SetPolicy, children: readonly SetChild[], statuses: ReadonlyMap<string, AttemptStatus>, samples?: string): SetSummary {
  const { children: kids, samplesAxis } = judgeSet(policy, children, statuses, samples);
  const cellAxes = policy.axes.filter((a) => a !== samplesAxis);

  const cellsByKey = new Map<string, ChildSummary[]>();
  for (const c of kids) {
    const key = samplesAxis ? JSON.stringify(cellAxes.map((a) => c.coords[a])) : c.name;
    const had = cellsByKey.get(key);
    if (had) had.push(c);
    else cellsByKey.set(key, [c]);
  }
  const cells: CellSummary[] = [...cellsByKey.values()].map((cs) => {
    const k = counts(cs);
    const ids = { passed: [], failed: [], infra: [], skipped: [], unfinished: [] } as Record<OutcomeClass, string[]>;
    for (const c of cs) ids[c.outcome].push(c.name);
    const first = cs[0] as ChildSummary;
    const n = k.passed + k.failed;
    return {
      coords: Object.fromEntries(cellAxes.map((a) => [a, first.coords[a] as string])),
      ...k,
      passAtK: perK(n, (j) => passAtK(n, k.passed, j)),
      passHatK: perK(n, (j) => passHatK(n, k.passed, j)),
      ids,
    };
  });

  const byAxis: Record<string, AxisValueSummary[]> = {};
  for (const a of policy.axes) {
    // (issue 55) each value's children and cells gathered in one pass (a set of 100,000 has 500 values of an axis)
    const kidsOf = new Map<string, ChildSummary[]>();
    for (const c of kids) {
      const v = c.coords[a] as string;
      const had = kidsOf.get(v);
      if (had) had.push(c);
      else kidsOf.set(v, [c]);
    }
    const cellsOf = new Map<string, CellSummary[]>();
    if (a !== samplesAxis)
      for (const c of cells) {
        const v = c.coords[a] as string;
        const had = cellsOf.get(v);
        if (had) had.push(c);
        else cellsOf.set(v, [c]);
      }
    byAxis[a] = [...kidsOf].map(([v, of]) => {
      const k = counts(of);
      const its = cellsOf.get(v) ?? [];
      return { value: v, ...k, ...rate(k), passAtK: meanOverCells(its, (c) => c.passAtK), passHatK: meanOverCells(its, (c) => c.passHatK) };
    });
  }

  const total = counts(kids);
  const infraReasons: Record<string, number> = {};
  for (const c of kids) if (c.outcome === 'infra') infraReasons[c.reason ?? 'Failed'] = (infraReasons[c.reason ?? 'Failed'] ?? 0) + 1;
  const durations = kids.flatMap((c) => (c.durationMs !== null ? [c.durationMs] : []));
  const waits = kids.flatMap((c) => (c.queueMs !== null ? [c.queueMs] : []));
  return {
    name: policy.name,
    axes: policy.axes,
    samplesAxis,
    scored: policy.score !== null,
    grades: countByGrade(kids.map((c) => c.grade)),
    ...total,
    infraReasons,
    resultsTruncated: kids.filter((c) => c.resultsTruncated).length,
    touched: kids.filter((c) => c.touched !== null).length,
    ...rate(total),
    passAtK: meanOverCells(cells, (c) => c.passAtK),
    passHatK: meanOverCells(cells, (c) => c.passHatK),
    durationMs: { p50: percentile(durations, 50), p95: percentile(durations, 95) },
    queueMs: { p50: percentile(waits, 50), p95: percentile(waits, 95) },
    byAxis,
    cells,
    children: kids,
    image: sharedImage(kids),
  };
}

/** The image all created children share (the same id), with no `pinned` flag and the first child's reference and digests. */
function sharedImage(kids: readonly ChildSummary[]): ImageProvenance | null {
  const made = kids.flatMap((k) => (k.image ? [k.image] : []));
  const first = made[0];
  if (!first || made.some((m) => m.id !== first.id)) return null;
  return { ref: first.ref, id: first.id, repoDigests: first.repoDigests };
}

/** Summaries of the given sets (name → policy and children in expansion order), in name order. */
export function summarize(
  sets: ReadonlyMap<string, { policy: SetPolicy; children: SetChild[]; held?: readonly HeldIssue[] }>,
  statuses: ReadonlyMap<string, AttemptStatus>,
  now: number,
  samples?: string,
): Summary {
  const out = [...sets.entries()]
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([, g]) => {
      const s = summarizeSet(g.policy, g.children, statuses, samples);
      return g.held ? { ...s, heldBy: g.held.map(({ file, line, col, path, message }) => ({ file, line, col, path, message })) } : s;
    });
  return { schemaVersion: SUMMARY_SCHEMA_VERSION, generatedAt: new Date(now).toISOString(), sets: out };
}

/** The plain Attempts of a load (those in no set) as one suite, or undefined when there are none. */
export function summarizePlain(specs: readonly LoadedSpec[], statuses: ReadonlyMap<string, AttemptStatus>): SetSummary | undefined {
  const plain = specs.filter((s) => !s.set).sort((a, b) => (a.spec.name < b.spec.name ? -1 : 1));
  if (plain.length === 0) return undefined;
  const policy: SetPolicy = {
    name: PLAIN_SUITE,
    axes: [],
    maxParallel: null,
    failFast: false,
    maxFailed: null,
    infra: [],
    score: null,
    source: { file: '', line: 0, col: 0 },
  };
  return summarizeSet(
    policy,
    plain.map((s) => ({ name: s.spec.name, coords: {}, loaded: s })),
    statuses,
  );
}

/** The sets of a load, each with its children: loaded ones, and the ones that did not load (Invalid). */
export function setsOfLoad(
  specs: readonly LoadedSpec[],
  sets: ReadonlyMap<string, LoadedSet>,
): Map<string, { policy: SetPolicy; children: SetChild[]; held?: readonly HeldIssue[] }> {
  const byName = new Map(specs.map((s) => [s.spec.name, s]));
  const out = new Map<string, { policy: SetPolicy; children: SetChild[]; held?: readonly HeldIssue[] }>();
  for (const [name, set] of sets) {
    const children = set.children.map((c, i): SetChild => {
      const loaded = byName.get(c);
      return loaded?.set?.set.name === name ? { name: c, coords: loaded.set.coords, loaded } : { name: c, coords: set.coords[i] ?? {} };
    });
    out.set(name, { policy: set.policy, children, ...(set.held ? { held: set.held } : {}) });
  }
  return out;
}

/**
 * The fleet report's data, pure: the sets (as `summary` gathers them), plain attempts and the
 * status records in, one JSON-able object out (render.ts turns it into the page).
 *
 * - Every attempt the load or the records know, once: a set's child (with its axis values), or a
 *   plain Attempt (set null). Outcome as the summary classifies it (sets/outcome.ts), a plain
 *   attempt without a set's score: it passes when it Succeeded, fails on its own outcomes
 *   (a non-zero exit, TimedOut, OOMKilled, DiskLimitExceeded), and what it could not cause is
 *   an infrastructure outcome.
 * - Times in ms since the epoch: waiting from when the current run became eligible (summary.ts `eligibleSince`)
 *   to provisioning's start, provisioning to the engine's start, running to the engine's finish
 *   (or `now` while running). Starts and finishes are the engine's clock; creation and
 *   provisioning are berth's.
 * - Links are relative to the folder the report is written to (`linkBase`), and only to folders
 *   under the results root (and at most REPORT_LIMITS.path long); none when `linkBase` is null
 *   (the controller's live page). A run's `workspace/changes.patch` and its latest grade's
 *   `logs.txt` are linked when `present` says they are there.
 * - spec.grade: the latest grade of the run stands for it (its verdict, its score) and is named.
 * - Every attempt-controlled string is cut to a bound (REPORT_LIMITS), so one huge label or
 *   message cannot make the page huge.
 */
import path from 'node:path';
import { REASONS, REPORT_LIMITS, WORKSPACE } from '../constants';
import { eligibleSince, type ChildSummary, type Counts, type SetSummary } from '../sets/summary';
import { latestGrade, runGrades } from '../sets/grade-state';
import { gradeLabel } from '../sets/grade-text';
import { classify, type OutcomeClass } from '../sets/outcome';
import type { AttemptStatus } from '../status/types';
import { touchedText } from '../touch/text';
import { engineTime } from '../engine/time';
import { concurrency, type Step } from './timeline';
import type { CellComparison, CompareResult, LeftOut } from '../sets/compare';

export const REPORT_SCHEMA_VERSION = 1;

export interface ReportLinks {
  results: string;
  logs: string;
  manifest: string;
  /** The run's exported changes (`run-<n>/workspace/changes.patch`), when the file is there. */
  patch?: string;
  /** The log of the run's latest grade (`run-<n>/grade-<k>/logs.txt`), when the file is there. */
  gradeLog?: string;
}

export interface ReportAttempt {
  name: string;
  set: string | null;
  coords: Record<string, string>;
  labels: Record<string, string>;
  phase: string;
  reason: string;
  message: string;
  outcome: OutcomeClass;
  exitCode: number | null;
  /** With spec.grade, the grader's score (never the attempt's own); else the run's score file. */
  score: number | null;
  /** spec.grade: the run's latest grade, named by its k (`grade-2: pass`), whose verdict the outcome is; null without one. */
  grade: string | null;
  run: number;
  /** Waiting since, provisioning since, started, finished (ms since the epoch; null when not reached). */
  queuedAt: number | null;
  provisionedAt: number | null;
  startedAt: number | null;
  finishedAt: number | null;
  durationMs: number | null;
  links: ReportLinks | null;
  /** The image id (`sha256:…`) the current run's container was made from; null before its create. */
  imageId: string | null;
  /** Its reference and repo digests, as the status record keeps them. */
  image: { ref: string; repoDigests: string[]; pinned: boolean } | null;
  /** The run had execs or copies (berth exec, berth cp, the API): in words (`3 execs, 1 copy`); null: none. */
  touched: string | null;
  /**
   * spec.grade: the current run's graders that started (the engine's start and finish, ms since
   * the epoch; finish null while one runs, or when it ended unrecorded), oldest first, at most
   * REPORT_LIMITS.grades: each held a slot, as the run did.
   */
  grading: ReportGrading[];
}

export interface ReportGrading {
  k: number;
  startedAt: number;
  finishedAt: number | null;
  /** Still running (its grade recorded `grading`): it holds its slot until now. */
  running: boolean;
}

export interface ReportCell extends Counts {
  coords: Record<string, string>;
  passRate: number | null;
}

export interface ReportSet extends Counts {
  name: string;
  /** The heatmap's axes: rows by the first, columns by the others (the samples axis folded into cells). */
  axes: string[];
  samplesAxis: string | null;
  passRate: number | null;
  cells: ReportCell[];
  /** The image id every created child ran, when they share one (null otherwise). */
  imageId: string | null;
  /** Children whose run had execs or copies. */
  touched: number;
  /** Its file is broken: the numbers are its last good expansion's (spec/last-good.ts), and this is the first error that holds it. */
  held?: string;
}

export interface ReportData {
  schemaVersion: number;
  title: string;
  generatedAt: number;
  /** Where the data came from: 'file' (berth report) or 'live' (the controller's page). */
  mode: 'file' | 'live';
  instance: string;
  maxRunning: number | null;
  summary: {
    attempts: number;
    byPhase: Record<string, number>;
    byReason: Record<string, number>;
    byOutcome: Record<OutcomeClass, number>;
    passRate: number | null;
    /** First wait to last finish (or now while something runs). */
    wallMs: number | null;
    /** The most slots held at once (runs and graders), and the window the timeline spans. */
    peakRunning: number;
    /** Attempts whose run had execs or copies (touched). */
    touched: number;
    window: { from: number; to: number } | null;
  };
  concurrency: Step[];
  sets: ReportSet[];
  attempts: ReportAttempt[];
  /** Attempts left out by REPORT_LIMITS.attempts (the page says so). */
  omitted: number;
  /** `berth report --baseline FILE`: the sets against that earlier summary (sets/compare.ts), strings cut to REPORT_LIMITS; absent without one. */
  comparison?: CompareResult;
}

/** A plain Attempt (not a set's child) as the report sees it. */
export interface PlainAttempt {
  name: string;
  labels: Record<string, string>;
  /** spec.grade: the class its latest grade gives the run (sets/grade-state.ts gradeClass), which stands for the run's own. */
  graded?: { outcome: OutcomeClass; reason?: string };
}

export interface ReportInput {
  sets: readonly SetSummary[];
  /** Spec labels of the set children, by name. */
  childLabels: ReadonlyMap<string, Record<string, string>>;
  /** Spec hashes of the set children that loaded, by name (a record of another hash is not theirs yet). */
  childHashes?: ReadonlyMap<string, string>;
  plain: readonly PlainAttempt[];
  statuses: ReadonlyMap<string, AttemptStatus>;
  now: number;
  instance: string;
  maxRunning: number | null;
  resultsRoot: string;
  /** The folder the report is written to (links are relative to it), or null for no links. */
  linkBase: string | null;
  /**
   * The files of `runFiles` found on disk (absolute paths, regular files): only those are linked.
   * Absent: none is (the model reads no disk; `berth report` looks first).
   */
  present?: ReadonlySet<string>;
  mode: 'file' | 'live';
  title?: string;
  /** `--baseline`: the comparison to show first. */
  comparison?: CompareResult;
}

/** `s` cut to `n` characters (with an ellipsis), never split inside a surrogate pair. */
export function clip(s: string, n: number): string {
  if (s.length <= n) return s;
  const cut = [...s.slice(0, n)].join('');
  const safe = /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut;
  return safe + '…';
}

function clipMap(m: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m).slice(0, REPORT_LIMITS.entries)) out[clip(k, REPORT_LIMITS.key)] = clip(v, REPORT_LIMITS.value);
  return out;
}

const posix = (p: string) => p.split(path.sep).join('/');

/** path.resolve of the last path asked (the results root and the report's folder are asked for every attempt). */
const resolved = new Map<string, string>();
function resolveOnce(p: string): string {
  let r = resolved.get(p);
  if (r === undefined) {
    if (resolved.size > 16) resolved.clear();
    resolved.set(p, (r = path.resolve(p)));
  }
  return r;
}

/** Whether `p` lies below the results root (not the root itself). */
function inRoot(p: string, resultsRoot: string): boolean {
  const root = resolveOnce(resultsRoot);
  const abs = path.isAbsolute(p) && !p.includes('/.') && !p.includes('//') ? p : path.resolve(p);
  // below the root by its text (the common case, no path work), else as path.relative says
  if (abs.startsWith(root + path.sep) && abs.length > root.length + 1) return true;
  const r = path.relative(root, abs);
  return r !== '' && !r.startsWith('..') && !path.isAbsolute(r);
}

/**
 * Files of a run the report links to when they are there: its exported changes
 * (`run-<n>/workspace/changes.patch`) and its latest grade's log (`run-<n>/grade-<k>/logs.txt`).
 * Absolute paths; `berth report` checks which exist and passes them as `present`.
 */
export function runFiles(rec: Pick<AttemptStatus, 'resultsDir' | 'grades' | 'run'> | undefined): { patch?: string; gradeLog?: string } {
  if (!rec?.resultsDir) return {};
  const g = latestGrade(rec);
  return {
    patch: path.join(path.dirname(path.resolve(rec.resultsDir)), WORKSPACE.dir, WORKSPACE.patch),
    ...(g ? { gradeLog: path.join(path.dirname(path.resolve(g.resultsDir)), 'logs.txt') } : {}),
  };
}

/**
 * Links into the run's folder (`<run>/results/`, `<run>/logs.txt`, `<run>/manifest.json`, and the
 * files of `runFiles` that are `present`), relative to `base`.
 */
export function linksOf(
  resultsDir: string | undefined,
  resultsRoot: string,
  base: string | null,
  files: { patch?: string; gradeLog?: string } = {},
  present: ReadonlySet<string> = new Set(),
): ReportLinks | null {
  if (!resultsDir || base === null) return null;
  const dir = path.resolve(resultsDir);
  if (!inRoot(dir, resultsRoot)) return null;
  const rel = (p: string) => encodeURI(posix(path.relative(resolveOnce(base), p))).replace(/[?#]/g, encodeURIComponent);
  const run = path.dirname(dir);
  // (issue 55) one path.relative for the run's folder, its files' links written from it
  const runRel = rel(run);
  const inRun = (f: string) => `${runRel}/${encodeURI(f).replace(/[?#]/g, encodeURIComponent)}`;
  const links: ReportLinks =
    runRel !== '' && !runRel.startsWith('..')
      ? { results: `${inRun(path.basename(dir))}/`, logs: inRun('logs.txt'), manifest: inRun('manifest.json') }
      : { results: rel(dir) + '/', logs: rel(path.join(run, 'logs.txt')), manifest: rel(path.join(run, 'manifest.json')) };
  if (Object.values(links).some((l) => l.length > REPORT_LIMITS.path)) return null;
  // the run's changes and its latest grade's log: only files found there, below the results root, of a bounded link
  for (const k of ['patch', 'gradeLog'] as const) {
    const f = files[k];
    if (f === undefined || !present.has(f) || !inRoot(f, resultsRoot)) continue;
    const l = rel(f);
    if (l.length <= REPORT_LIMITS.path) links[k] = l;
  }
  return links;
}

const when = (iso: string | undefined): number | null => engineTime(iso) ?? null;

/** The outcome of a plain Attempt's record (its retries unknown here: a failure counts as one). */
export function plainOutcome(rec: AttemptStatus | undefined): OutcomeClass {
  return classify(rec, undefined, 0).outcome;
}

interface Classified {
  outcome: OutcomeClass;
  phase: string;
  reason: string | null;
  /** A set child's: its score as the summary has it (the grader's, with spec.grade). */
  score?: number | null;
  /** A set child's latest grade, as the summary has it (null: no grade judges it). */
  grade?: ChildSummary['grade'];
}

const finite = (x: unknown): number | null => (typeof x === 'number' && Number.isFinite(x) ? x : null);

/** A set child's score as the summary has it (the grader's with spec.grade); a plain attempt's: its latest grade's, else its own. */
function scoreOf(c: Classified, rec: AttemptStatus | undefined): number | null {
  if (c.score !== undefined) return finite(c.score);
  const g = latestGrade(rec);
  return g ? finite(g.score) : finite(rec?.score);
}

/** The latest grade of the run in words (`grade-2: pass`): a set child's as the summary has it, a plain attempt's from its record. */
function gradeText(c: Classified, rec: AttemptStatus | undefined): string | null {
  const g = c.grade === null ? undefined : latestGrade(rec);
  return g ? clip(gradeLabel(g), REPORT_LIMITS.value) : null;
}

function attempt(
  name: string,
  set: string | null,
  coords: Record<string, string>,
  labels: Record<string, string>,
  c: Classified,
  rec: AttemptStatus | undefined,
  i: ReportInput,
): ReportAttempt {
  const eligible = eligibleSince(rec);
  const queuedAt = Number.isFinite(eligible) ? eligible : null;
  const startedAt = when(rec?.startedAt);
  const finishedAt = when(rec?.finishedAt);
  return {
    name: clip(name, REPORT_LIMITS.name),
    set: set === null ? null : clip(set, REPORT_LIMITS.name),
    coords: clipMap(coords),
    labels: clipMap(labels),
    phase: c.phase,
    reason: clip(c.reason ?? rec?.reason ?? (rec ? '' : REASONS.notReconciled), REPORT_LIMITS.value),
    message: clip(rec?.message ?? '', REPORT_LIMITS.message),
    outcome: c.outcome,
    exitCode: rec?.exitCode ?? null,
    score: scoreOf(c, rec),
    grade: gradeText(c, rec),
    run: rec?.run ?? 0,
    queuedAt,
    provisionedAt: when(rec?.provisionedAt ?? rec?.intent?.at),
    startedAt,
    finishedAt,
    durationMs: startedAt !== null && finishedAt !== null ? Math.max(0, finishedAt - startedAt) : null,
    links: linksOf(rec?.resultsDir, i.resultsRoot, i.linkBase, runFiles(rec), i.present),
    grading: gradingOf(rec),
    imageId: rec?.image ? clip(rec.image.id, REPORT_LIMITS.value) : null,
    image: rec?.image
      ? {
          ref: clip(rec.image.ref, REPORT_LIMITS.value),
          repoDigests: rec.image.repoDigests.slice(0, REPORT_LIMITS.entries).map((x) => clip(x, REPORT_LIMITS.value)),
          pinned: rec.image.pinned === true,
        }
      : null,
    touched: rec?.touched ? touchedText(rec.touched) : null,
  };
}

/** The current run's graders that started, as the timeline draws them and the slots line counts them. */
function gradingOf(rec: AttemptStatus | undefined): ReportGrading[] {
  const out: ReportGrading[] = [];
  for (const g of rec ? runGrades(rec) : []) {
    const startedAt = when(g.startedAt);
    if (startedAt === null) continue;
    out.push({ k: g.k, startedAt, finishedAt: when(g.finishedAt), running: g.state === 'grading' });
  }
  return out.slice(-REPORT_LIMITS.grades);
}

const rateOf = (passed: number, failed: number) => (passed + failed > 0 ? passed / (passed + failed) : null);

function setOf(s: SetSummary): ReportSet {
  const axes = s.axes.filter((a) => a !== s.samplesAxis).map((a) => clip(a, REPORT_LIMITS.key));
  return {
    name: clip(s.name, REPORT_LIMITS.name),
    axes,
    samplesAxis: s.samplesAxis === null ? null : clip(s.samplesAxis, REPORT_LIMITS.key),
    n: s.n,
    passed: s.passed,
    failed: s.failed,
    infra: s.infra,
    skipped: s.skipped,
    unfinished: s.unfinished,
    passRate: s.passRate,
    cells: s.cells.map((c) => ({
      coords: clipMap(c.coords),
      n: c.n,
      passed: c.passed,
      failed: c.failed,
      infra: c.infra,
      skipped: c.skipped,
      unfinished: c.unfinished,
      passRate: rateOf(c.passed, c.failed),
    })),
    imageId: s.image ? clip(s.image.id, REPORT_LIMITS.value) : null,
    touched: s.touched,
    ...(s.heldBy?.[0] ? { held: clip(`${s.heldBy[0].file}:${s.heldBy[0].line}:${s.heldBy[0].col}: ${s.heldBy[0].message}`, REPORT_LIMITS.value) } : {}),
  };
}

const count = (into: Record<string, number>, k: string) => (into[k] = (into[k] ?? 0) + 1);

/** The report's data. Attempts: set children in set then expansion order, then plain attempts by name. */
export function buildReport(i: ReportInput): ReportData {
  const inSets = new Set<string>();
  const all: ReportAttempt[] = [];
  for (const s of i.sets) {
    for (const c of s.children as ChildSummary[]) {
      inSets.add(c.name);
      // A record of another spec hash is an earlier spec's: this child has not run yet (as the summary counts it).
      const rec = i.statuses.get(c.name);
      const current = rec && (i.childHashes?.get(c.name) ?? rec.specHash) === rec.specHash ? rec : undefined;
      all.push(attempt(c.name, s.name, c.coords, i.childLabels.get(c.name) ?? {}, c, current, i));
    }
  }
  for (const p of [...i.plain].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))) {
    if (inSets.has(p.name)) continue;
    const rec = i.statuses.get(p.name);
    const c = p.graded ?? { outcome: plainOutcome(rec) };
    all.push(attempt(p.name, null, {}, p.labels, { outcome: c.outcome, phase: rec?.phase ?? 'Pending', reason: c.reason ?? null }, rec, i));
  }
  const attempts = all.slice(0, REPORT_LIMITS.attempts);

  const byPhase: Record<string, number> = {};
  const byReason: Record<string, number> = {};
  const byOutcome: Record<OutcomeClass, number> = { passed: 0, failed: 0, infra: 0, skipped: 0, unfinished: 0 };
  for (const a of all) {
    count(byPhase, a.phase);
    if (a.reason) count(byReason, a.reason);
    byOutcome[a.outcome]++;
  }
  // the slots held: runs, and graders (each holds a slot as a run does)
  const graders = attempts.flatMap((a) =>
    a.grading.map((g) => ({ provisionedAt: null, startedAt: g.startedAt, finishedAt: g.finishedAt, outcome: g.running ? 'unfinished' : 'graded' })),
  );
  const steps = concurrency([...attempts, ...graders], i.now);
  // loops, not Math.min(...xs): a spread of 300,000 arguments overflows the stack
  let from: number | null = null;
  let to: number | null = null;
  const seen = (t: number): void => {
    if (from === null || t < from) from = t;
    if (to === null || t > to) to = t;
  };
  for (const a of attempts) {
    for (const t of [a.queuedAt, a.provisionedAt, a.startedAt]) if (t !== null) seen(t);
  }
  const ends: number[] = [];
  for (const a of attempts) {
    const end = a.finishedAt !== null ? a.finishedAt : a.outcome === 'unfinished' && a.queuedAt !== null ? i.now : null;
    if (end !== null) ends.push(end);
  }
  for (const g of graders) ends.push(g.finishedAt ?? (g.outcome === 'unfinished' ? i.now : g.startedAt));
  if (from !== null) for (const e of ends) if (to === null || e > to) to = e;
  return {
    schemaVersion: REPORT_SCHEMA_VERSION,
    title: clip(i.title ?? `berth fleet report: instance ${i.instance}`, REPORT_LIMITS.message),
    generatedAt: i.now,
    mode: i.mode,
    instance: clip(i.instance, REPORT_LIMITS.name),
    maxRunning: i.maxRunning,
    summary: {
      attempts: all.length,
      byPhase,
      byReason,
      byOutcome,
      passRate: rateOf(byOutcome.passed, byOutcome.failed),
      wallMs: from !== null && to !== null ? to - from : null,
      peakRunning: steps.reduce((m, s) => Math.max(m, s.running), 0),
      touched: all.filter((a) => a.touched !== null).length,
      window: from !== null && to !== null ? { from, to } : null,
    },
    concurrency: steps,
    sets: i.sets.map(setOf),
    attempts,
    omitted: all.length - attempts.length,
    ...(i.comparison ? { comparison: clipComparison(i.comparison) } : {}),
  };
}

/** A comparison with every string from a spec, a record or the baseline file cut to REPORT_LIMITS. */
function clipComparison(r: CompareResult): CompareResult {
  const name = (s: string) => clip(s, REPORT_LIMITS.name);
  const cell = (c: CellComparison): CellComparison => ({
    ...c,
    coords: clipMap(c.coords),
    before: { passed: c.before.passed, names: c.before.names.slice(0, REPORT_LIMITS.entries).map(name) },
    after: { passed: c.after.passed, names: c.after.names.slice(0, REPORT_LIMITS.entries).map(name) },
  });
  const side = (x: LeftOut['before']) => ({ name: name(x.name), outcome: x.outcome, reason: x.reason === null ? null : clip(x.reason, REPORT_LIMITS.value) });
  return {
    ...r,
    baseline: r.baseline
      ? { file: clip(r.baseline.file, REPORT_LIMITS.path), generatedAt: r.baseline.generatedAt && clip(r.baseline.generatedAt, REPORT_LIMITS.value) }
      : null,
    sets: r.sets.map((s) => ({
      ...s,
      set: name(s.set),
      message: s.message === null ? null : clip(s.message, REPORT_LIMITS.message),
      comparisons: s.comparisons.map((c) => {
        const all = c.all.map(cell);
        // the lists hold the same cells as `all` (the same objects once clipped: the data stays one copy of each)
        const at = new Map(c.all.map((x, i) => [x, all[i] as CellComparison]));
        return {
          ...c,
          before: clip(c.before, REPORT_LIMITS.value),
          after: clip(c.after, REPORT_LIMITS.value),
          axis: c.axis === null ? null : clip(c.axis, REPORT_LIMITS.key),
          pairedOn: c.pairedOn.map((a) => clip(a, REPORT_LIMITS.key)),
          samplesAxis: c.samplesAxis === null ? null : clip(c.samplesAxis, REPORT_LIMITS.key),
          regressions: c.regressions.map((x) => at.get(x) ?? cell(x)),
          fixes: c.fixes.map((x) => at.get(x) ?? cell(x)),
          flaky: c.flaky.map((x) => at.get(x) ?? cell(x)),
          leftOut: c.leftOut.map((l) => ({ before: side(l.before), after: side(l.after) })),
          unpaired: c.unpaired.map((u) => ({ ...u, name: name(u.name), coords: clipMap(u.coords) })),
          all,
        };
      }),
    })),
  };
}

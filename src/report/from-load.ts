/**
 * The report's data from a spec load and the status records, pure: the same gathering as
 * `berth summary` (sets/summary.ts) for the sets, plus every plain Attempt (a loaded spec without
 * a set, or a record whose spec is gone). Used by `berth report` and the controller's live page.
 */
import type { LoadedSet, LoadedSpec } from '../spec/types';
import { gradeClass } from '../sets/grade-state';
import { setsOfLoad, summarize } from '../sets/summary';
import { compareResult, compareWithBaseline, oneSided, type SideSet } from '../sets/compare';
import type { AttemptStatus } from '../status/types';
import { buildReport, type PlainAttempt, type ReportData, type ReportInput } from './model';

export interface ReportChoice {
  /** Only these sets' children (and no plain attempts); all sets and attempts when empty. */
  sets: readonly string[];
  /** Spec labels → kept? (`-l`); a record without a spec has no labels. */
  keep: (labels: Readonly<Record<string, string>>) => boolean;
  /** Whether a selector is in force (then a set with no child left is left out). */
  selecting: boolean;
}

/** `berth report --baseline FILE`: an earlier summary's sets (sets/baseline.ts), and where they came from. */
export interface ReportBaseline {
  file: string;
  generatedAt: string | null;
  sets: readonly SideSet[];
}

export function reportFromLoad(
  load: { specs: readonly LoadedSpec[]; sets?: ReadonlyMap<string, LoadedSet> },
  statuses: ReadonlyMap<string, AttemptStatus>,
  choice: ReportChoice,
  o: Omit<ReportInput, 'sets' | 'childLabels' | 'plain' | 'statuses' | 'comparison'>,
  baseline?: ReportBaseline,
): ReportData {
  const all = setsOfLoad(load.specs, load.sets ?? new Map());
  const chosen = new Map(
    [...all]
      .filter(([name]) => choice.sets.length === 0 || choice.sets.includes(name))
      .map(
        ([name, g]) =>
          [name, { ...g, children: choice.selecting ? g.children.filter((c) => c.loaded && choice.keep(c.loaded.spec.labels)) : g.children }] as const,
      )
      .filter(([, g]) => g.children.length > 0 || !choice.selecting),
  );
  const summary = summarize(chosen, statuses, o.now);
  const childLabels = new Map<string, Record<string, string>>();
  const childHashes = new Map<string, string>();
  for (const g of chosen.values()) {
    for (const c of g.children) {
      if (!c.loaded) continue;
      childLabels.set(c.name, c.loaded.spec.labels);
      childHashes.set(c.name, c.loaded.hash);
    }
  }

  const plain: PlainAttempt[] = [];
  if (choice.sets.length === 0) {
    const children = new Set<string>();
    for (const g of all.values()) for (const c of g.children) children.add(c.name);
    const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
    for (const name of new Set([...specs.keys(), ...statuses.keys()])) {
      if (children.has(name)) continue;
      const loaded = specs.get(name);
      const labels = loaded?.spec.labels ?? {};
      // spec.grade: its latest grade stands for the run, as `wait` and `reconcile --wait` judge it
      const graded = loaded ? gradeClass(loaded, statuses.get(name)) : undefined;
      if (choice.keep(labels)) plain.push({ name, labels, ...(graded ? { graded } : {}) });
    }
  }
  return buildReport({
    ...o,
    sets: summary.sets,
    childLabels,
    childHashes,
    plain,
    statuses,
    ...(baseline ? { comparison: comparisonWith(baseline, summary.sets, choice) } : {}),
  });
}

/**
 * The report's sets against the baseline's (by name); with every set shown, the baseline's sets
 * that are gone too. With a selector, only the children it keeps now are compared (the
 * baseline's others are not listed as gone).
 */
function comparisonWith(b: ReportBaseline, now: readonly SideSet[], choice: ReportChoice) {
  const was = new Map(b.sets.map((s) => [s.name, s]));
  const sets = now.map((s) => {
    const before = was.get(s.name);
    if (!before) return oneSided(s.name, 'after');
    const kept = new Set(s.children.map((c) => c.name));
    return compareWithBaseline(choice.selecting ? { ...before, children: before.children.filter((c) => kept.has(c.name)) } : before, s);
  });
  const everySet = choice.sets.length === 0 && !choice.selecting;
  const shown = new Set(now.map((s) => s.name));
  if (everySet) for (const s of b.sets) if (!shown.has(s.name)) sets.push(oneSided(s.name, 'before'));
  return compareResult(
    'baseline',
    sets.sort((x, y) => (x.set < y.set ? -1 : x.set > y.set ? 1 : 0)),
    { baseline: { file: b.file, generatedAt: b.generatedAt } },
  );
}

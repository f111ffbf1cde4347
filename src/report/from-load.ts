/**
 * The report's data from a spec load and the status records, pure: the same gathering as
 * `berth summary` (sets/summary.ts) for the sets, plus every plain Attempt (a loaded spec without
 * a set, or a record whose spec is gone). Used by `berth report` and the controller's live page.
 */
import type { LoadedSet, LoadedSpec } from '../spec/types';
import { gradeClass } from '../sets/grade-state';
import { setsOfLoad, summarize } from '../sets/summary';
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

export function reportFromLoad(
  load: { specs: readonly LoadedSpec[]; sets?: ReadonlyMap<string, LoadedSet> },
  statuses: ReadonlyMap<string, AttemptStatus>,
  choice: ReportChoice,
  o: Omit<ReportInput, 'sets' | 'childLabels' | 'plain' | 'statuses'>,
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
  return buildReport({ ...o, sets: summary.sets, childLabels, childHashes, plain, statuses });
}

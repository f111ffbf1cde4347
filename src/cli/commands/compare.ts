/**
 * `berth compare [SET...] --by AXIS=A,B | --baseline FILE [-o text|json|markdown] [--fail-on
 * regression] [--alpha P] [--samples AXIS]`: did the change make the agent better, and is the
 * difference real? From the specs and the status records (no engine), as `summary` reads them;
 * the statistics are sets/compare.ts. Exit 3 with `--fail-on regression` when a pass rate fell
 * with p < --alpha; 2 for a bad --by or baseline; 1 for a set that is nowhere.
 */
import { promises as fs } from 'node:fs';
import { COMPARE, EXIT } from '../../constants';
import { parseBaseline } from '../../sets/baseline';
import {
  byProblem,
  compareByAxis,
  compareResult,
  compareWithBaseline,
  oneSided,
  type CompareResult,
  type SetComparison,
  type SideSet,
} from '../../sets/compare';
import { compareMarkdown, compareText } from '../../sets/compare-text';
import { judgeSet, setsOfLoad } from '../../sets/summary';
import { loadView } from './view-load';
import { UsageError, type Context } from '../context';

export interface CompareCommandOptions {
  by?: string;
  baseline?: string;
  output?: 'text' | 'json' | 'markdown';
  failOn?: 'regression' | 'none';
  alpha?: number;
  samples?: string;
}

/** `--by AXIS=A,B[,C...]`: the axis and its values, the first the one the others are compared with. */
export function parseBy(v: string): { axis: string; values: string[] } {
  const m = /^([^=,\s]+)=(.+)$/.exec(v.trim());
  const values = m ? (m[2] as string).split(',').map((x) => x.trim()) : [];
  if (!m || values.length < 2 || values.some((x) => !x))
    throw new UsageError(`--by ${v}: give an axis and at least two of its values, AXIS=A,B (B is compared with A; AXIS=A,B,C: B and C each with A)`);
  if (new Set(values).size !== values.length) throw new UsageError(`--by ${v}: a value is named twice`);
  return { axis: m[1] as string, values };
}

/** The sets now, as `summary` gathers them (all of them, or the named ones that exist), as comparison sides. */
async function current(ctx: Context, names: readonly string[], samples: string | undefined): Promise<Map<string, SideSet>> {
  const [load, statuses] = await Promise.all([loadView(ctx), ctx.store().loadAll()]);
  const all = setsOfLoad(load.specs, load.sets ?? new Map());
  const chosen = [...all].filter(([name]) => names.length === 0 || names.includes(name));
  return new Map(chosen.map(([name, g]) => [name, judgeSet(g.policy, g.children, statuses, samples)]));
}

/** An earlier `summary -o json` (sets/baseline.ts); a file that cannot be read or is no summary is a UsageError naming it. */
export async function readBaseline(file: string): Promise<{ generatedAt: string | null; sets: SideSet[] }> {
  let text: string;
  try {
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`--baseline ${file}: cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  const b = parseBaseline(text, file);
  if ('problem' in b) throw new UsageError(`--baseline ${b.problem}`);
  return b;
}

/** The comparison the options ask for (shared with `berth report --baseline`). */
export async function compareNow(ctx: Context, names: readonly string[], o: CompareCommandOptions): Promise<CompareResult | number> {
  if ((o.by === undefined) === (o.baseline === undefined)) throw new UsageError('compare: give one of --by AXIS=A,B and --baseline FILE');
  const stats = { alpha: o.alpha ?? COMPARE.alpha };
  if (o.baseline !== undefined) {
    const read = await readBaseline(o.baseline);
    const base = { generatedAt: read.generatedAt, sets: new Map(read.sets.map((s) => [s.name, s])) };
    const now = await current(ctx, names, o.samples);
    const nowhere = names.filter((n) => !now.has(n) && !base.sets.has(n));
    if (nowhere.length) {
      ctx.io.err(`berth: no AttemptSet named ${nowhere.map((m) => JSON.stringify(m)).join(', ')} in ${ctx.specsDir} or in ${o.baseline}\n`);
      return EXIT.failed;
    }
    const wanted = names.length ? [...names] : [...new Set([...now.keys(), ...base.sets.keys()])].sort();
    const sets: SetComparison[] = wanted.map((n) => {
      const before = base.sets.get(n);
      const after = now.get(n);
      if (!after) return oneSided(n, 'before');
      if (!before) return oneSided(n, 'after');
      return compareWithBaseline(before, after, stats);
    });
    return compareResult('baseline', sets, { ...stats, baseline: { file: o.baseline, generatedAt: base.generatedAt } });
  }
  const { axis, values } = parseBy(o.by as string);
  const now = await current(ctx, names, o.samples);
  const missing = names.filter((n) => !now.has(n));
  if (missing.length) {
    ctx.io.err(`berth: no AttemptSet named ${missing.map((m) => JSON.stringify(m)).join(', ')} in ${ctx.specsDir}\n`);
    return EXIT.failed;
  }
  // Named sets must have the axis and its values; without names, the sets that have the axis.
  const candidates = names.length ? names.map((n) => now.get(n) as SideSet) : [...now.values()].filter((s) => s.axes.includes(axis));
  if (!candidates.length) throw new UsageError(`--by ${o.by}: no AttemptSet has an axis ${JSON.stringify(axis)}`);
  for (const s of candidates) {
    const problem = byProblem(s, axis, values);
    if (problem) throw new UsageError(`--by ${o.by}: ${problem}`);
  }
  return compareResult(
    'by',
    candidates.map((s) => compareByAxis(s, axis, values, stats)),
    stats,
  );
}

export async function runCompare(ctx: Context, names: string[], o: CompareCommandOptions): Promise<number> {
  const r = await compareNow(ctx, names, o);
  if (typeof r === 'number') return r;
  if (o.output === 'json') ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else if (o.output === 'markdown') ctx.io.out(compareMarkdown(r));
  else ctx.io.out(compareText(r));
  return o.failOn === 'regression' && r.regression ? EXIT.regression : EXIT.ok;
}

/**
 * A comparison (compare.ts) in words, pure: text for the terminal, Markdown for a GitHub step
 * summary or a pull-request comment (every string from a spec or a run escaped, as
 * markdown.ts does). Lists show at most COMPARE.listed entries each; `-o json` has them all.
 */
import { COMPARE } from '../constants';
import type { CellComparison, CompareResult, Comparison, LeftOut, SetComparison, Unpaired } from './compare';
import { mdEscape } from './markdown';
import { plural } from '../util/plural';

export const pct = (x: number | null): string => (x === null ? '-' : `${(x * 100).toFixed(1)}%`);
/** A difference of rates in percentage points, signed. */
export const points = (x: number | null): string => (x === null ? '-' : `${x > 0 ? '+' : ''}${(x * 100).toFixed(1)} pp`);
const num = (x: number) => `${x > 0 ? '+' : ''}${(x * 100).toFixed(1)}`;
export const interval = (c: Pick<Comparison, 'interval'>): string => (c.interval ? `[${num(c.interval.lower)}, ${num(c.interval.upper)}] pp` : '-');
export const pText = (p: number): string => (p === 1 ? '1' : p < 0.001 ? p.toExponential(1) : p.toFixed(3));

/** The two sides' names: `variant=a` and `variant=b`, or `baseline` and `now`. */
export function sides(c: Pick<Comparison, 'axis' | 'before' | 'after'>): { before: string; after: string } {
  return c.axis === null ? { before: c.before, after: c.after } : { before: `${c.axis}=${c.before}`, after: `${c.axis}=${c.after}` };
}

export const title = (c: Comparison): string => {
  const s = sides(c);
  return c.axis === null ? 'now against the baseline' : `${s.after} against ${s.before}`;
};

const coordText = (c: Readonly<Record<string, string>>) =>
  Object.entries(c)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');

/** A cell by its axis values (a set with no other axis: its child's name). */
export const cellName = (c: CellComparison): string => coordText(c.coords) || (c.after.names[0] ?? '');

/** One side of a cell: `passed`/`failed` for a single sample, else passed/n. */
export const cellSide = (c: CellComparison, side: 'before' | 'after'): string =>
  c.n === 1 ? (c[side].passed ? 'passed' : 'failed') : `${c[side].passed}/${c.n}`;

/** The children to look at: the after side's (the same names as before's with --baseline). */
export const cellNames = (c: CellComparison): string => c.after.names.join(', ');

const withReason = (x: { outcome: string; reason: string | null }) =>
  x.reason && x.outcome !== 'passed' && x.outcome !== 'failed' ? `${x.outcome} (${x.reason})` : x.outcome;

export function leftOutText(l: LeftOut): string {
  return l.before.name === l.after.name
    ? `${l.after.name}: ${withReason(l.before)} → ${withReason(l.after)}`
    : `${l.before.name} ${withReason(l.before)}, ${l.after.name} ${withReason(l.after)}`;
}

export const unpairedText = (u: Unpaired, c: Comparison): string => `${u.name}: only ${sides(c)[u.side]} (${u.outcome})`;

/** What the numbers say, in one line. */
export function verdict(c: Comparison, alpha: number): string {
  if (c.difference === null) return 'nothing paired has finished on both sides yet';
  if (c.regression) return `a regression: the pass rate fell, p < ${alpha}`;
  if (c.pValue >= alpha) return `no significant change (p >= ${alpha})`;
  return c.difference > 0 ? `an improvement: the pass rate rose, p < ${alpha}` : 'no change in the pass rate';
}

function list<T>(out: string[], head: string, items: readonly T[], line: (x: T) => string): void {
  if (!items.length) return;
  const [what, note] = head.split(': ');
  out.push(`  ${what} (${items.length})${note ? `: ${note}` : ':'}`);
  for (const x of items.slice(0, COMPARE.listed)) out.push(`    ${line(x)}`);
  if (items.length > COMPARE.listed) out.push(`    … and ${items.length - COMPARE.listed} more (-o json lists them all)`);
}

function comparisonText(set: string, c: Comparison, alpha: number, level: number): string[] {
  const s = sides(c);
  const cellAxes = c.pairedOn.filter((a) => a !== c.samplesAxis);
  const out = [`set/${set}: ${title(c)}`];
  out.push(
    `  paired: ${plural(c.cells, 'cell')}${cellAxes.length ? ` (${cellAxes.join(', ')})` : ''}, ${plural(c.samples, 'sample')}${c.samplesAxis ? ` (${c.samplesAxis}; the interval resamples cells)` : ''}`,
  );
  if (c.difference !== null) {
    out.push(
      `  pass rate: ${s.before} ${pct(c.passRate.before)} (${c.passed.before}/${c.samples}), ${s.after} ${pct(c.passRate.after)} (${c.passed.after}/${c.samples})`,
    );
    out.push(`  difference: ${points(c.difference)}, ${Math.round(level * 100)}% interval ${interval(c)}`);
    out.push(`  McNemar exact p = ${pText(c.pValue)}: ${plural(c.discordant.worse, 'cell')} worse, ${c.discordant.better} better`);
  }
  out.push(`  ${verdict(c, alpha)}`);
  const change = (x: CellComparison) => `${cellName(x)}: ${cellSide(x, 'before')} → ${cellSide(x, 'after')} (${cellNames(x)})`;
  list(out, 'regressions', c.regressions, change);
  list(out, 'fixes', c.fixes, change);
  list(out, 'flaky: samples that disagree', c.flaky, (x) => `${cellName(x)}: ${s.before} ${x.before.passed}/${x.n}, ${s.after} ${x.after.passed}/${x.n}`);
  list(out, 'left out: not passed or failed on both sides', c.leftOut, leftOutText);
  list(out, 'unpaired', c.unpaired, (u) => unpairedText(u, c));
  return out;
}

function setText(s: SetComparison, r: CompareResult): string[] {
  if (s.status !== 'compared') return [`set/${s.set}: not compared: ${s.message ?? s.status}`];
  return s.comparisons.flatMap((c) => comparisonText(s.set, c, r.alpha, r.level));
}

export function compareText(r: CompareResult): string {
  if (!r.sets.length) return 'No AttemptSets to compare.\n';
  const blocks = r.sets.map((s) => setText(s, r).join('\n'));
  return `${blocks.join('\n\n')}\n`;
}

const mdRow = (cells: readonly string[]) => `| ${cells.join(' | ')} |`;

function mdList<T>(head: string, items: readonly T[], cols: readonly string[], row: (x: T) => string[]): string[] {
  if (!items.length) return [];
  const [what, note] = head.split(': ');
  const out = [
    `**${what} (${items.length})**${note ? `: ${note}` : ''}`,
    '',
    mdRow(cols),
    mdRow(cols.map(() => '---')),
    ...items.slice(0, COMPARE.listed).map((x) => mdRow(row(x))),
  ];
  if (items.length > COMPARE.listed) out.push('', `… and ${items.length - COMPARE.listed} more (\`berth compare -o json\`).`);
  return [...out, ''];
}

function mdDetails(set: string, c: Comparison): string[] {
  const s = sides(c);
  const e = (x: string) => mdEscape(x);
  const changeCols = ['cell', e(s.before), e(s.after), 'attempts'];
  const change = (x: CellComparison) => [e(cellName(x)), cellSide(x, 'before'), cellSide(x, 'after'), e(cellNames(x))];
  const rest = [
    ...mdList('Fixes', c.fixes, changeCols, change),
    ...mdList('Flaky: samples that disagree', c.flaky, ['cell', e(s.before), e(s.after)], (x) => [
      e(cellName(x)),
      `${x.before.passed}/${x.n}`,
      `${x.after.passed}/${x.n}`,
    ]),
    ...mdList('Left out: not passed or failed on both sides', c.leftOut, [e(s.before), e(s.after)], (l) => [
      `${e(l.before.name)}: ${e(withReason(l.before))}`,
      `${e(l.after.name)}: ${e(withReason(l.after))}`,
    ]),
    ...mdList('Unpaired', c.unpaired, ['attempt', 'only in', 'outcome'], (u) => [e(u.name), e(s[u.side]), u.outcome]),
  ];
  const regressions = mdList('Regressions', c.regressions, changeCols, change);
  if (!regressions.length && !rest.length) return [];
  const out = [`### set/${e(set)}: ${e(title(c))}`, '', ...regressions];
  if (rest.length) {
    const what = [
      ['fixes', c.fixes.length],
      ['flaky', c.flaky.length],
      ['left out', c.leftOut.length],
      ['unpaired', c.unpaired.length],
    ]
      .filter(([, n]) => n)
      .map(([k, n]) => `${n} ${k}`)
      .join(', ');
    out.push(`<details><summary>${what}</summary>`, '', ...rest, '</details>', '');
  }
  return out;
}

export function compareMarkdown(r: CompareResult): string {
  const head = r.baseline ? `## berth compare: now against the baseline (${mdEscape(r.baseline.file)})` : '## berth compare';
  const out = [head, ''];
  const compared = r.sets.flatMap((s) => s.comparisons.map((c) => ({ set: s.set, c })));
  const notCompared = r.sets.filter((s) => s.status !== 'compared');
  if (!compared.length && !notCompared.length) return `${out.join('\n')}No AttemptSets to compare.\n`;
  if (compared.length) {
    out.push(
      mdRow(['set', 'compared', 'paired', 'before', 'after', 'difference', `${Math.round(r.level * 100)}% interval`, 'McNemar p', '']),
      mdRow(['---', '---', '---:', '---:', '---:', '---:', '---', '---:', '---']),
    );
    for (const { set, c } of compared) {
      const s = sides(c);
      const flag = c.regression ? '**regression**' : c.difference !== null && c.difference > 0 && c.pValue < r.alpha ? 'improvement' : '';
      out.push(
        mdRow([
          `set/${mdEscape(set)}`,
          mdEscape(title(c)),
          `${c.cells} cells, ${c.samples} samples`,
          `${mdEscape(s.before)} ${pct(c.passRate.before)}`,
          `${mdEscape(s.after)} ${pct(c.passRate.after)}`,
          points(c.difference),
          interval(c),
          c.difference === null ? '-' : pText(c.pValue),
          flag,
        ]),
      );
    }
    out.push('');
  }
  for (const s of notCompared) out.push(`- set/${mdEscape(s.set)}: not compared: ${mdEscape(s.message ?? s.status)}`);
  if (notCompared.length) out.push('');
  for (const { set, c } of compared) out.push(...mdDetails(set, c));
  out.push(
    `<sub>Pairs: same cell on both sides; infra, skipped and unfinished pairs are left out. Interval: bootstrap over cells (${r.resamples} resamples, fixed seed). p: exact McNemar on the cells that changed. A regression: the pass rate fell with p < ${r.alpha}.</sub>`,
  );
  return `${out.join('\n')}\n`;
}

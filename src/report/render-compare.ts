/**
 * The report's comparison with a baseline (`berth report --baseline FILE`), pure: per set, the
 * numbers as `berth compare` gives them, the regressions first, then a heatmap of the difference
 * per cell (rows: the first of the cell's axes, columns: the others; red where fewer paired
 * samples passed now, green where more, grey where the same), then fixes, flaky cells, left-out
 * pairs and unpaired children folded away. Every string is escaped.
 */
import { COMPARE } from '../constants';
import type { CellComparison, Comparison, CompareResult, SetComparison } from '../sets/compare';
import { cellName, cellNames, cellSide, interval, leftOutText, pct, points, pText, sides, title, unpairedText, verdict } from '../sets/compare-text';
import { esc } from './escape';
import { utc } from './format';

/** The difference of a cell's pass rates in 7 steps: dm3 (all fell) … d0 (same) … dp3 (all rose). */
function diffClass(c: CellComparison): string {
  const d = (c.after.passed - c.before.passed) / c.n;
  if (d === 0) return 'd0';
  const step = Math.min(3, Math.ceil(Math.abs(d) * 3 - 1e-9));
  return `${d < 0 ? 'dm' : 'dp'}${step}`;
}

function tip(c: CellComparison, x: Comparison): string {
  const s = sides(x);
  return `${cellName(c)}: ${s.before} ${c.before.passed}/${c.n}, ${s.after} ${c.after.passed}/${c.n} (${cellNames(c)})`;
}

/** Values of `axes` in the order of the (sorted) cells. */
function valuesOf(cells: readonly CellComparison[], axes: readonly string[]): string[] {
  const out: string[] = [];
  const seen = new Set<string>();
  for (const c of cells) {
    const v = JSON.stringify(axes.map((a) => c.coords[a] ?? ''));
    if (!seen.has(v)) {
      seen.add(v);
      out.push(v);
    }
  }
  return out;
}

function heatmap(x: Comparison): string {
  if (!x.all.length) return '';
  const axes = x.pairedOn.filter((a) => a !== x.samplesAxis);
  const [rowAxis, ...colAxes] = axes;
  const rows = rowAxis === undefined ? ['[]'] : valuesOf(x.all, [rowAxis]);
  const cols = valuesOf(x.all, colAxes);
  const at = new Map(x.all.map((c) => [JSON.stringify([rowAxis === undefined ? [] : [c.coords[rowAxis] ?? ''], colAxes.map((a) => c.coords[a] ?? '')]), c]));
  const head = `<tr><th>${esc(rowAxis ?? '')}${colAxes.length ? ` \\ ${esc(colAxes.join(' · '))}` : ''}</th>${cols.map((k) => `<th>${esc((JSON.parse(k) as string[]).join(' · '))}</th>`).join('')}</tr>`;
  const body = rows
    .map((rk) => {
      const rv = JSON.parse(rk) as string[];
      const tds = cols.map((ck) => {
        const c = at.get(JSON.stringify([rv, JSON.parse(ck)]));
        if (!c) return '<td></td>';
        return `<td class="d ${diffClass(c)}" title="${esc(tip(c, x))}">${esc(`${cellSide(c, 'before')} → ${cellSide(c, 'after')}`)}</td>`;
      });
      return `<tr><th class="r">${esc(rv.join(' · '))}</th>${tds.join('')}</tr>`;
    })
    .join('\n');
  return `<table class="heat">\n${head}\n${body}\n</table>`;
}

function cellTable(x: Comparison, cells: readonly CellComparison[]): string {
  const s = sides(x);
  const rows = cells
    .slice(0, COMPARE.listed)
    .map(
      (c) =>
        `<tr><td>${esc(cellName(c))}</td><td class="n">${esc(cellSide(c, 'before'))}</td><td class="n">${esc(cellSide(c, 'after'))}</td><td>${esc(cellNames(c))}</td></tr>`,
    )
    .join('');
  const more = cells.length > COMPARE.listed ? `<p class="note">… and ${cells.length - COMPARE.listed} more (berth compare -o json lists them all).</p>` : '';
  return `<table><tr><th>cell</th><th class="n">${esc(s.before)}</th><th class="n">${esc(s.after)}</th><th>attempts</th></tr>${rows}</table>${more}`;
}

function textList(items: readonly string[]): string {
  const more = items.length > COMPARE.listed ? `<li>… and ${items.length - COMPARE.listed} more</li>` : '';
  return `<ul>${items
    .slice(0, COMPARE.listed)
    .map((t) => `<li>${esc(t)}</li>`)
    .join('')}${more}</ul>`;
}

function comparisonOf(set: string, x: Comparison, r: CompareResult): string {
  const s = sides(x);
  const tiles = [
    [`${s.before} → ${s.after}`, `${pct(x.passRate.before)} → ${pct(x.passRate.after)}`],
    ['difference', points(x.difference)],
    [`${Math.round(r.level * 100)}% interval (bootstrap over cells)`, interval(x)],
    ['McNemar exact p', x.difference === null ? '-' : pText(x.pValue)],
    ['paired', `${x.cells} cells, ${x.samples} samples`],
  ]
    .map(
      ([label, value]) =>
        `<div class="tile${x.regression && label === 'difference' ? ' failed' : ''}"><b>${esc(value as string)}</b><span>${esc(label as string)}</span></div>`,
    )
    .join('');
  const out = [`<h3>set ${esc(set)}: ${esc(title(x))}</h3>`, `<div class="tiles">${tiles}</div>`, `<p class="note">${esc(verdict(x, r.alpha))}</p>`];
  out.push(x.regressions.length ? `<h4>Regressions (${x.regressions.length})</h4>${cellTable(x, x.regressions)}` : '<p class="note">No regressions.</p>');
  if (x.all.length) out.push(`<h4>Difference per cell</h4>${heatmap(x)}`);
  const folded: [string, number, string][] = [
    ['Fixes', x.fixes.length, cellTable(x, x.fixes)],
    ['Flaky cells (samples that disagree)', x.flaky.length, cellTable(x, x.flaky)],
    ['Left out (not passed or failed on both sides)', x.leftOut.length, textList(x.leftOut.map(leftOutText))],
    ['Unpaired', x.unpaired.length, textList(x.unpaired.map((u) => unpairedText(u, x)))],
  ];
  for (const [head, n, body] of folded) if (n) out.push(`<details><summary>${esc(head)} (${n})</summary>${body}</details>`);
  return out.join('\n');
}

function setOf(s: SetComparison, r: CompareResult): string {
  if (s.status !== 'compared') return `<h3>set ${esc(s.set)}</h3><p class="note">not compared: ${esc(s.message ?? s.status)}</p>`;
  return s.comparisons.map((x) => comparisonOf(s.set, x, r)).join('\n');
}

export function comparisonSection(r: CompareResult): string {
  const made = r.baseline?.generatedAt ? Date.parse(r.baseline.generatedAt) : NaN;
  const from = r.baseline ? `baseline ${r.baseline.file}${Number.isFinite(made) ? ` (summary of ${utc(made)})` : ''}` : 'baseline';
  const how = `Children paired by name; infra, skipped and unfinished pairs left out. Interval: bootstrap over cells (${r.resamples} resamples, fixed seed); p: exact McNemar on the cells that changed; a regression: the pass rate fell with p < ${r.alpha}. Cell colour: red where fewer paired samples passed now, green where more.`;
  const body = r.sets.length ? r.sets.map((s) => setOf(s, r)).join('\n') : '<p class="note">No AttemptSets to compare.</p>';
  return `<section id="comparison"><h2>Comparison with the ${esc(from)}</h2>
<p class="note">${esc(how)}</p>
${body}
</section>`;
}

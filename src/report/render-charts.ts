/**
 * The report's pictures, pure: the heatmap of each set's matrix (an HTML table, cells coloured by
 * pass rate in 11 steps) and the timeline (a row per attempt, grouped and foldable per set, bars
 * in inline SVG over one shared time scale, graders after their runs, and the line of slots held
 * by runs and graders against --max-running).
 */
import { REPORT_LIMITS } from '../constants';
import { esc } from './escape';
import { coordText, ms, pct, utc } from './format';
import type { ReportCell, ReportData, ReportSet } from './model';
import { sampleSteps } from './timeline';

/** The SVG's horizontal units for the whole window. */
const W = 1000;

function heatClass(c: ReportCell): string {
  if (c.passRate === null) return c.infra > 0 ? 'hinfra' : 'hnone';
  return `h${Math.round(c.passRate * 10)}`;
}

/** Values of `axes` in the order the cells first show them. */
function valuesOf(cells: readonly ReportCell[], axes: readonly string[]): string[] {
  const out = new Set<string>();
  for (const c of cells) out.add(JSON.stringify(axes.map((a) => c.coords[a] ?? '')));
  return [...out];
}

/** `keys` in at most `max` bands of neighbours (each its keys), or undefined when they fit. */
function bandsOf(keys: string[], max: number): string[][] | undefined {
  if (keys.length <= max) return undefined;
  const size = Math.ceil(keys.length / max);
  const out: string[][] = [];
  for (let i = 0; i < keys.length; i += size) out.push(keys.slice(i, i + size));
  return out;
}

const bandLabel = (band: string[]) => {
  const first = (JSON.parse(band[0] as string) as string[]).join(' · ');
  const last = (JSON.parse(band[band.length - 1] as string) as string[]).join(' · ');
  return band.length === 1 ? first : `${first} … ${last} (${band.length})`;
};

/**
 * A heatmap too large to draw a cell per coordinate (issue 55): rows and columns grouped into at
 * most REPORT_LIMITS.heatRows × heatCols bands of neighbours, each cell the sum of the cells it
 * covers (its title says what); the attempts table lists each attempt.
 */
function bandedHeatmap(s: ReportSet, at: Map<string, number>, rowAxis: string | undefined, colAxes: string[], rowKeys: string[], colKeys: string[]): string {
  const rows = bandsOf(rowKeys, REPORT_LIMITS.heatRows) ?? rowKeys.map((k) => [k]);
  const cols = bandsOf(colKeys, REPORT_LIMITS.heatCols) ?? colKeys.map((k) => [k]);
  const head = `<tr><th>${esc(rowAxis ?? '')}${colAxes.length ? ` \\ ${esc(colAxes.join(' · '))}` : ''}</th>${cols.map((b) => `<th>${esc(bandLabel(b))}</th>`).join('')}</tr>`;
  const body = rows
    .map((rb) => {
      const tds = cols.map((cb) => {
        const sum: ReportCell = { coords: {}, n: 0, passed: 0, failed: 0, infra: 0, skipped: 0, unfinished: 0, passRate: null };
        for (const rk of rb)
          for (const ck of cb) {
            const i = at.get(`[${rk},${ck}]`);
            if (i === undefined) continue;
            const c = s.cells[i] as ReportCell;
            for (const k of ['n', 'passed', 'failed', 'infra', 'skipped', 'unfinished'] as const) sum[k] += c[k];
          }
        if (!sum.n) return '<td></td>';
        sum.passRate = sum.passed + sum.failed > 0 ? sum.passed / (sum.passed + sum.failed) : null;
        const text = sum.passed + sum.failed > 0 ? `${sum.passed}/${sum.passed + sum.failed}` : sum.infra ? `${sum.infra} infra` : sum.unfinished ? '…' : '-';
        const title = `${bandLabel(rb)} × ${bandLabel(cb)}: passed ${sum.passed}, failed ${sum.failed}, infra ${sum.infra}, skipped ${sum.skipped}, unfinished ${sum.unfinished}`;
        return `<td class="b ${heatClass(sum)}" title="${esc(title)}">${esc(text)}</td>`;
      });
      return `<tr><th class="r">${esc(bandLabel(rb))}</th>${tds.join('')}</tr>`;
    })
    .join('\n');
  const rate = `pass rate ${pct(s.passRate)} · ${s.passed} passed, ${s.failed} failed, ${s.infra} infra, ${s.skipped} skipped, ${s.unfinished} unfinished`;
  const samples = s.samplesAxis ? ` · samples: ${esc(s.samplesAxis)}` : '';
  const note = ` · ${rowKeys.length} × ${colKeys.length} cells, drawn in bands of neighbours`;
  return `<h3>${esc(s.name)}</h3><p class="note">${esc(rate)}${samples}${esc(note)}</p>\n<table class="heat">\n${head}\n${body}\n</table>`;
}

function heatmapOf(s: ReportSet, si: number): string {
  const [rowAxis, ...colAxes] = s.axes;
  const rowKeys = rowAxis === undefined ? ['[]'] : valuesOf(s.cells, [rowAxis]);
  const colKeys = valuesOf(s.cells, colAxes);
  const at = new Map<string, number>();
  s.cells.forEach((c, i) => at.set(JSON.stringify([rowAxis === undefined ? [] : [c.coords[rowAxis] ?? ''], colAxes.map((a) => c.coords[a] ?? '')]), i));
  if (rowKeys.length > REPORT_LIMITS.heatRows || colKeys.length > REPORT_LIMITS.heatCols) return bandedHeatmap(s, at, rowAxis, colAxes, rowKeys, colKeys);
  const head = `<tr><th>${esc(rowAxis ?? '')}${colAxes.length ? ` \\ ${esc(colAxes.join(' · '))}` : ''}</th>${colKeys.map((k) => `<th>${esc((JSON.parse(k) as string[]).join(' · '))}</th>`).join('')}</tr>`;
  const body = rowKeys
    .map((rk) => {
      const rv = JSON.parse(rk) as string[];
      const tds = colKeys.map((ck) => {
        const i = at.get(JSON.stringify([rv, JSON.parse(ck)]));
        if (i === undefined) return '<td></td>';
        const c = s.cells[i] as ReportCell;
        const text = c.passed + c.failed > 0 ? `${c.passed}/${c.passed + c.failed}` : c.infra ? `${c.infra} infra` : c.unfinished ? '…' : '-';
        return `<td class="c ${heatClass(c)}" tabindex="0" data-s="${si}" data-c="${i}">${esc(text)}</td>`;
      });
      return `<tr><th class="r">${esc(rv.join(' · '))}</th>${tds.join('')}</tr>`;
    })
    .join('\n');
  const rate = `pass rate ${pct(s.passRate)} · ${s.passed} passed, ${s.failed} failed, ${s.infra} infra, ${s.skipped} skipped, ${s.unfinished} unfinished`;
  const samples = s.samplesAxis ? ` · samples: ${esc(s.samplesAxis)}` : '';
  return `<h3>${esc(s.name)}</h3><p class="note">${esc(rate)}${samples}</p>\n<table class="heat">\n${head}\n${body}\n</table>`;
}

export function heatmaps(d: ReportData): string {
  if (!d.sets.length) return '<p class="note">No AttemptSets in this report.</p>';
  return (
    d.sets.map(heatmapOf).join('\n') +
    '\n<p class="note">Cell: passed / finished samples; colour from red (0%) to green (100%); orange: only infrastructure outcomes. Click a cell to filter the attempts.</p>'
  );
}

interface Scale {
  x(t: number): number;
  w(a: number, b: number): number;
}

function scaleOf(d: ReportData): Scale | null {
  const win = d.summary.window;
  if (!win) return null;
  const span = Math.max(1, win.to - win.from);
  const x = (t: number) => Math.round(((t - win.from) / span) * W * 10) / 10;
  return { x, w: (a, b) => Math.max(0.5, x(b) - x(a)) };
}

const rect = (cls: string, x: number, w: number) => `<rect class="${cls}" x="${x}" y="1" width="${Math.round(w * 10) / 10}" height="10"/>`;

function barsOf(a: ReportData['attempts'][number], s: Scale, now: number): string {
  const out: string[] = [];
  const end = a.finishedAt ?? (a.outcome === 'unfinished' ? now : null);
  const provAt = a.provisionedAt !== null && a.startedAt !== null && a.provisionedAt > a.startedAt ? null : a.provisionedAt;
  const waitEnd = provAt ?? a.startedAt ?? end;
  if (a.queuedAt !== null && waitEnd !== null && waitEnd > a.queuedAt) out.push(rect('w', s.x(a.queuedAt), s.w(a.queuedAt, waitEnd)));
  const provEnd = a.startedAt ?? end;
  if (provAt !== null && provEnd !== null && provEnd > provAt) out.push(rect('p', s.x(provAt), s.w(provAt, provEnd)));
  if (a.startedAt !== null && end !== null) out.push(rect(`o-${a.outcome}`, s.x(a.startedAt), s.w(a.startedAt, Math.max(a.startedAt, end))));
  // its graders, after the run: each held a slot
  for (const g of a.grading) {
    const to = g.finishedAt ?? (g.running ? now : null);
    if (to !== null) out.push(rect('gr', s.x(g.startedAt), s.w(g.startedAt, Math.max(g.startedAt, to))));
  }
  return out.join('');
}

const svgRow = (inner: string) => `<svg viewBox="0 0 ${W} 12" preserveAspectRatio="none" aria-hidden="true">${inner}</svg>`;

function concurrencyOf(d: ReportData, s: Scale): string {
  const H = 60;
  const top = Math.max(1, d.summary.peakRunning, d.maxRunning ?? 0);
  const y = (n: number) => Math.round((H - (n / top) * (H - 4)) * 10) / 10;
  const pts: string[] = [`0,${y(0)}`];
  let cur = 0;
  const win = d.summary.window;
  const steps = win ? sampleSteps(d.concurrency, win.from, win.to, REPORT_LIMITS.timelinePoints) : d.concurrency;
  for (const st of steps) {
    const x = s.x(st.t);
    pts.push(`${x},${y(cur)}`, `${x},${y(st.running)}`);
    cur = st.running;
  }
  pts.push(`${W},${y(cur)}`);
  const cap = d.maxRunning !== null ? `<line class="cap" x1="0" x2="${W}" y1="${y(d.maxRunning)}" y2="${y(d.maxRunning)}"/>` : '';
  return `<svg class="conc" viewBox="0 0 ${W} ${H}" preserveAspectRatio="none" role="img" aria-label="runs and graders holding a slot over time">${cap}<polyline class="run" points="${pts.join(' ')}"/></svg>`;
}

export function timeline(d: ReportData): string {
  const s = scaleOf(d);
  if (!s || !d.summary.window) return '<p class="note">Nothing has started yet.</p>';
  const win = d.summary.window;
  const groups = new Map<string | null, number[]>();
  d.attempts.forEach((a, i) => {
    const g = groups.get(a.set);
    if (g) g.push(i);
    else groups.set(a.set, [i]);
  });
  const out: string[] = [];
  out.push(
    `<div class="legend"><span><i class="w"></i>waiting</span><span><i class="p"></i>provisioning</span><span><i class="passed"></i>passed</span><span><i class="failed"></i>failed</span><span><i class="infra"></i>infra</span><span><i class="skipped"></i>skipped</span><span><i class="unfinished"></i>running / unfinished</span><span><i class="gr"></i>grading</span><span><i class="run"></i>slots held by runs and graders (peak ${d.summary.peakRunning})</span>${d.maxRunning !== null ? `<span><i class="cap"></i>--max-running ${d.maxRunning}</span>` : ''}</div>`,
  );
  out.push(`<div class="axis"><span>slots held</span>${concurrencyOf(d, s)}</div>`);
  out.push(
    `<div class="axis"><span></span><div><span>${esc(utc(win.from))}</span><span>${esc(ms(win.to - win.from))}</span><span>${esc(utc(win.to))}</span></div></div>`,
  );
  // (issue 55) above REPORT_LIMITS.detailed attempts, each set's span only: the table lists each attempt
  const compact = d.attempts.length > REPORT_LIMITS.detailed;
  if (compact)
    out.push(
      `<p class="note">${d.attempts.length} attempts: the timeline shows the slots held and each set's span; the table below lists every attempt (hover a row for its times).</p>`,
    );
  out.push('<div class="tl">');
  for (const [set, idx] of groups) {
    let first = Infinity;
    let last = -Infinity;
    for (const i of idx) {
      const a = d.attempts[i] as ReportData['attempts'][number];
      if (a.queuedAt !== null && a.queuedAt < first) first = a.queuedAt;
      const end = a.finishedAt !== null ? a.finishedAt : a.outcome === 'unfinished' && a.queuedAt !== null ? d.generatedAt : null;
      if (end !== null && end > last) last = end;
    }
    const span = first !== Infinity && last !== -Infinity ? rect('g', s.x(first), s.w(first, last)) : '';
    const title = set === null ? 'Attempts without a set' : `set ${set}`;
    out.push(`<details open data-g="${esc(set ?? '')}"><summary><span class="lbl">${esc(title)} (${idx.length})</span>${svgRow(span)}</summary>`);
    if (compact) {
      out.push('</details>');
      continue;
    }
    for (const i of idx) {
      const a = d.attempts[i] as ReportData['attempts'][number];
      out.push(
        `<div class="tr" data-i="${i}"><span class="lbl">${esc(a.set !== null && Object.keys(a.coords).length ? coordText(a.coords) : a.name)}</span>${svgRow(barsOf(a, s, d.generatedAt))}</div>`,
      );
    }
    out.push('</details>');
  }
  out.push('</div>');
  return out.join('\n');
}

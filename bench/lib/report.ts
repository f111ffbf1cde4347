/**
 * The bench's outputs: rows with a target and PASS/MISS, rendered as a markdown table (stdout
 * and bench/results/latest.md), an SVG bar chart of the ratios (latest.svg, written by hand)
 * and the raw numbers (latest.json).
 */
import { fmtMs, fmtRatio, summarize, type Summary } from './stats';

export type Verdict = 'PASS' | 'MISS' | 'info';

export interface Row {
  id: string;
  workload: string;
  berth: string;
  reference: string;
  refValue: string;
  /** berth / reference, paired by round. */
  ratio?: Summary;
  target: string;
  verdict: Verdict;
  /** Shown in the SVG chart (ratio rows only). */
  chart?: { label: string; target?: number };
}

export function spread(s: Summary): string {
  return `${fmtMs(s.median)} (${fmtMs(s.min)}–${fmtMs(s.max)})`;
}

export function ratioCell(r: Summary | undefined): string {
  if (!r) return '—';
  return r.n > 1 ? `**${fmtRatio(r.median)}** (${fmtRatio(r.min)}–${fmtRatio(r.max)})` : `**${fmtRatio(r.median)}**`;
}

export function verdictOf(ok: boolean): Verdict {
  return ok ? 'PASS' : 'MISS';
}

export function markdownTable(rows: Row[]): string {
  const head = ['Workload', 'berth: median (min–max)', 'Reference', 'Reference: median (min–max)', 'berth / reference', 'Target', 'Result'];
  const esc = (s: string) => s.replace(/\|/g, '\\|');
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i >= 4 ? '---:' : '---')).join('|')}|`];
  for (const r of rows) {
    const v = r.verdict === 'PASS' ? '✅ PASS' : r.verdict === 'MISS' ? '❌ MISS' : 'info';
    lines.push(`| ${[r.workload, r.berth, r.reference, r.refValue, ratioCell(r.ratio), r.target, v].map(esc).join(' | ')} |`);
  }
  return lines.join('\n') + '\n';
}

const xmlEsc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * Horizontal bars on a log₂ axis, growing from 1× (left: berth faster, right: slower); a
 * whisker for the min–max over rounds, a tick for the target. Green PASS, red MISS, grey info.
 */
export function svgChart(rows: Row[], title: string): string {
  const bars = rows.filter((r) => r.chart && r.ratio && Number.isFinite(r.ratio.median));
  const W = 860;
  const labelW = 330;
  const rowH = 30;
  const top = 56;
  const plotW = W - labelW - 40;
  const values = bars.flatMap((r) => [r.ratio!.min, r.ratio!.max, r.chart!.target ?? 1]);
  // Room on the left for the label of a bar that goes below 1×.
  const lo = Math.min(0.5, ...values.map((v) => v * 0.6));
  const hi = Math.max(2, ...values.map((v) => v * 1.1));
  const l2 = (v: number) => Math.log2(v);
  const x = (v: number) => labelW + ((l2(Math.max(lo, Math.min(hi, v))) - l2(lo)) / (l2(hi) - l2(lo))) * plotW;
  const H = top + bars.length * rowH + 50;
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="sans-serif" font-size="12">`);
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
  out.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${xmlEsc(title)}</text>`);
  out.push(
    `<text x="${W / 2}" y="40" text-anchor="middle" fill="#555">berth ÷ reference, median of rounds (whisker: min–max); log scale; left of 1× berth is faster</text>`,
  );
  // Grid: powers of two and 1.5× marks within range.
  const ticks = [0.125, 0.25, 0.5, 1, 1.5, 2, 4, 8, 16, 32, 64].filter((t) => t >= lo && t <= hi);
  for (const t of ticks) {
    const xx = x(t).toFixed(1);
    out.push(
      `<line x1="${xx}" y1="${top - 6}" x2="${xx}" y2="${top + bars.length * rowH}" stroke="${t === 1 ? '#000' : '#ddd'}" stroke-width="${t === 1 ? 1.5 : 1}"/>`,
    );
    out.push(`<text x="${xx}" y="${top + bars.length * rowH + 16}" text-anchor="middle" fill="#333">${t}×</text>`);
  }
  bars.forEach((r, i) => {
    const y = top + i * rowH;
    const ratio = r.ratio!;
    const color = r.verdict === 'PASS' ? '#2e9d4f' : r.verdict === 'MISS' ? '#d64545' : '#8c8c8c';
    const x1 = x(1);
    const xm = x(ratio.median);
    out.push(`<text x="${labelW - 10}" y="${y + 19}" text-anchor="end">${xmlEsc(r.chart!.label)}</text>`);
    out.push(
      `<rect x="${Math.min(x1, xm).toFixed(1)}" y="${y + 7}" width="${Math.max(1, Math.abs(xm - x1)).toFixed(1)}" height="16" fill="${color}" opacity="0.85"/>`,
    );
    if (ratio.n > 1) {
      out.push(`<line x1="${x(ratio.min).toFixed(1)}" y1="${y + 15}" x2="${x(ratio.max).toFixed(1)}" y2="${y + 15}" stroke="#222" stroke-width="1.2"/>`);
      for (const v of [ratio.min, ratio.max])
        out.push(`<line x1="${x(v).toFixed(1)}" y1="${y + 10}" x2="${x(v).toFixed(1)}" y2="${y + 20}" stroke="#222" stroke-width="1.2"/>`);
    }
    if (r.chart!.target !== undefined) {
      const xt = x(r.chart!.target).toFixed(1);
      out.push(`<line x1="${xt}" y1="${y + 3}" x2="${xt}" y2="${y + 27}" stroke="#1f4e9c" stroke-width="2.5" stroke-dasharray="3,2"/>`);
    }
    const text = fmtRatio(ratio.median);
    if (ratio.median < 1) {
      out.push(`<text x="${(Math.min(xm, x(ratio.min)) - 6).toFixed(1)}" y="${y + 19}" text-anchor="end" font-weight="bold">${text}</text>`);
    } else {
      const tx = Math.max(xm, x(ratio.max)) + 6;
      if (tx + 50 > W) out.push(`<text x="${(xm - 6).toFixed(1)}" y="${y + 19}" text-anchor="end" font-weight="bold" fill="#fff">${text}</text>`);
      else out.push(`<text x="${tx.toFixed(1)}" y="${y + 19}" font-weight="bold">${text}</text>`);
    }
  });
  const ly = top + bars.length * rowH + 36;
  out.push(`<rect x="${labelW}" y="${ly - 9}" width="12" height="10" fill="#2e9d4f"/><text x="${labelW + 16}" y="${ly}">PASS</text>`);
  out.push(`<rect x="${labelW + 60}" y="${ly - 9}" width="12" height="10" fill="#d64545"/><text x="${labelW + 76}" y="${ly}">MISS</text>`);
  out.push(`<rect x="${labelW + 120}" y="${ly - 9}" width="12" height="10" fill="#8c8c8c"/><text x="${labelW + 136}" y="${ly}">no target</text>`);
  out.push(
    `<line x1="${labelW + 215}" y1="${ly - 9}" x2="${labelW + 215}" y2="${ly + 1}" stroke="#1f4e9c" stroke-width="2.5" stroke-dasharray="3,2"/><text x="${labelW + 222}" y="${ly}">target</text>`,
  );
  out.push('</svg>');
  return out.join('\n') + '\n';
}

export { summarize };

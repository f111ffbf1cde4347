/**
 * The fleet report page, pure: ReportData in, one self-contained HTML document out (the same
 * data gives the same bytes). No network: inline style, inline script, inline SVG, the data as
 * JSON in a non-executed <script type="application/json">. A Content-Security-Policy meta tag
 * allows nothing but that style and that script, by their sha256 (computed here), so markup that
 * slipped through escaping could still run nothing. Every string from a spec, a record or the
 * engine is escaped (escape.ts).
 */
import { createHash } from 'node:crypto';
import { esc, scriptJson } from './escape';
import { coordText, ms, pct, utc } from './format';
import type { ReportAttempt, ReportData } from './model';
import { PAGE_SCRIPT } from './page-script';
import { PAGE_STYLE } from './page-style';
import { heatmaps, timeline } from './render-charts';
import { comparisonSection } from './render-compare';
import { compactTable } from './compact';
import { REPORT_LIMITS } from '../constants';

const sha256 = (s: string) => `'sha256-${createHash('sha256').update(s, 'utf8').digest('base64')}'`;

/** The page's Content-Security-Policy: its one style and one script, by hash; nothing else loads. */
export function contentSecurityPolicy(style: string, script: string): string {
  return `default-src 'none'; style-src ${sha256(style)}; script-src ${sha256(script)}; img-src 'none'; connect-src 'none'; base-uri 'none'; form-action 'none'`;
}

function tile(label: string, value: string | number, cls = ''): string {
  return `<div class="tile ${cls}"><b>${esc(value)}</b><span>${esc(label)}</span></div>`;
}

function countTable(title: string, m: Readonly<Record<string, number>>): string {
  const rows = Object.entries(m).sort(([a, x], [b, y]) => y - x || (a < b ? -1 : a > b ? 1 : 0));
  if (!rows.length) return '';
  return `<table><tr><th>${esc(title)}</th><th class="n">attempts</th></tr>${rows.map(([k, n]) => `<tr><td>${esc(k)}</td><td class="n">${n}</td></tr>`).join('')}</table>`;
}

function summary(d: ReportData): string {
  const s = d.summary;
  const o = s.byOutcome;
  const tiles = [
    tile('attempts', s.attempts),
    tile('passed', o.passed, 'passed'),
    tile('failed', o.failed, 'failed'),
    tile('infra', o.infra, 'infra'),
    tile('skipped', o.skipped, 'skipped'),
    tile('unfinished', o.unfinished, 'unfinished'),
    tile('pass rate (passed / finished)', pct(s.passRate)),
    tile('fleet wall time', ms(s.wallMs)),
    tile('slots used (peak / --max-running)', `${s.peakRunning} / ${d.maxRunning ?? '-'}`),
    // runs reached into by exec or cp: never shown as clean runs
    ...(s.touched ? [tile('touched (berth exec, cp, the API)', s.touched, 'touched')] : []),
  ].join('');
  const sets = d.sets.length
    ? `<table><tr><th>set</th><th class="n">n</th><th class="n">passed</th><th class="n">failed</th><th class="n">infra</th><th class="n">skipped</th><th class="n">unfinished</th><th class="n">pass rate</th><th class="n">touched</th><th>image id</th></tr>${d.sets
        .map(
          (x) =>
            `<tr><td>${esc(x.name)}${x.held === undefined ? '' : ` <span class="note" title="${esc(x.held)}">(held at its last good spec: its file is broken)</span>`}</td><td class="n">${x.n}</td><td class="n">${x.passed}</td><td class="n">${x.failed}</td><td class="n">${x.infra}</td><td class="n">${x.skipped}</td><td class="n">${x.unfinished}</td><td class="n">${pct(x.passRate)}</td><td class="n">${x.touched}</td><td>${x.imageId === null ? '' : `<span title="${esc(x.imageId)}">${esc(shortId(x.imageId))}</span>`}</td></tr>`,
        )
        .join('')}</table>`
    : '';
  return `<div class="tiles">${tiles}</div>\n<div class="cols">${countTable('run phase (how the run ended; with a score or a grader, not whether it passed)', s.byPhase)}${countTable('run reason', s.byReason)}${sets}</div>`;
}

/** An image id as `docker images` shows it: 12 hex digits. */
const shortId = (id: string): string => id.replace(/^sha256:/, '').slice(0, 12);

const COLUMNS: [key: string, title: string, numeric: boolean][] = [
  ['name', 'name', false],
  ['set', 'set', false],
  ['coords', 'axis values', false],
  ['phase', 'phase', false],
  ['reason', 'reason', false],
  ['exitCode', 'exit', true],
  ['score', 'score', true],
  ['grade', 'grade', false],
  ['durationMs', 'duration', true],
  ['run', 'run', true],
  ['touched', 'touched', false],
  ['imageId', 'image id', false],
];

function links(a: ReportAttempt): string {
  if (!a.links) return '';
  const l = a.links;
  return (
    `<a href="${esc(l.results)}">results</a><a href="${esc(l.logs)}">logs</a><a href="${esc(l.manifest)}">manifest</a>` +
    (l.patch ? `<a href="${esc(l.patch)}">patch</a>` : '') +
    (l.gradeLog ? `<a href="${esc(l.gradeLog)}">grade log</a>` : '')
  );
}

/**
 * The phase, coloured by how the run counts. A run whose phase says otherwise than its outcome
 * (Succeeded, but it scored below pass or its score is missing) shows both, the outcome
 * coloured, never "Succeeded" in red.
 */
function phaseCell(a: ReportAttempt): string {
  if (a.phase === 'Succeeded' && a.outcome !== 'passed' && a.outcome !== 'unfinished') return `${esc(a.phase)} · <span class="ph">${esc(a.outcome)}</span>`;
  return `<span class="ph">${esc(a.phase)}</span>`;
}

function row(a: ReportAttempt, i: number): string {
  const cells = [
    esc(a.name),
    esc(a.set ?? ''),
    esc(coordText(a.coords)),
    phaseCell(a),
    esc(a.reason),
    a.exitCode === null ? '' : String(a.exitCode),
    a.score === null ? '' : esc(String(a.score)),
    esc(a.grade ?? ''),
    ms(a.durationMs),
    String(a.run),
    a.touched === null
      ? ''
      : `<b class="touched" title="berth exec, berth cp or the API reached into this run: not a clean run">TOUCHED: ${esc(a.touched)}</b>`,
    a.imageId === null ? '' : `<span title="${esc(a.imageId)}">${esc(shortId(a.imageId))}</span>`,
  ];
  const tds = cells.map((c, k) => `<td${(COLUMNS[k] as [string, string, boolean])[2] ? ' class="n"' : ''}>${c}</td>`).join('');
  return `<tr data-i="${i}" class="o-${a.outcome}">${tds}<td class="lk">${links(a)}</td></tr>`;
}

/** Whether the page holds its attempts as compact columns and draws the table a page at a time (compact.ts). */
export const isCompact = (d: ReportData): boolean => d.attempts.length > REPORT_LIMITS.detailed;

function attemptsTable(d: ReportData): string {
  const head = COLUMNS.map(([k, t, n]) => `<th data-k="${k}"${n ? ' class="n"' : ''}>${esc(t)}</th>`).join('') + '<th>links</th>';
  if (isCompact(d)) {
    const where =
      d.mode === 'live'
        ? 'Links into the results folders are in the report file (berth report).'
        : 'Links are relative to this file: keep it at the results root.';
    const omitted = d.omitted ? ` ${d.omitted} more attempts are not in it (a report holds at most ${d.attempts.length}).` : '';
    return `<div class="bar"><input id="filter" type="search" placeholder="filter: name, set, axis=value, label, phase, reason" aria-label="filter attempts"><button id="clear" type="button">clear filter</button><button id="prev" type="button">previous</button><button id="next" type="button">next</button><span id="shown" class="note"></span></div>
<p class="note">${d.attempts.length} attempts, shown ${PAGE_ROWS} at a time (sort by a column, filter, or click a heatmap cell). ${esc(where)}${esc(omitted)}</p>
<table id="tbl" data-page="${PAGE_ROWS}"><thead><tr>${head}</tr></thead><tbody></tbody></table>`;
  }
  const omitted = d.omitted ? `<p class="note">${d.omitted} more attempts are not shown (a report holds at most ${d.attempts.length}).</p>` : '';
  const where =
    d.mode === 'live'
      ? 'Links into the results folders are in the report file (berth report), not on this live page.'
      : 'Links are relative to this file: keep it at the results root (where berth report writes it by default).';
  return `<div class="bar"><input id="filter" type="search" placeholder="filter: name, set, axis=value, label, phase, reason" aria-label="filter attempts"><button id="clear" type="button">clear filter</button><span id="shown" class="note"></span></div>
<p class="note">${esc(where)}</p>${omitted}
<table id="tbl"><thead><tr>${head}</tr></thead><tbody>
${d.attempts.map(row).join('\n')}
</tbody></table>`;
}

/** Rows of the table a page shows at once when it holds its attempts as columns. */
export const PAGE_ROWS = 100;

/** The data the page's script reads: all of it but the links (they are in the table's cells); a large report's attempts as columns (compact.ts). */
export function embedded(d: ReportData): unknown {
  // the slots-held line is drawn in the page already: the script needs none of its 200,000 steps
  if (isCompact(d)) return { ...d, attempts: [], concurrency: [], table: compactTable(d) };
  return { ...d, attempts: d.attempts.map(({ links: _links, ...a }) => a) };
}

/** The report page's Content-Security-Policy (the same for every page). */
export const reportCsp = (): string => contentSecurityPolicy(PAGE_STYLE, PAGE_SCRIPT);

/** The whole page. */
export function renderReport(d: ReportData): string {
  const csp = reportCsp();
  const live = d.mode === 'live' ? ' · live: reloads every 5 s <label><input id="auto" type="checkbox" checked> auto-refresh</label>' : '';
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="${esc(csp)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>${esc(d.title)}</title>
<style>${PAGE_STYLE}</style>
</head>
<body>
<header><h1>${esc(d.title)}</h1><p class="meta">generated ${esc(utc(d.generatedAt))} · instance ${esc(d.instance)} · ${d.summary.attempts} attempts${live}</p></header>
${d.comparison ? `${comparisonSection(d.comparison)}\n` : ''}<section id="summary"><h2>Summary</h2>
${summary(d)}
</section>
<section id="heatmap"><h2>Matrix</h2>
${heatmaps(d)}
</section>
<section id="timeline"><h2>Timeline</h2>
${timeline(d)}
</section>
<section id="attempts"><h2>Attempts</h2>
${attemptsTable(d)}
</section>
<div id="tip" hidden></div>
<script type="application/json" id="report-data">${scriptJson(embedded(d))}</script>
<script>${PAGE_SCRIPT}</script>
</body>
</html>
`;
}

/**
 * The report's comparison with a baseline (`berth report --baseline`), pure: the fleet of
 * fixture.ts against an earlier summary of it in which other children passed; the section comes
 * first, regressions before the difference heatmap, every string escaped; without a baseline the
 * page is the golden one (render.test.ts).
 */
import { expect } from 'chai';
import { reportFromLoad } from '../../../src/report/from-load';
import { renderReport } from '../../../src/report/render';
import type { SideSet } from '../../../src/sets/compare';
import { summarize } from '../../../src/sets/summary';
import type { LoadedSet, LoadedSpec } from '../../../src/spec/types';
import { fleet, ROOT, T0, XSS } from './fixture';

const NOW = T0 + 30_000;

function load() {
  const f = fleet();
  const g = f.sets.get('swe')!;
  const specs = g.children.flatMap((c): LoadedSpec[] => (c.loaded ? [c.loaded] : []));
  const sets = new Map<string, LoadedSet>([
    ['swe', { policy: g.policy, children: g.children.map((c) => c.name), coords: g.children.map((c) => c.coords), valid: true }],
  ]);
  return { f, specs, sets };
}

/** The set as it is now, with some outcomes turned around: the baseline. */
function baselineOf(turn: Record<string, 'passed' | 'failed'>): SideSet[] {
  const { f } = load();
  const now = summarize(f.sets, f.statuses, NOW).sets[0]!;
  return [
    { ...now, children: now.children.map((c) => ({ ...c, outcome: turn[c.name] ?? c.outcome })) },
    { name: 'gone', axes: ['x'], samplesAxis: null, children: [] },
  ];
}

const o = { now: NOW, instance: 'default', maxRunning: 3, resultsRoot: ROOT, linkBase: ROOT, mode: 'file' as const };
const every = { sets: [], keep: () => true, selecting: false };

describe('report: the comparison with a baseline', () => {
  it('compares each set with the baseline (by name), lists a set that is gone, and keeps the data bounded', () => {
    const { specs, sets, f } = load();
    // swe-1 (m1 add 1) failed now and passed before; swe-4 failed in both
    const d = reportFromLoad({ specs, sets }, f.statuses, every, o, {
      file: 'main.json',
      generatedAt: '2026-01-01T00:00:00.000Z',
      sets: baselineOf({ 'swe-1': 'passed' }),
    });
    const c = d.comparison!;
    expect(c.baseline).to.deep.equal({ file: 'main.json', generatedAt: '2026-01-01T00:00:00.000Z' });
    expect(c.sets.map((s) => [s.set, s.status])).to.deep.equal([
      ['gone', 'only-before'],
      ['swe', 'compared'],
    ]);
    const x = c.sets[1]!.comparisons[0]!;
    expect(x).to.deep.include({ cells: 4, samples: 6, passed: { before: 4, after: 3 }, discordant: { worse: 1, better: 0 }, pValue: 1, regression: false });
    expect(x.regressions.map((r) => r.coords)).to.deep.equal([{ model: 'm1', task: 'add' }]);
    // a baseline-side string is cut as the report's own are
    const long = reportFromLoad({ specs, sets }, f.statuses, every, o, { file: 'x'.repeat(5000), generatedAt: null, sets: [] });
    expect(long.comparison?.baseline?.file).to.have.length(1025);
    // only the named set: a set that is gone is not listed
    expect(
      reportFromLoad({ specs, sets }, f.statuses, { ...every, sets: ['swe'] }, o, { file: 'b', generatedAt: null, sets: baselineOf({}) }).comparison?.sets.map(
        (s) => s.set,
      ),
    ).to.deep.equal(['swe']);
    expect(reportFromLoad({ specs, sets }, f.statuses, every, o).comparison).to.equal(undefined);
  });

  it('the section comes first: numbers, regressions, the difference heatmap, the rest folded; every string escaped', () => {
    const { specs, sets, f } = load();
    const d = reportFromLoad({ specs, sets }, f.statuses, every, o, {
      file: `<b>${XSS}</b>.json`,
      generatedAt: 'not a date',
      sets: baselineOf({ 'swe-1': 'passed', 'swe-4': 'passed', 'swe-3': 'passed' }),
    });
    const html = renderReport(d);
    const markup = html.replace(/<script[\s\S]*?<\/script>/g, '');
    const at = (s: string) => markup.indexOf(s);
    expect(at('<section id="comparison">')).to.be.greaterThan(0).and.lessThan(at('<section id="summary">'));
    expect(at('<h4>Regressions (3)</h4>')).to.be.greaterThan(0).and.lessThan(at('<h4>Difference per cell</h4>'));
    expect(markup).to.contain(
      '<section id="comparison"><h2>Comparison with the baseline &lt;b&gt;&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;&lt;/b&gt;.json</h2>',
    );
    expect(markup).to.not.match(/<img/);
    // 6 paired samples (swe-5 and swe-bad left out): all 6 passed in the baseline, 3 now (swe-1, 3 and 4 fell); 3 cells worse: p = 0.25
    expect(markup).to.contain('<b>100.0% → 50.0%</b><span>baseline → now</span>');
    expect(markup).to.contain('<div class="tile"><b>-50.0 pp</b><span>difference</span></div><div class="tile"><b>[-80.0, -20.0] pp</b>');
    // the heatmap: rows by model, columns by task; m1·add fell in one of two samples, m1·count in one of two
    expect(markup).to.match(/<tr><th>model \\ task<\/th><th>add<\/th><th>count<\/th><\/tr>/);
    expect(markup).to.contain('<td class="d dm2" title="model=m1 task=add: baseline 2/2, now 1/2 (swe-0, swe-1)">2/2 → 1/2</td>');
    expect(markup).to.contain(`<th class="r">${XSS.replace(/</g, '&lt;').replace(/>/g, '&gt;')}</th><td class="d dm3"`);
    expect(markup).to.contain('<p class="note">not compared: in the baseline, not among the sets now</p>');
    expect(markup).to.contain(
      '<details><summary>Left out (not passed or failed on both sides) (2)</summary><ul><li>swe-5: unfinished → unfinished</li><li>swe-bad: infra (Invalid) → infra (Invalid)</li></ul></details>',
    );
  });
});

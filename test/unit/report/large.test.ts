/** The report of a large fleet (issue 55): its slots-held line sampled with every peak kept, its attempts as compact columns, its heatmap in bands. */
import { expect } from 'chai';
import { REPORT_LIMITS } from '../../../src/constants';
import { CODES, compactTable } from '../../../src/report/compact';
import { buildReport } from '../../../src/report/model';
import { renderReport } from '../../../src/report/render';
import { concurrency, sampleSteps } from '../../../src/report/timeline';
import { summarize } from '../../../src/sets/summary';
import { syntheticFleet } from '../../../bench/workloads/report';

describe('report: a large fleet', function () {
  this.timeout(60_000);

  it('sampleSteps: at most about n points, every peak kept, the end value right; few steps untouched', () => {
    const spans = Array.from({ length: 20_000 }, (_, i) => ({
      provisionedAt: i * 10,
      startedAt: i * 10 + 1,
      finishedAt: i * 10 + 35 + (i === 7777 ? 5000 : 0),
      outcome: 'passed',
    }));
    const steps = concurrency(spans, 0);
    const peak = steps.reduce((m, s) => Math.max(m, s.running), 0);
    const out = sampleSteps(steps, 0, 210_000, 500);
    expect(out.length).to.be.at.most(1000);
    expect(out.reduce((m, s) => Math.max(m, s.running), 0)).to.equal(peak);
    expect(out[out.length - 1]?.running).to.equal(0);
    const few = concurrency(spans.slice(0, 10), 0);
    expect(sampleSteps(few, 0, 1000, 500)).to.deep.equal(few);
  });

  it('compact columns: each repeated value once, small columns a character an attempt, names less their set', () => {
    const f = syntheticFleet({ models: ['a', 'b'], tasks: 60, seeds: 20, finished: true });
    const now = Date.parse('2026-01-03T00:00:00Z');
    const s = summarize(f.sets, f.statuses, now);
    const d = buildReport({
      sets: s.sets,
      childLabels: new Map(),
      plain: [],
      statuses: f.statuses,
      now,
      instance: 'x',
      maxRunning: 4,
      resultsRoot: '/bench/results-root',
      linkBase: '/bench/results-root',
      mode: 'file',
    });
    const t = compactTable(d);
    expect(t.n).to.equal(2400);
    expect(t.dict.set).to.deep.equal(['swe-bench-lite']);
    expect(t.dict.phase.sort()).to.deep.equal(['Failed', 'Succeeded', 'TimedOut']);
    expect(typeof t.phase).to.equal('string');
    expect((t.phase as string).length).to.equal(2400);
    expect([...(t.phase as string)].every((c) => CODES.includes(c))).to.equal(true);
    expect(t.name[0]).to.equal((d.attempts[0]?.name as string).slice('swe-bench-lite-'.length));
    // the run folder's link is its folder in the dictionary, the rest made from the name and run
    expect(t.dict.folder).to.deep.equal(['swe/']);
    const html = renderReport(d);
    expect(d.attempts.length).to.be.above(REPORT_LIMITS.detailed);
    expect(html).to.include('<tbody></tbody>');
    expect(html).to.not.include('class="tr" data-i=');
    // 2 models × 60 tasks fit the heatmap: a cell each, clickable
    expect(html.match(/<td class="c /g)).to.have.length(120);
  });

  it('a heatmap wider than REPORT_LIMITS.heatCols is drawn in bands of neighbours', () => {
    const f = syntheticFleet({ models: ['a'], tasks: 250, seeds: 2, finished: true });
    const now = Date.parse('2026-01-03T00:00:00Z');
    const s = summarize(f.sets, f.statuses, now);
    const d = buildReport({
      sets: s.sets,
      childLabels: new Map(),
      plain: [],
      statuses: f.statuses,
      now,
      instance: 'x',
      maxRunning: 4,
      resultsRoot: '/r',
      linkBase: null,
      mode: 'file',
    });
    const html = renderReport(d);
    const bands = html.match(/<td class="b [^"]*" title="([^"]*)"/g) ?? [];
    expect(bands).to.have.length(84); // 250 columns in bands of 3
    expect(html).to.include('1 × 250 cells, drawn in bands of neighbours');
  });
});

/** Summaries: pass@k against hand-computed values, cells and axis values, infra kept apart, JUnit escaping. */
import { expect } from 'chai';
import { REASONS } from '../../../src/constants';
import { toJunit, xmlEscape } from '../../../src/sets/junit';
import { toMarkdown } from '../../../src/sets/markdown';
import { passAtK, passHatK, percentile, rateWithStderr } from '../../../src/sets/stats';
import { setsOfLoad, summarize as summarizeGroups, type SetChild } from '../../../src/sets/summary';
import type { LoadedSpec, SetPolicy } from '../../../src/spec/types';
import type { AttemptStatus } from '../../../src/status/types';
import { spec, status } from '../../support/builders';

/** Groups loaded children by set, as a load would (children in expansion order). */
function summarize(specs: LoadedSpec[], statuses: ReadonlyMap<string, AttemptStatus>, now: number) {
  const groups = new Map<string, { policy: SetPolicy; children: SetChild[] }>();
  for (const s of specs) {
    const m = s.set as NonNullable<LoadedSpec['set']>;
    const g = groups.get(m.set.name) ?? { policy: m.set, children: [] };
    g.children.push({ name: s.spec.name, coords: m.coords, loaded: s });
    groups.set(m.set.name, g);
  }
  return summarizeGroups(groups, statuses, now);
}

const close = (a: number | undefined, b: number) => expect(a).to.be.closeTo(b, 1e-9);

describe('sets/stats', () => {
  it('pass@k is the unbiased estimator 1 - C(n-c,k)/C(n,k), checked against hand-computed values', () => {
    close(passAtK(5, 2, 1), 2 / 5);
    close(passAtK(5, 2, 2), 1 - 3 / 10); // C(3,2)=3, C(5,2)=10
    close(passAtK(5, 2, 3), 1 - 1 / 10); // C(3,3)=1, C(5,3)=10
    close(passAtK(5, 2, 4), 1); // n-c < k: every draw of 4 holds a pass
    close(passAtK(3, 1, 2), 1 - 1 / 3); // C(2,2)=1, C(3,2)=3
    close(passAtK(10, 0, 5), 0);
    close(passAtK(10, 10, 1), 1);
    // Large n stays exact where the binomials would overflow: C(197,100)/C(200,100) = (100·99·98)/(200·199·198).
    close(passAtK(200, 3, 100), 1 - (100 * 99 * 98) / (200 * 199 * 198));
    close(passAtK(2000, 1, 1), 1 / 2000);
    expect(() => passAtK(3, 1, 4)).to.throw(RangeError);
    expect(() => passAtK(0, 0, 1)).to.throw(RangeError);
  });

  it('pass^k is C(c,k)/C(n,k), checked against hand-computed values', () => {
    close(passHatK(5, 3, 1), 3 / 5);
    close(passHatK(5, 3, 2), 3 / 10); // C(3,2)=3, C(5,2)=10
    close(passHatK(5, 3, 3), 1 / 10); // C(3,3)=1, C(5,3)=10
    close(passHatK(5, 3, 4), 0);
    close(passHatK(4, 4, 4), 1);
    expect(() => passHatK(3, 1, 0)).to.throw(RangeError);
  });

  it('rates with standard errors, and nearest-rank percentiles', () => {
    expect(rateWithStderr(0, 0)).to.equal(null);
    const r = rateWithStderr(2, 6);
    close(r?.rate, 1 / 3);
    close(r?.stderr, Math.sqrt(((1 / 3) * (2 / 3)) / 6));
    expect(percentile([5, 1, 3, 2, 4], 50)).to.equal(3);
    expect(percentile([5, 1, 3, 2, 4], 95)).to.equal(5);
    expect(percentile([], 50)).to.equal(null);
  });
});

describe('sets/summary', () => {
  const policy: SetPolicy = {
    name: 'swe',
    axes: ['model', 'task', 'seed'],
    maxParallel: null,
    failFast: false,
    maxFailed: null,
    infra: [],
    score: null,
    source: { file: 's.yaml', line: 4, col: 9 },
  };
  const children: LoadedSpec[] = [];
  const recs = new Map<string, AttemptStatus>();
  // m1: t1 pass pass fail; t2 fail fail fail. m2: t1 pass Lost pass; t2 pass TimedOut fail.
  // Lost is infrastructure (no sample); TimedOut is the task's own failure (a sample that failed).
  const plan: Record<string, string[]> = { 'm1-t1': ['P', 'P', 'F'], 'm1-t2': ['F', 'F', 'F'], 'm2-t1': ['P', 'L', 'P'], 'm2-t2': ['P', 'T', 'F'] };
  let index = 0;
  for (const [cell, outcomes] of Object.entries(plan)) {
    const [model, task] = cell.split('-') as [string, string];
    outcomes.forEach((o, seed) => {
      const name = `swe-${model}-${seed}-${task}`;
      children.push({ ...spec(name), set: { set: policy, coords: { model, task, seed: String(seed) }, index: index++ } });
      const when = { createdAt: '2026-01-01T00:00:00.000Z', startedAt: `2026-01-01T00:00:0${seed + 1}.000Z`, finishedAt: `2026-01-01T00:00:1${seed}.000Z` };
      const phase =
        o === 'P'
          ? { phase: 'Succeeded' as const, reason: REASONS.completed }
          : o === 'F'
            ? { phase: 'Failed' as const, reason: REASONS.error }
            : o === 'L'
              ? { phase: 'Failed' as const, reason: REASONS.lost }
              : { phase: 'TimedOut' as const, reason: REASONS.deadlineExceeded };
      recs.set(name, status(name, { ...phase, ...when }));
    });
  }

  it('ResultsTruncated: a pass still (its reason), a failure still (its warning), both counted as truncated', () => {
    const truncated = new Map(recs);
    const pass = children.find((c) => recs.get(c.spec.name)?.reason === REASONS.completed)?.spec.name as string;
    const fail = children.find((c) => recs.get(c.spec.name)?.reason === REASONS.error)?.spec.name as string;
    truncated.set(pass, { ...(recs.get(pass) as AttemptStatus), reason: REASONS.resultsTruncated });
    truncated.set(fail, { ...(recs.get(fail) as AttemptStatus), warnings: [`${REASONS.resultsTruncated}: results truncated: ...`] });
    const s = summarize(children, truncated, 0).sets[0];
    expect(s).to.include({ passed: 5, failed: 6, infra: 1, resultsTruncated: 2 });
    expect(s?.children.filter((c) => c.resultsTruncated).map((c) => [c.name, c.outcome, c.reason])).to.deep.equal(
      [
        [pass, 'passed', REASONS.resultsTruncated],
        [fail, 'failed', REASONS.error],
      ].sort((a, b) => children.findIndex((c) => c.spec.name === a[0]) - children.findIndex((c) => c.spec.name === b[0])),
    );
    expect(summarize(children, recs, 0).sets[0]?.resultsTruncated).to.equal(0);
  });

  it('per cell (all axes but the samples axis): n, passed, failed, infra apart, pass@k', () => {
    const s = summarize(children, recs, 0).sets[0];
    expect(s).to.include({ name: 'swe', samplesAxis: 'seed', n: 12, passed: 5, failed: 6, infra: 1, skipped: 0, unfinished: 0 });
    expect(s?.infraReasons).to.deep.equal({ Lost: 1 });
    const cell = s?.cells.find((c) => c.coords.model === 'm2' && c.coords.task === 't1');
    expect(cell).to.include({ n: 3, passed: 2, failed: 0, infra: 1 });
    expect(cell?.passAtK).to.deep.equal({ '1': 1, '2': 1 });
    expect(cell?.passHatK).to.deep.equal({ '1': 1, '2': 1 });
    const m1t1 = s?.cells.find((c) => c.coords.model === 'm1' && c.coords.task === 't1');
    close(m1t1?.passHatK['2'], 1 / 3); // C(2,2)/C(3,2)
    expect(cell?.ids.infra).to.deep.equal(['swe-m2-1-t1']);
    // a timeout is the task's failure: a sample of its cell, counted in pass rates and pass@k
    const m2t2 = s?.cells.find((c) => c.coords.model === 'm2' && c.coords.task === 't2');
    expect(m2t2).to.include({ n: 3, passed: 1, failed: 2, infra: 0 });
    expect(m2t2?.ids.failed).to.deep.equal(['swe-m2-1-t2', 'swe-m2-2-t2']);
  });

  it('a set that moves TimedOut to infrastructure (score.infra) keeps it out of pass rates', () => {
    const moved: SetPolicy = { ...policy, infra: ['TimedOut'] };
    const kids = children.map((c) => ({ ...c, set: { ...(c.set as NonNullable<LoadedSpec['set']>), set: moved } }));
    const s = summarize(kids, recs, 0).sets[0];
    expect(s).to.include({ n: 12, passed: 5, failed: 5, infra: 2 });
    expect(s?.infraReasons).to.deep.equal({ Lost: 1, TimedOut: 1 });
    const m2t2 = s?.cells.find((c) => c.coords.model === 'm2' && c.coords.task === 't2');
    expect(m2t2?.passAtK).to.deep.equal({ '1': 0.5, '2': 1 });
  });

  it('per axis value: pass rate with its standard error, pass@k averaged over its cells', () => {
    const s = summarize(children, recs, 0).sets[0];
    const m1 = s?.byAxis.model?.find((v) => v.value === 'm1');
    close(m1?.passRate ?? NaN, 2 / 6);
    close(m1?.stderr ?? NaN, Math.sqrt(((2 / 6) * (4 / 6)) / 6));
    // cells (t1: n=3 c=2) and (t2: n=3 c=0): pass@1 (2/3 + 0)/2, pass@2 (1 + 0)/2, pass@3 (1 + 0)/2
    close(m1?.passAtK['1'], 1 / 3);
    close(m1?.passAtK['2'], 0.5);
    close(m1?.passAtK['3'], 0.5);
    const m2 = s?.byAxis.model?.find((v) => v.value === 'm2');
    // cells (t1: n=2 c=2, the Lost run is no sample) and (t2: n=3 c=1, the TimedOut one is): k up to 2
    expect(Object.keys(m2?.passAtK ?? {})).to.deep.equal(['1', '2']);
    close(m2?.passAtK['1'], (1 + 1 / 3) / 2);
    close(m2?.passAtK['2'], (1 + (1 - 1 / 3)) / 2);
    expect(s?.durationMs).to.deep.equal({ p50: 9000, p95: 9000 });
    expect(s?.queueMs).to.deep.equal({ p50: 2000, p95: 3000 });
  });

  it('with a score, a missing score is infra and a low score a task failure; other spec hashes count as unfinished', () => {
    const scored: SetPolicy = { ...policy, name: 'sc', score: { file: 'score.json', pass: 0.5 } };
    const kids = ['a', 'b', 'c', 'd'].map((n, i) => ({ ...spec(n), set: { set: scored, coords: { model: 'm', task: 't', seed: String(i) }, index: i } }));
    const r = new Map([
      ['a', status('a', { phase: 'Succeeded', score: 0.7 })],
      ['b', status('b', { phase: 'Failed', reason: REASONS.error, score: 0.2 })],
      ['c', status('c', { phase: 'Succeeded', scoreError: 'score.json: not found' })],
      ['d', status('d', { phase: 'Succeeded', score: 1, specHash: 'old' })],
    ]);
    const s = summarize(kids, r, 0).sets[0];
    expect(s).to.include({ passed: 1, failed: 1, infra: 1, unfinished: 1 });
    expect(s?.infraReasons).to.deep.equal({ ScoreMissing: 1 });
  });

  it('JUnit: one testcase per child; failures, errors and skips; every string escaped', () => {
    const evil: SetPolicy = { ...policy, name: 'x' };
    const kids = [{ ...spec('x-1'), set: { set: evil, coords: { model: '</script><img src=x onerror=alert(1)>', task: 'a&b', seed: '0' }, index: 0 } }];
    const xml = toJunit(summarize(kids, new Map([['x-1', status('x-1', { phase: 'Failed', reason: 'Lost', message: 'x' })]]), 0));
    expect(xml).to.contain('&lt;/script&gt;&lt;img src=x onerror=alert(1)&gt;').and.contain('a&amp;b').and.not.contain('<img');
    // the message names the outcome (as get's RESULT does), the text the run's phase
    expect(xml).to.contain('<error message="infra (Lost)" type="Lost">run Failed (Lost)</error>');
    const scored0 = toJunit(
      summarize(
        [
          {
            ...spec('z-1'),
            set: { set: { ...policy, name: 'z', score: { file: 's.json', pass: 1 } }, coords: { model: 'm', task: 't', seed: '0' }, index: 0 },
          },
        ],
        new Map([['z-1', status('z-1', { phase: 'Succeeded', reason: 'Completed', exitCode: 0, score: 0 })]]),
        0,
      ),
    );
    expect(scored0).to.contain('<failure message="failed (score 0)" type="TaskFailed">run Succeeded (Completed)</failure>');
    expect(xml).to.match(/<testsuite name="x" tests="1" failures="0" errors="1" skipped="0"/);
    expect(xmlEscape('a\u0000b\u0007c"\'')).to.equal('abc&quot;&apos;');
  });

  it('a touched child (an exec or a copy made into its run) is said so in JUnit and Markdown, passed or not; clean ones are as before', () => {
    const kid = (name: string, i: number) => ({
      ...spec(name),
      set: { set: { ...policy, name: 'x' }, coords: { model: 'm', task: 't', seed: String(i) }, index: i },
    });
    const kids = [kid('x-0', 0), kid('x-1', 1), kid('x-2', 2)];
    const touched = { execs: 2, copies: 1, first: '2026-01-01T00:00:00Z', last: '2026-01-01T00:00:01Z' };
    const r = new Map([
      ['x-0', status('x-0', { phase: 'Succeeded', touched })],
      ['x-1', status('x-1', { phase: 'Failed', reason: 'Error', exitCode: 1, touched })],
      ['x-2', status('x-2', { phase: 'Succeeded' })],
    ]);
    const sum = summarize(kids, r, 0);
    expect(sum.sets[0]?.touched).to.equal(2);
    const xml = toJunit(sum);
    const cases = xml.split('<testcase').slice(1);
    expect(cases[0]).to.contain('<property name="berth.touched" value="2 execs, 1 copies"/>').and.contain('<system-out>TOUCHED: 2 execs and 1 copies');
    expect(cases[1]).to.contain('<failure ').and.contain('berth.touched');
    expect(cases[2]).to.match(/^ classname="x" name="x-2 \([^)]*\)" time="[\d.]+"\/>\n/);
    const md = toMarkdown(sum);
    expect(md).to.contain('### Touched by hand');
    expect(md)
      .to.match(/\| x-0 \| set\/x \| passed \| 2 \| 1 \|/)
      .and.match(/\| x-1 \| set\/x \| failed \| 2 \| 1 \|/);
    expect(md).not.to.match(/\| x-2 \| set\/x \| passed/);
    r.set('x-0', status('x-0', { phase: 'Succeeded' }));
    r.set('x-1', status('x-1', { phase: 'Failed', reason: 'Error', exitCode: 1 }));
    expect(toMarkdown(summarize(kids, r, 0))).not.to.contain('Touched');
    expect(toJunit(summarize(kids, r, 0))).not.to.contain('touched');
  });

  it('counts a child whose spec did not load as infra (Invalid), from the load', () => {
    const loaded = { ...spec('s-a'), set: { set: policy, coords: { model: 'a', task: 't', seed: '0' }, index: 0 } };
    const groups = setsOfLoad(
      [loaded],
      new Map([['swe', { policy, children: ['s-a', 's-b'], coords: [loaded.set.coords, { model: 'b', task: 't', seed: '0' }], valid: true }]]),
    );
    const s = summarizeGroups(groups, new Map([['s-a', status('s-a', { phase: 'Succeeded' })]]), 0).sets[0];
    expect(s).to.include({ n: 2, passed: 1, infra: 1 });
    expect(s?.infraReasons).to.deep.equal({ Invalid: 1 });
    expect(s?.children[1]).to.include({ name: 's-b', phase: 'Invalid' });
    expect(s?.children[1]?.coords).to.deep.equal({ model: 'b', task: 't', seed: '0' });
  });
});

/**
 * Comparing fleets, pure: the generator against xoshiro128**'s reference C code, the exact
 * McNemar p-value against sums of exact binomials, the bootstrap intervals (clustered and not)
 * against the reference computation in compare-reference.py (written apart, from the published
 * definitions), and the pairing: by name and by axis, infra left out, unpaired children listed,
 * a set whose axes changed, no discordant pair, all discordant; the text, Markdown and the
 * baseline file's checks.
 */
import { expect } from 'chai';
import { COMPARE } from '../../../src/constants';
import { parseBaseline } from '../../../src/sets/baseline';
import { byProblem, compareByAxis, compareResult, compareWithBaseline, type SideChild, type SideSet } from '../../../src/sets/compare';
import { compareMarkdown, compareText } from '../../../src/sets/compare-text';
import type { OutcomeClass } from '../../../src/sets/outcome';
import { bootstrapInterval, mcnemarExact, type Cluster } from '../../../src/sets/paired';
import { xoshiro128ss } from '../../../src/sets/prng';
import { summarize, type SetChild } from '../../../src/sets/summary';
import type { LoadedSpec, SetPolicy } from '../../../src/spec/types';
import { spec, status } from '../../support/builders';

const SEED = COMPARE.seed;
const boot = (clusters: Cluster[]) => bootstrapInterval(clusters, { resamples: COMPARE.resamples, level: COMPARE.level, seed: SEED });

/** A set's side: children named `<set>-<values in axis order>`. */
function side(name: string, axes: string[], samplesAxis: string | null, kids: [Record<string, string>, OutcomeClass, string?][]): SideSet {
  return {
    name,
    axes,
    samplesAxis,
    children: kids.map(([coords, outcome, reason]): SideChild => ({
      name: [name, ...axes.map((a) => coords[a])].join('-'),
      coords,
      outcome,
      reason: reason ?? null,
    })),
  };
}

const task = (i: number) => `t${String(i).padStart(2, '0')}`;

describe('sets/prng: xoshiro128**', () => {
  it("gives the reference C code's outputs for berth's seed (https://prng.di.unimi.it/xoshiro128starstar.c)", () => {
    const r = xoshiro128ss(SEED);
    const first = Array.from({ length: 8 }, () => r.next());
    expect(first).to.deep.equal([2463954730, 5524658, 3022325299, 3768446993, 2807704630, 2047592877, 1681329227, 359599276]);
    for (let i = 8; i < 999; i++) r.next();
    expect(r.next()).to.equal(3263199877);
  });

  it('fillBelow draws floor(x · n / 2^32) from the same stream; an all-zero state or a bad n is refused', () => {
    const a = xoshiro128ss(SEED);
    const b = xoshiro128ss(SEED);
    const out = new Uint32Array(1000);
    a.fillBelow(out, 7);
    for (const v of out) expect(v).to.equal(Math.floor((b.next() * 7) / 2 ** 32));
    expect(a.next()).to.equal(b.next());
    expect(() => xoshiro128ss([0, 0, 0, 0])).to.throw(RangeError);
    expect(() => a.fillBelow(out, 0)).to.throw(RangeError);
    expect(() => a.fillBelow(out, 2 ** 21 + 1)).to.throw(RangeError);
  });
});

describe('sets/paired: exact McNemar', () => {
  it('is 2 · P(X <= min(b, c)) for X ~ Binomial(b + c, 1/2), capped at 1', () => {
    expect(mcnemarExact(1, 9)).to.equal(0.021484375); // 2 · (1 + 10) / 1024
    expect(mcnemarExact(9, 1)).to.equal(0.021484375);
    expect(mcnemarExact(0, 6)).to.equal(0.03125); // 2 / 64
    expect(mcnemarExact(10, 0)).to.equal(2 / 1024); // all discordant pairs one way
    expect(mcnemarExact(8, 2)).to.equal(0.109375);
    expect(mcnemarExact(5, 1)).to.equal(0.21875);
    expect(mcnemarExact(20, 31)).to.equal((2 * [...Array(21).keys()].reduce((s, i) => s + choose(51, i), 0)) / 2 ** 51); // the largest exact case
    // beyond 51 discordant pairs, from logs: against the exact fractions (compare-reference.py)
    expect(mcnemarExact(40, 60)).to.be.closeTo(0.05688793364098079, 1e-15);
    expect(mcnemarExact(400, 600) / 2.7284641560660184e-10).to.be.closeTo(1, 1e-11);
    expect(mcnemarExact(5000, 5200)).to.be.within(0, 1);
  });

  it('no discordant pair, or as many each way: p = 1; bad counts are refused', () => {
    expect(mcnemarExact(0, 0)).to.equal(1);
    expect(mcnemarExact(2, 2)).to.equal(1);
    expect(mcnemarExact(3, 4)).to.equal(1);
    expect(() => mcnemarExact(-1, 2)).to.throw(RangeError);
    expect(() => mcnemarExact(1.5, 2)).to.throw(RangeError);
  });
});

function choose(n: number, k: number): number {
  let c = 1;
  for (let i = 1; i <= k; i++) c = (c * (n - k + i)) / i;
  return Math.round(c);
}

describe('sets/paired: bootstrap interval', () => {
  it('unclustered (one pair per cell): the reference computation, to the last bit', () => {
    const pairs: Cluster[] = [...Array(8).fill({ n: 1, diff: -1 }), ...Array(2).fill({ n: 1, diff: 1 }), ...Array(20).fill({ n: 1, diff: 0 })];
    expect(boot(pairs)).to.deep.equal({ lower: -0.4, upper: 0 });
  });

  it('clustered by task (3 samples each, and of unequal sizes): the reference computation', () => {
    const tasks: Cluster[] = [-3, -2, -1, 0, 0, 0, 1, -1, -2, 0].map((diff) => ({ n: 3, diff }));
    expect(boot(tasks)).to.deep.equal({ lower: -0.5, upper: -0.03333333333333333 });
    const uneven: Cluster[] = [
      { n: 1, diff: 0 },
      { n: 2, diff: -2 },
      { n: 4, diff: 1 },
      { n: 3, diff: -1 },
      { n: 2, diff: 0 },
      { n: 5, diff: -3 },
    ];
    expect(boot(uneven)).to.deep.equal({ lower: -0.6153846153846154, upper: 0.08 });
  });

  it('the same input gives the same interval; none without clusters; one cluster is its own value', () => {
    const c: Cluster[] = [-1, 0, 1, 0, -1, -1].map((diff) => ({ n: 1, diff }));
    expect(boot(c)).to.deep.equal(boot([...c]));
    expect(boot([])).to.equal(null);
    expect(boot([{ n: 4, diff: -2 }])).to.deep.equal({ lower: -0.5, upper: -0.5 });
  });

  it('a large unclustered sample: close to the normal interval of a paired difference', () => {
    // 2,000 pairs: 300 worse, 200 better; the paired standard error is sqrt((b + c)/N − d²)/sqrt(N)
    const n = 2000;
    const c: Cluster[] = Array.from({ length: n }, (_, i) => ({ n: 1, diff: i < 300 ? -1 : i < 500 ? 1 : 0 }));
    const d = -100 / n;
    const se = Math.sqrt(500 / n - d * d) / Math.sqrt(n);
    const r = boot(c);
    expect(r?.lower).to.be.closeTo(d - 1.96 * se, 0.004);
    expect(r?.upper).to.be.closeTo(d + 1.96 * se, 0.004);
  });
});

describe('sets/compare', () => {
  it('--baseline: children paired by name; rates, difference, interval and p as the reference computes them; regressions and fixes', () => {
    // 30 tasks: t00-t07 passed → failed, t08-t09 failed → passed, t10-t21 passed both times, t22-t29 failed both times
    const was = (i: number): OutcomeClass => (i < 8 || (i >= 10 && i < 22) ? 'passed' : 'failed');
    const now = (i: number): OutcomeClass => (i >= 8 && i < 22 ? 'passed' : 'failed');
    const before = side(
      'evals',
      ['task'],
      null,
      [...Array(30).keys()].map((i) => [{ task: task(i) }, was(i)]),
    );
    const after = side(
      'evals',
      ['task'],
      null,
      [...Array(30).keys()].reverse().map((i) => [{ task: task(i) }, now(i)]),
    );
    const s = compareWithBaseline(before, after);
    expect(s).to.include({ set: 'evals', status: 'compared', message: null });
    const c = s.comparisons[0]!;
    expect(c).to.deep.include({
      before: 'baseline',
      after: 'now',
      axis: null,
      cells: 30,
      samples: 30,
      passed: { before: 20, after: 14 },
      passRate: { before: 20 / 30, after: 14 / 30 },
      discordant: { worse: 8, better: 2 },
      pValue: 0.109375,
      regression: false, // a 20-point fall, but p >= 0.05: it could be noise
      interval: { lower: -0.4, upper: 0 }, // compare-reference.py, unclustered
    });
    expect(c.difference).to.equal(-6 / 30);
    expect(c.regressions.map((x) => x.coords.task)).to.deep.equal(['t00', 't01', 't02', 't03', 't04', 't05', 't06', 't07']);
    expect(c.regressions[0]).to.deep.equal({
      coords: { task: 't00' },
      n: 1,
      before: { passed: 1, names: ['evals-t00'] },
      after: { passed: 0, names: ['evals-t00'] },
    });
    expect(c.fixes.map((x) => x.coords.task)).to.deep.equal(['t08', 't09']);
    expect(c.flaky).to.deep.equal([]);
    expect(c.leftOut).to.deep.equal([]);
    expect(c.unpaired).to.deep.equal([]);
    // the order the children were listed in changes nothing
    expect(compareWithBaseline({ ...before, children: [...before.children].reverse() }, after)).to.deep.equal(s);
  });

  it('clustered by task: the interval resamples tasks (the reference computation); McNemar counts tasks that moved; flaky cells listed', () => {
    // 10 tasks × 3 seeds; per task, how many seeds passed before and after (Σ after − before: −3 −2 −1 0 0 0 1 −1 −2 0)
    const counts: [number, number][] = [
      [3, 0],
      [3, 1],
      [2, 1],
      [3, 3],
      [0, 0],
      [1, 1],
      [1, 2],
      [3, 2],
      [2, 0],
      [2, 2],
    ];
    const kids = (k: 0 | 1): [Record<string, string>, OutcomeClass][] =>
      counts.flatMap(([b, a], i) =>
        [0, 1, 2].map((seed): [Record<string, string>, OutcomeClass] => [{ task: task(i), seed: String(seed) }, seed < (k ? a : b) ? 'passed' : 'failed']),
      );
    const c = compareWithBaseline(side('s', ['task', 'seed'], 'seed', kids(0)), side('s', ['task', 'seed'], 'seed', kids(1))).comparisons[0]!;
    expect(c).to.deep.include({ cells: 10, samples: 30, passed: { before: 20, after: 12 }, discordant: { worse: 5, better: 1 }, pValue: 0.21875 });
    expect(c.interval).to.deep.equal({ lower: -0.5, upper: -0.03333333333333333 }); // compare-reference.py, clustered
    expect(c.regressions.map((x) => `${x.coords.task} ${x.before.passed}/${x.n}→${x.after.passed}/${x.n}`)).to.deep.equal([
      't00 3/3→0/3',
      't01 3/3→1/3',
      't02 2/3→1/3',
      't07 3/3→2/3',
      't08 2/3→0/3',
    ]);
    expect(c.regressions[0]?.after.names).to.deep.equal(['s-t00-0', 's-t00-1', 's-t00-2']);
    expect(c.flaky.map((x) => x.coords.task)).to.deep.equal(['t01', 't02', 't05', 't06', 't07', 't08', 't09']);
    // the same samples unclustered (no samples axis): the interval differs, resampling 30 independent pairs
    const flat = compareWithBaseline(side('s', ['task', 'seed'], null, kids(0)), side('s', ['task', 'seed'], null, kids(1))).comparisons[0]!;
    expect(flat.cells).to.equal(30);
    expect(flat.interval).to.not.deep.equal(c.interval);
  });

  it('infra, skipped and unfinished pairs are left out and listed; children on one side only are unpaired', () => {
    const before = side('x', ['task'], null, [
      [{ task: 'a' }, 'passed'],
      [{ task: 'b' }, 'passed'],
      [{ task: 'c' }, 'failed'],
      [{ task: 'gone' }, 'passed'],
    ]);
    const after = side('x', ['task'], null, [
      [{ task: 'a' }, 'infra', 'ScoreMissing'],
      [{ task: 'b' }, 'failed'],
      [{ task: 'c' }, 'unfinished'],
      [{ task: 'new' }, 'failed'],
    ]);
    const c = compareWithBaseline(before, after).comparisons[0]!;
    expect(c).to.deep.include({ cells: 1, samples: 1, discordant: { worse: 1, better: 0 }, pValue: 1 });
    expect(c.leftOut).to.deep.equal([
      { before: { name: 'x-a', outcome: 'passed', reason: null }, after: { name: 'x-a', outcome: 'infra', reason: 'ScoreMissing' } },
      { before: { name: 'x-c', outcome: 'failed', reason: null }, after: { name: 'x-c', outcome: 'unfinished', reason: null } },
    ]);
    expect(c.unpaired).to.deep.equal([
      { side: 'before', name: 'x-gone', coords: { task: 'gone' }, outcome: 'passed' },
      { side: 'after', name: 'x-new', coords: { task: 'new' }, outcome: 'failed' },
    ]);
  });

  it('no discordant pair: p = 1, no regression; every pair discordant one way: a regression', () => {
    const same = side(
      'x',
      ['task'],
      null,
      [...Array(10).keys()].map((i) => [{ task: task(i) }, i % 2 ? 'passed' : 'failed']),
    );
    const c = compareWithBaseline(same, same).comparisons[0]!;
    expect(c).to.deep.include({ difference: 0, pValue: 1, regression: false, discordant: { worse: 0, better: 0 }, interval: { lower: 0, upper: 0 } });
    const allPass = side(
      'x',
      ['task'],
      null,
      [...Array(10).keys()].map((i) => [{ task: task(i) }, 'passed']),
    );
    const allFail = side(
      'x',
      ['task'],
      null,
      [...Array(10).keys()].map((i) => [{ task: task(i) }, 'failed']),
    );
    const down = compareWithBaseline(allPass, allFail).comparisons[0]!;
    expect(down).to.deep.include({ difference: -1, pValue: 2 / 1024, regression: true, interval: { lower: -1, upper: -1 } });
    const up = compareWithBaseline(allFail, allPass).comparisons[0]!;
    expect(up).to.deep.include({ difference: 1, pValue: 2 / 1024, regression: false });
    expect(compareResult('baseline', [compareWithBaseline(allPass, allFail)]).regression).to.equal(true);
    expect(compareResult('baseline', [compareWithBaseline(allFail, allPass)]).regression).to.equal(false);
    // --alpha stricter than the p-value: not a regression
    expect(compareWithBaseline(allPass, allFail, { alpha: 0.001 }).comparisons[0]?.regression).to.equal(false);
  });

  it('nothing finished on both sides: no rates, no interval, p = 1', () => {
    const a = side('x', ['task'], null, [[{ task: 'a' }, 'unfinished']]);
    const c = compareWithBaseline(a, a).comparisons[0]!;
    expect(c).to.deep.include({
      cells: 0,
      samples: 0,
      difference: null,
      interval: null,
      pValue: 1,
      regression: false,
      passRate: { before: null, after: null },
    });
    expect(compareText(compareResult('baseline', [compareWithBaseline(a, a)]))).to.contain('nothing paired has finished on both sides yet');
  });

  it('a set whose axes changed is not compared, and says why', () => {
    const before = side('x', ['model', 'task'], null, [[{ model: 'm', task: 'a' }, 'passed']]);
    const after = side('x', ['model', 'task', 'temp'], null, [[{ model: 'm', task: 'a', temp: '0' }, 'failed']]);
    const s = compareWithBaseline(before, after);
    expect(s).to.deep.equal({
      set: 'x',
      status: 'axes-changed',
      message:
        'its axes changed (baseline: model, task; now: model, task, temp): its children are named from their axis values, so none of them can be paired; compare against a baseline with the same axes',
      comparisons: [],
    });
    const r = compareResult('baseline', [s]);
    expect(r.regression).to.equal(false);
    expect(compareText(r)).to.equal(
      'set/x: not compared: its axes changed (baseline: model, task; now: model, task, temp): its children are named from their axis values, so none of them can be paired; compare against a baseline with the same axes\n',
    );
    // the same axes in another order are the same axes
    expect(compareWithBaseline(before, { ...before, axes: ['task', 'model'] }).status).to.equal('compared');
  });

  it('--by: pairs on the other axes (the samples axis too), cells without it; each later value against the first; unpaired cells listed', () => {
    const kids: [Record<string, string>, OutcomeClass][] = [];
    for (const model of ['m1', 'm2', 'm3'])
      for (const t of ['a', 'b', 'c'])
        for (const seed of ['0', '1']) {
          if (model === 'm2' && t === 'c') continue; // excluded: m1's c has no partner in m2
          kids.push([{ model, task: t, seed }, model === 'm1' || (model === 'm3' && t !== 'a') || seed === '0' ? 'passed' : 'failed']);
        }
    const set = side('e', ['model', 'task', 'seed'], 'seed', kids);
    expect(byProblem(set, 'model', ['m1', 'm2'])).to.equal(null);
    expect(byProblem(set, 'modle', ['m1', 'm2'])).to.equal('set e has no axis "modle" (its axes: model, task, seed)');
    expect(byProblem(set, 'model', ['m1', 'm9'])).to.equal('set e has no model="m9" (its values: m1, m2, m3)');
    const s = compareByAxis(set, 'model', ['m1', 'm2', 'm3']);
    expect(s.comparisons.map((c) => [c.before, c.after, c.axis, c.pairedOn, c.samplesAxis, c.cells, c.samples])).to.deep.equal([
      ['m1', 'm2', 'model', ['task', 'seed'], 'seed', 2, 4],
      ['m1', 'm3', 'model', ['task', 'seed'], 'seed', 3, 6],
    ]);
    const [m2, m3] = s.comparisons as [NonNullable<(typeof s.comparisons)[0]>, NonNullable<(typeof s.comparisons)[0]>];
    expect(m2.passed).to.deep.equal({ before: 4, after: 2 });
    expect(m2.regressions.map((c) => [c.coords, c.before.names, c.after.names])).to.deep.equal([
      [{ task: 'a' }, ['e-m1-a-0', 'e-m1-a-1'], ['e-m2-a-0', 'e-m2-a-1']],
      [{ task: 'b' }, ['e-m1-b-0', 'e-m1-b-1'], ['e-m2-b-0', 'e-m2-b-1']],
    ]);
    expect(m2.unpaired.map((u) => [u.side, u.name])).to.deep.equal([
      ['before', 'e-m1-c-0'],
      ['before', 'e-m1-c-1'],
    ]);
    expect(m3.regressions.map((c) => c.coords.task)).to.deep.equal(['a']);
    expect(m3.flaky.map((c) => c.coords.task)).to.deep.equal(['a']);
    // comparing the samples axis itself: nothing is folded, each pair is its own cell
    const seeds = compareByAxis(set, 'seed', ['0', '1']).comparisons[0]!;
    expect([seeds.samplesAxis, seeds.cells, seeds.samples]).to.deep.equal([null, 8, 8]);
  });

  it('text: every number, and lists cut at COMPARE.listed; Markdown escapes what a spec or a run names', () => {
    const before = side(
      'x',
      ['task'],
      null,
      [...Array(25).keys()].map((i) => [{ task: task(i) }, 'passed']),
    );
    const after = side('x', ['task'], null, [
      ...[...Array(24).keys()].map((i): [Record<string, string>, OutcomeClass] => [{ task: task(i) }, 'failed']),
      [{ task: 't24' }, 'infra', 'Lost'],
    ]);
    const r = compareResult('baseline', [compareWithBaseline(before, after)], { baseline: { file: 'main.json', generatedAt: null } });
    const text = compareText(r).split('\n');
    expect(text.slice(0, 7)).to.deep.equal([
      'set/x: now against the baseline',
      '  paired: 24 cells (task), 24 samples',
      '  pass rate: baseline 100.0% (24/24), now 0.0% (0/24)',
      '  difference: -100.0 pp, 95% interval [-100.0, -100.0] pp',
      '  McNemar exact p = 1.2e-7: 24 cells worse, 0 better',
      '  a regression: the pass rate fell, p < 0.05',
      '  regressions (24):',
    ]);
    expect(text.slice(7, 8)).to.deep.equal(['    task=t00: passed → failed (x-t00)']);
    expect(text.slice(27)).to.deep.equal([
      '    … and 4 more (-o json lists them all)',
      '  left out (1): not passed or failed on both sides',
      '    x-t24: passed → infra (Lost)',
      '',
    ]);

    const evil = side('x', ['task'], null, [[{ task: 'a|b' }, 'passed']]);
    evil.children[0]!.name = 'x-<img src=y>';
    const md = compareMarkdown(compareResult('baseline', [compareWithBaseline(evil, { ...evil, children: [{ ...evil.children[0]!, outcome: 'failed' }] })]));
    expect(md).to.contain('| task=a\\|b | passed | failed | x-\\<img src=y\\> |');
    expect(md).to.not.match(/[^\\]<img/);
  });
});

describe('sets/baseline', () => {
  const policy: SetPolicy = {
    name: 'evals',
    axes: ['task'],
    maxParallel: null,
    failFast: false,
    maxFailed: null,
    infra: [],
    score: null,
    source: { file: 'e.yaml', line: 1, col: 1 },
  };

  it('reads what summary -o json writes', () => {
    const children: SetChild[] = ['a', 'b'].map((t) => {
      const loaded = spec(`evals-${t}`);
      return { name: `evals-${t}`, coords: { task: t }, loaded: { ...loaded, set: { set: policy, coords: { task: t }, index: 0 } } as LoadedSpec };
    });
    const statuses = new Map([['evals-a', status('evals-a', { phase: 'Succeeded', specHash: 'h-evals-a' })]]);
    const summary = summarize(new Map([['evals', { policy, children }]]), statuses, Date.parse('2026-01-02T03:04:05Z'));
    const b = parseBaseline(JSON.stringify(summary, null, 2), 'main.json');
    expect(b).to.deep.equal({
      generatedAt: '2026-01-02T03:04:05.000Z',
      sets: [
        {
          name: 'evals',
          axes: ['task'],
          samplesAxis: null,
          children: [
            { name: 'evals-a', coords: { task: 'a' }, outcome: 'passed', reason: null },
            { name: 'evals-b', coords: { task: 'b' }, outcome: 'unfinished', reason: null },
          ],
        },
      ],
    });
  });

  it('a file that is no summary: an error naming the file, line, column and field', () => {
    expect(parseBaseline('{"sets": [', 'b.json'))
      .to.have.property('problem')
      .that.matches(/^b\.json: not JSON \(berth summary -o json writes it\): /);
    expect(parseBaseline('{"schemaVersion": 2, "sets": []}', 'b.json')).to.deep.equal({
      problem: 'b.json:1:19: schemaVersion: must be 1 (a berth summary -o json; got 2)',
    });
    const text = JSON.stringify(
      { schemaVersion: 1, sets: [{ name: 's', axes: ['t'], samplesAxis: null, children: [{ name: 's-a', coords: { t: 'a' }, outcome: 'won' }] }] },
      null,
      2,
    );
    expect(parseBaseline(text, 'b.json')).to.deep.equal({
      problem: 'b.json:16:22: sets[0].children[0].outcome: must be one of passed, failed, infra, skipped, unfinished',
    });
    expect(parseBaseline('[]', 'b.json')).to.deep.equal({ problem: 'b.json:1:1: (the document): must be an object' });
  });
});

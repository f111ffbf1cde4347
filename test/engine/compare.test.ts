/**
 * `berth compare` on the real engine: a set whose outcomes are known by construction (each
 * child's fixture says pass, fail or none: a score of 1, of 0, or no score, an infrastructure
 * outcome), run with `reconcile --once --wait`; every number `compare --by` prints is checked,
 * then one task's files change, the summary taken before is the baseline, and every number of
 * `compare --baseline` is checked; `--fail-on regression` exits 3 for the significant fall and 0
 * for the change that could be noise; the report shows the comparison.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { CompareResult } from '../../src/sets/compare';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: cmp}
spec:
  matrix:
    agent: [old, new]
    task: {fromDir: ./tasks}
    seed: {range: [0, 2]}
  maxParallel: 12
  template:
    image: berth/busybox:local
    command: [sh, -c, 'v=$(cat \${{ matrix.agent }}-\${{ matrix.seed }}); if [ "$v" = pass ]; then echo 1 > /results/score.json; elif [ "$v" = fail ]; then echo 0 > /results/score.json; fi']
    fixture: ./tasks/\${{ matrix.task }}
  score: {file: score.json}
`;

/** What each task's children do, as [old seed 0, old seed 1, new seed 0, new seed 1]. */
const TASKS: Record<string, [string, string, string, string]> = {
  t1: ['pass', 'pass', 'fail', 'fail'],
  t2: ['pass', 'pass', 'fail', 'fail'],
  t3: ['pass', 'pass', 'fail', 'fail'],
  t4: ['pass', 'pass', 'fail', 'fail'],
  t5: ['pass', 'pass', 'pass', 'fail'], // new: flaky
  t6: ['pass', 'none', 'fail', 'pass'], // old seed 1: no score (ScoreMissing, infra): left out
};

describe('berth compare (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('compare');
  });
  after(async function () {
    await sb.destroy();
  });

  async function writeTask(t: string, v: readonly string[]): Promise<void> {
    const files = ['old-0', 'old-1', 'new-0', 'new-1'];
    for (const [i, f] of files.entries()) await sb.write(`tasks/${t}/${f}`, `${v[i]}\n`);
  }

  it('--by agent=old,new: every number, the lists, json and markdown; --fail-on regression exits 3 for a significant fall', async function () {
    for (const [t, v] of Object.entries(TASKS)) await writeTask(t, v);
    await sb.write('cmp.yaml', SET);
    const run = await sb.cli('reconcile', '--once', '--wait', '--max-running', '12', '--fail-on', 'none');
    expect(run.code, run.stderr).to.equal(0);
    expect(run.stdout.split('\n').at(-2)).to.equal('13 passed, 10 failed, 1 infrastructure (1 ScoreMissing: cmp-old-1-t6)');

    const text = await sb.cli('compare', 'set/cmp', '--by', 'agent=old,new');
    expect(text.code, text.stderr).to.equal(0);
    // 6 tasks fell (t6 on its one paired seed), none rose: p = 2 / 2^6. 11 paired samples, 11 passed with old, 1 with new.
    // The interval: compare-reference.py over the clusters (2,-2) x4, (2,-1), (1,-1).
    expect(text.stdout).to.equal(`set/cmp: agent=new against agent=old
  paired: 6 cells (task), 11 samples (seed; the interval resamples cells)
  pass rate: agent=old 100.0% (11/11), agent=new 9.1% (1/11)
  difference: -90.9 pp, 95% interval [-100.0, -72.7] pp
  McNemar exact p = 0.031: 6 cells worse, 0 better
  a regression: the pass rate fell, p < 0.05
  regressions (6):
    task=t1: 2/2 → 0/2 (cmp-new-0-t1, cmp-new-1-t1)
    task=t2: 2/2 → 0/2 (cmp-new-0-t2, cmp-new-1-t2)
    task=t3: 2/2 → 0/2 (cmp-new-0-t3, cmp-new-1-t3)
    task=t4: 2/2 → 0/2 (cmp-new-0-t4, cmp-new-1-t4)
    task=t5: 2/2 → 1/2 (cmp-new-0-t5, cmp-new-1-t5)
    task=t6: passed → failed (cmp-new-0-t6)
  flaky (1): samples that disagree
    task=t5: agent=old 2/2, agent=new 1/2
  left out (1): not passed or failed on both sides
    cmp-old-1-t6 infra (ScoreMissing), cmp-new-1-t6 passed
`);
    const failing = await sb.cli('compare', 'set/cmp', '--by', 'agent=old,new', '--fail-on', 'regression');
    expect([failing.code, failing.stdout]).to.deep.equal([3, text.stdout]);
    // BERTH_FAIL_ON (and berth.yaml's fail-on) is reconcile's and wait's: compare leaves its values out; on compare's command line, only its own
    const saved = process.env.BERTH_FAIL_ON;
    process.env.BERTH_FAIL_ON = 'infra';
    try {
      const envd = await sb.cli('compare', 'set/cmp', '--by', 'agent=old,new');
      expect([envd.code, envd.stdout]).to.deep.equal([0, text.stdout]);
    } finally {
      if (saved === undefined) delete process.env.BERTH_FAIL_ON;
      else process.env.BERTH_FAIL_ON = saved;
    }
    const wrong = await sb.cli('compare', 'set/cmp', '--by', 'agent=old,new', '--fail-on', 'infra');
    expect([wrong.code, wrong.stderr]).to.deep.equal([2, 'berth: --fail-on infra: compare takes regression or none\n']);
    // a stricter alpha than p: no regression, exit 0
    const strict = await sb.cli('compare', 'set/cmp', '--by', 'agent=old,new', '--fail-on', 'regression', '--alpha', '0.01');
    expect(strict.code, strict.stderr).to.equal(0);
    expect(strict.stdout).to.contain('  no significant change (p >= 0.01)\n');

    const json = await sb.cli('compare', 'cmp', '--by', 'agent=old,new', '-o', 'json');
    const r = JSON.parse(json.stdout) as CompareResult;
    expect(r).to.deep.include({ schemaVersion: 1, mode: 'by', baseline: null, alpha: 0.05, level: 0.95, resamples: 2000, regression: true });
    expect(r.seed).to.deep.equal(['0x9e3779b9', '0x243f6a88', '0xb7e15162', '0x6a09e667']);
    const c = r.sets[0]?.comparisons[0];
    expect(c).to.deep.include({
      before: 'old',
      after: 'new',
      axis: 'agent',
      pairedOn: ['task', 'seed'],
      samplesAxis: 'seed',
      cells: 6,
      samples: 11,
      passed: { before: 11, after: 1 },
      passRate: { before: 1, after: 1 / 11 },
      difference: -10 / 11,
      interval: { lower: -1, upper: -0.7272727272727273 },
      discordant: { worse: 6, better: 0 },
      pValue: 0.03125,
      regression: true,
      unpaired: [],
    });
    expect(c?.leftOut).to.deep.equal([
      { before: { name: 'cmp-old-1-t6', outcome: 'infra', reason: 'ScoreMissing' }, after: { name: 'cmp-new-1-t6', outcome: 'passed', reason: 'Completed' } },
    ]);

    const md = await sb.cli('compare', 'set/cmp', '--by', 'agent=old,new', '-o', 'markdown');
    expect(md.stdout).to.contain(
      '| set/cmp | agent=new against agent=old | 6 cells, 11 samples | agent=old 100.0% | agent=new 9.1% | -90.9 pp | [-100.0, -72.7] pp | 0.031 | **regression** |',
    );
    expect(md.stdout).to.contain('| task=t5 | 2/2 | 1/2 | cmp-new-0-t5, cmp-new-1-t5 |');

    // mistakes: an axis or value the set does not have (2), a set that is nowhere (1), --by and --baseline together (2)
    const value = await sb.cli('compare', 'set/cmp', '--by', 'agent=old,newer');
    expect([value.code, value.stderr]).to.deep.equal([2, 'berth: --by agent=old,newer: set cmp has no agent="newer" (its values: old, new)\n']);
    const axis = await sb.cli('compare', 'set/cmp', '--by', 'model=a,b');
    expect([axis.code, axis.stderr]).to.deep.equal([2, 'berth: --by model=a,b: set cmp has no axis "model" (its axes: agent, task, seed)\n']);
    const nowhere = await sb.cli('compare', 'set/nope', '--by', 'agent=old,new');
    expect([nowhere.code, nowhere.stderr]).to.deep.equal([1, `berth: no AttemptSet named "nope" in ${sb.specsDir}\n`]);
    const both = await sb.cli('compare', '--by', 'agent=old,new', '--baseline', 'x.json');
    expect([both.code, both.stderr]).to.deep.equal([2, 'berth: compare: give one of --by AXIS=A,B and --baseline FILE\n']);
  });

  it('--baseline: the summary before a change against the set after it; a change that could be noise never exits 3; the report shows it', async function () {
    const base = path.join(sb.dir, 'main.json');
    const summary = await sb.cli('summary', '-o', 'json');
    await fs.writeFile(base, summary.stdout);
    // t1: old seed 0 now fails (old t1 2/2 → 1/2), new passes both seeds (new t1 0/2 → 2/2); only t1's 4 children run again
    await writeTask('t1', ['fail', 'pass', 'pass', 'pass']);
    const run = await sb.cli('reconcile', '--once', '--wait', '--max-running', '12', '--fail-on', 'none');
    expect(run.code, run.stderr).to.equal(0);
    const runs = [...(await sb.store().loadAll()).values()].filter((s) => s.run === 2).map((s) => s.name);
    expect(runs.sort()).to.deep.equal(['cmp-new-0-t1', 'cmp-new-1-t1', 'cmp-old-0-t1', 'cmp-old-1-t1']);

    const text = await sb.cli('compare', '--baseline', base, '--fail-on', 'regression');
    expect(text.code, text.stderr).to.equal(0);
    // 23 paired samples (cmp-old-1-t6 is infra on both sides); 13 passed before, 14 now; one cell fell, one rose: p = 1.
    // The interval: compare-reference.py over (2,+2), (2,0) x5, (2,-1), (2,0) x4, (1,0) (cells in order of agent, task).
    expect(text.stdout).to.equal(`set/cmp: now against the baseline
  paired: 12 cells (agent, task), 23 samples (seed; the interval resamples cells)
  pass rate: baseline 56.5% (13/23), now 60.9% (14/23)
  difference: +4.3 pp, 95% interval [-12.5, +25.0] pp
  McNemar exact p = 1: 1 cell worse, 1 better
  no significant change (p >= 0.05)
  regressions (1):
    agent=old task=t1: 2/2 → 1/2 (cmp-old-0-t1, cmp-old-1-t1)
  fixes (1):
    agent=new task=t1: 0/2 → 2/2 (cmp-new-0-t1, cmp-new-1-t1)
  flaky (3): samples that disagree
    agent=new task=t5: baseline 1/2, now 1/2
    agent=new task=t6: baseline 1/2, now 1/2
    agent=old task=t1: baseline 2/2, now 1/2
  left out (1): not passed or failed on both sides
    cmp-old-1-t6: infra (ScoreMissing) → infra (ScoreMissing)
`);
    const md = await sb.cli('compare', 'set/cmp', '--baseline', base, '-o', 'markdown');
    expect(md.stdout).to.contain(
      '| set/cmp | now against the baseline | 12 cells, 23 samples | baseline 56.5% | now 60.9% | +4.3 pp | [-12.5, +25.0] pp | 1 |  |',
    );

    // a baseline that is no summary: exit 2, naming the file
    const bad = path.join(sb.dir, 'bad.json');
    await fs.writeFile(bad, '{"schemaVersion": 1, "sets": {}}');
    const refused = await sb.cli('compare', '--baseline', bad);
    expect([refused.code, refused.stderr]).to.deep.equal([2, `berth: --baseline ${bad}:1:30: sets: must be a list\n`]);

    // the report: the comparison first, its difference heatmap and regressions
    const out = path.join(sb.dir, 'report.html');
    const rep = await sb.cli('report', '--baseline', base, '-o', out);
    expect(rep.code, rep.stderr).to.equal(0);
    const html = await fs.readFile(out, 'utf8');
    expect(html.indexOf('id="comparison"')).to.be.greaterThan(0).and.lessThan(html.indexOf('id="summary"'));
    expect(html).to.contain('56.5% → 60.9%').and.contain('+4.3 pp').and.contain('cmp-old-0-t1');
  });
});

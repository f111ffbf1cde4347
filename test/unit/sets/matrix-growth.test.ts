/**
 * An AttemptSet's matrix through the whole command line on the fake engine: a 2 models x 2 tasks
 * x 2 seeds set runs with `reconcile --once --wait`; a new seed starts exactly the new children;
 * a change to what some children render replaces exactly those (and plan names them); a no-op
 * pass over the set costs what it costs over one attempt; summary reads their scores. Each
 * child's task is the fake's (FakeEngine.runTasks): it needs its fixture's task.txt and writes
 * its score as the template's command would. The real engine runs the template's command itself
 * in test/engine/sets.test.ts.
 */
import { expect } from 'chai';
import { LABELS, SCHEMA_VERSIONS, SET_LABEL } from '../../../src/constants';
import { changeCount } from '../../../src/plan/render';
import type { Summary } from '../../../src/sets/summary';
import type { AttemptStatus } from '../../../src/status/types';
import { FakeSandbox } from '../../support/fake-sandbox';

// m1 always scores 1; m2 scores 1 only with seed 0. The task's fixture is in the working dir.
const SET = (seeds: number) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: evals
  labels: {suite: sets-test}
spec:
  matrix:
    model: [m1, m2]
    task: {fromDir: ./tasks}
    seed: {range: [0, ${seeds}]}
  maxParallel: 4
  template:
    image: berth/busybox:local
    command: [sh, -c, 'cat task.txt >/dev/null && if [ \${{ matrix.model }} = m1 ] || [ \${{ matrix.seed }} = 0 ]; then echo 1; else echo 0; fi > /results/score.json']
    fixture: ./tasks/\${{ matrix.task }}
  score: {file: score.json, pass: 1}
`;

describe('AttemptSets: a matrix that grows and changes (fake engine)', function () {
  let sb: FakeSandbox;
  beforeEach(async function () {
    sb = await FakeSandbox.create('sets');
    // the template's command: task.txt must be in the working dir; the score by model and seed
    sb.fake.runTasks((c) => {
      const m = /_evals-(m[12])-(\d+)-t\d$/.exec(c.name);
      if (!m || c.labels[LABELS.component] !== 'main') return undefined;
      if (![...c.tree.keys()].some((k) => k.endsWith('/task.txt'))) return { code: 1, log: 'cat: task.txt: No such file or directory\n' };
      return { code: 0, files: { '/results/score.json': m[1] === 'm1' || m[2] === '0' ? '1\n' : '0\n' } };
    });
  });
  afterEach(async function () {
    await sb.dispose();
  });

  async function all(): Promise<Map<string, AttemptStatus>> {
    return sb.store().loadAll();
  }

  it('runs the matrix, grows by exactly the new cells, replaces exactly the changed children, and summarizes pass@k per model', async function () {
    await sb.write('tasks/t1/task.txt', 'one');
    await sb.write('tasks/t2/task.txt', 'two');
    await sb.write('evals.yaml', SET(2));

    const first = await sb.cli('reconcile', '--once', '--wait', '--max-running', '8');
    // m2 scores 0 with seed 1: a task failure (3)
    expect(first.code, first.stderr).to.equal(3);
    expect(first.stdout.split('\n').at(-2)).to.equal('6 passed, 2 failed, 0 infrastructure');
    const before = await all();
    expect([...before.keys()].sort()).to.deep.equal([
      'evals-m1-0-t1',
      'evals-m1-0-t2',
      'evals-m1-1-t1',
      'evals-m1-1-t2',
      'evals-m2-0-t1',
      'evals-m2-0-t2',
      'evals-m2-1-t1',
      'evals-m2-1-t2',
    ]);
    for (const s of before.values()) {
      expect(s.phase, s.name).to.equal('Succeeded');
      expect(s.score, s.name).to.equal(s.name.startsWith('evals-m1') || s.name.includes('-0-') ? 1 : 0);
    }
    const m1 = await sb.cli('get', '-l', 'model=m1', '-l', `${SET_LABEL}=evals`, '-o', 'json');
    expect((JSON.parse(m1.stdout) as { items: { name: string }[] }).items.map((i) => i.name)).to.have.length(4);

    const setRows = await sb.cli('get', '--sets', '-o', 'json');
    expect((JSON.parse(setRows.stdout) as { items: unknown[] }).items).to.deep.equal([
      {
        schemaVersion: SCHEMA_VERSIONS.get,
        apiVersion: 'berth.dev/v1',
        kind: 'AttemptSet',
        metadata: { name: 'evals', source: `${sb.specsDir}/evals.yaml:4`.replace(`${process.cwd()}/`, '') },
        status: {
          valid: true,
          children: 8,
          phases: { Pending: 0, Running: 0, Succeeded: 8, Failed: 0, TimedOut: 0, Invalid: 0, Blocked: 0 },
          // m2's seed 1 scored 0: Succeeded, and failed
          outcomes: { passed: 6, failed: 2, infra: 0, skipped: 0, unfinished: 0 },
        },
      },
    ]);

    // A third seed: plan names exactly the 4 new children; reconcile starts them and touches nothing else.
    await sb.write('evals.yaml', SET(3));
    const planned = await sb.cli('plan', '-o', 'json');
    const sets = (JSON.parse(planned.stdout) as { sets: Record<string, { added: string[]; replaced: string[] }> }).sets;
    expect(sets.evals?.added.sort()).to.deep.equal(['evals-m1-2-t1', 'evals-m1-2-t2', 'evals-m2-2-t1', 'evals-m2-2-t2']);
    expect(sets.evals?.replaced).to.deep.equal([]);
    const grown = await sb.cli('reconcile', '--once', '--wait', '--max-running', '8', '--fail-on', 'infra');
    expect(grown.code, grown.stderr).to.equal(0);
    const after = await all();
    expect(after.size).to.equal(12);
    for (const [name, s] of before) {
      expect(after.get(name), name).to.deep.include({ run: 1, containerId: s.containerId, startedAt: s.startedAt, updatedAt: s.updatedAt });
    }

    // What task t2's children render changes (their fixture): exactly those 6 are replaced, and plan says which.
    await sb.write('tasks/t2/task.txt', 'two, edited');
    const plan2 = await sb.cli('plan');
    expect(plan2.stdout).to.contain(
      'AttemptSet evals: 6 children replaced (spec changed): evals-m1-0-t2, evals-m1-1-t2, evals-m1-2-t2, evals-m2-0-t2, evals-m2-1-t2, evals-m2-2-t2',
    );
    const replaced = await sb.cli('reconcile', '--once', '--wait', '--max-running', '8', '--fail-on', 'infra');
    expect(replaced.code, replaced.stderr).to.equal(0);
    const last = await all();
    for (const [name, s] of last) {
      expect(s.run, name).to.equal(name.endsWith('-t2') ? 2 : 1);
      expect(s.phase, name).to.equal('Succeeded');
    }

    // A no-op pass over the set costs what it costs over one attempt: the 4 label-filtered lists and the boot look.
    const noop = await sb.pass();
    expect(changeCount(noop.plan)).to.equal(0);
    expect(sb.calls.mutating).to.equal(0);
    expect(sb.calls.snapshot()).to.deep.equal({ 'containers.list': 1, 'engine.boot': 1, 'images.list': 1, 'networks.list': 1, 'volumes.list': 1 });

    // m1 passes every seed; m2 only seed 0: per (model, task) cell n=3, c=1 → pass@1 1/3, pass@2 2/3, pass@3 1.
    const out = await sb.cli('summary', '-o', 'json');
    expect(out.code, out.stderr).to.equal(0);
    const summary = JSON.parse(out.stdout) as Summary;
    expect(summary.schemaVersion).to.equal(1);
    const set = summary.sets[0];
    expect(set).to.include({ name: 'evals', n: 12, passed: 8, failed: 4, infra: 0, samplesAxis: 'seed' });
    const model = (v: string) => set?.byAxis.model?.find((x) => x.value === v);
    expect(model('m1')?.passAtK).to.deep.equal({ '1': 1, '2': 1, '3': 1 });
    expect(model('m2')?.passAtK['1']).to.be.closeTo(1 / 3, 1e-9);
    expect(model('m2')?.passAtK['2']).to.be.closeTo(2 / 3, 1e-9);
    expect(model('m2')?.passAtK['3']).to.equal(1);
    const junit = await sb.cli('summary', '-o', 'junit');
    expect(junit.stdout).to.match(/<testsuite name="evals" tests="12" failures="4" errors="0"/);
  });
});

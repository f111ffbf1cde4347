/**
 * Graded fleets at scale on the real engine (issue 56). A run that timed out fails whatever its
 * grader says, in `summary`, `get`, JUnit, the report and the exit code, the grade shown beside
 * it. Graders take slots: a graded fleet never runs more runs and graders at once than
 * --max-running, nor more of a set's than its maxParallel (it did before graders took slots); a
 * `regrade --all` of 100 cells, in one command, never runs more graders at once than
 * --max-running (the engine's own start and finish times say so) and ends with every grade
 * recorded, none GradeTimedOut. Its graders sleep half a second (long enough to overlap within
 * the slots); one cell runs for real, the 99 others are recorded as its finished runs are.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { Summary } from '../../src/sets/summary';
import { loadSpecs } from '../../src/spec/loader';
import type { AttemptStatus } from '../../src/status/types';
import { requireEngine } from '../support/engine';
import { Sandbox } from '../support/sandbox';

/** The most intervals open at once (an end at the instant of a start counts first: the slot was freed). */
function peak(spans: readonly { from: number; to: number }[]): number {
  const edges = spans.flatMap((s) => [
    { t: s.from, d: 1 },
    { t: s.to, d: -1 },
  ]);
  edges.sort((a, b) => a.t - b.t || a.d - b.d);
  let now = 0;
  let most = 0;
  for (const e of edges) most = Math.max(most, (now += e.d));
  return most;
}

describe('graded fleets at scale (real engine)', function () {
  this.timeout(300_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('graded');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('a run that timed out fails though its grader passes: summary, get, JUnit, the report and the exit code; the grade shown beside it', async function () {
    await sb.write(
      'gt.yaml',
      `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: gt}
spec:
  matrix:
    x: [hang, ok]
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo \${{ matrix.x }} > out.txt; if [ \${{ matrix.x }} = hang ]; then sleep 60; fi']
    deadlineSeconds: 2
    grade:
      command: [sh, -c, 'test -f out.txt']
      deadlineSeconds: 60
`,
    );
    const r = await sb.cli('reconcile', '--once', '--wait', '--timeout', '120');
    // 3: a task failed (the timed-out run), whatever its grade
    expect(r.code, r.stdout + r.stderr).to.equal(3);
    expect(r.stdout).to.contain('1 passed, 1 failed, 0 infrastructure');
    const hang = (await sb.status('gt-hang')) as AttemptStatus;
    expect([hang.phase, hang.reason]).to.deep.equal(['TimedOut', 'DeadlineExceeded']);
    expect(hang.grades?.map((g) => [g.k, g.state, g.passed])).to.deep.equal([[1, 'graded', true]]);

    const s = (JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary).sets[0];
    const byName = new Map(s?.children.map((c) => [c.name, c]));
    expect(byName.get('gt-hang')).to.deep.include({ outcome: 'failed', phase: 'TimedOut' });
    expect(byName.get('gt-hang')?.grade).to.deep.equal({ k: 1, state: 'graded', passed: true, reason: null });
    expect(byName.get('gt-ok')).to.deep.include({ outcome: 'passed' });
    expect([s?.passed, s?.failed, s?.infra]).to.deep.equal([1, 1, 0]);

    const get = JSON.parse((await sb.cli('get', 'gt-hang', '-o', 'json')).stdout) as { status: { result: { outcome: string } } };
    expect(get.status.result.outcome).to.equal('failed');
    const table = (await sb.cli('get')).stdout.split('\n').find((l) => l.startsWith('gt-hang'));
    expect(table).to.match(/failed\s+grade-1: pass/);

    const junit = (await sb.cli('summary', '-o', 'junit')).stdout;
    expect(junit).to.match(/<testcase [^>]*name="gt-hang[ "][^>]*>\s*<failure/);

    const html = (await sb.cli('report', '-o', '-')).stdout;
    const data = JSON.parse(/<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '{}') as {
      attempts: { name: string; outcome: string; grade: string | null }[];
    };
    expect(data.attempts.find((a) => a.name === 'gt-hang')).to.include({ outcome: 'failed', grade: 'grade-1: pass' });

    const w = await sb.cli('wait', 'set/gt', '--timeout', '10s');
    expect(w.code, w.stderr).to.equal(3);
  });

  it("a graded fleet: runs and graders together never more than --max-running, nor than a set's maxParallel (engine start and finish times)", async function () {
    const set = (name: string, extra: string) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: ${name}}
spec:
${extra}  matrix:
    x: {range: [0, 4]}
  template:
    image: berth/busybox:local
    command: [sh, -c, 'sleep 1; echo \${{ matrix.x }} > out.txt']
    grade:
      command: [sh, -c, 'sleep 1; test -f out.txt']
      deadlineSeconds: 60
`;
    await sb.write('one.yaml', set('one', '  maxParallel: 1\n'));
    await sb.write('all.yaml', set('all', ''));
    const slots = 3;
    const r = await sb.cli('reconcile', '--once', '--wait', '--timeout', '240', '--max-running', String(slots));
    expect(r.code, r.stdout + r.stderr).to.equal(0);
    const recs = [...(await sb.store().loadAll()).values()].filter((x) => /^(one|all)-/.test(x.name));
    expect(recs).to.have.length(8);
    const spans: { set: string; what: string; from: number; to: number }[] = [];
    for (const rec of recs) {
      expect([rec.name, rec.phase, rec.grades?.map((g) => [g.state, g.passed])]).to.deep.equal([rec.name, 'Succeeded', [['graded', true]]]);
      const set = rec.name.split('-')[0] as string;
      const g = rec.grades?.[0];
      spans.push({ set, what: 'run', from: Date.parse(rec.startedAt as string), to: Date.parse(rec.finishedAt as string) });
      spans.push({ set, what: 'grader', from: Date.parse(g?.startedAt as string), to: Date.parse(g?.finishedAt as string) });
    }
    expect(
      spans.every((x) => Number.isFinite(x.from) && Number.isFinite(x.to) && x.from <= x.to),
      JSON.stringify(spans),
    ).to.equal(true);
    const most = peak(spans);
    expect(most, JSON.stringify(spans)).to.be.at.most(slots);
    expect(most, 'the fleet used the slots').to.be.at.least(2);
    expect(peak(spans.filter((x) => x.set === 'one')), "set one's maxParallel").to.equal(1);
  });

  it('regrade --all of 100 cells, one command: never more graders at once than --max-running, every grade recorded, none GradeTimedOut', async function () {
    const set = (n: number) => `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: rg}
spec:
  matrix:
    x: {range: [0, ${n}]}
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo \${{ matrix.x }} > out.txt']
    grade:
      command: [sleep, '0.5']
      deadlineSeconds: 60
`;
    // One cell runs for real and is graded; the other 99 are its finished runs, recorded as its
    // record is (a fleet of 100 real runs would take the engine a minute here): each is a finished
    // run of its own spec hash with a grade, as the regrade finds a fleet that ran.
    await sb.write('rg.yaml', set(1));
    const first = await sb.cli('reconcile', '--once', '--wait', '--timeout', '120');
    expect(first.code, first.stderr).to.equal(0);
    const real = (await sb.status('rg-0')) as AttemptStatus;
    expect(real.grades?.map((g) => g.state)).to.deep.equal(['graded']);
    await sb.write('rg.yaml', set(100));
    const load = await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot });
    const store = sb.store();
    for (const child of load.specs.filter((x) => x.spec.name !== 'rg-0')) {
      const name = child.spec.name;
      const runDir = path.join(sb.resultsRoot, name, 'run-1');
      await fs.mkdir(path.join(runDir, 'results'), { recursive: true });
      const { containerId: _c, ...rest } = real;
      await store.put({
        ...rest,
        name,
        specHash: child.hash,
        resultsDir: path.join(runDir, 'results'),
        grades: (real.grades ?? []).map((g) => ({ ...g, resultsDir: path.join(runDir, 'grade-1', 'results') })),
      });
    }

    const slots = 4;
    const r = await sb.cli('regrade', '--all', '--max-running', String(slots));
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.contain('100 attempts regraded');
    const recs = [...(await sb.store().loadAll()).values()].filter((x) => x.name.startsWith('rg-'));
    expect(recs).to.have.length(100);
    const seconds = recs.map((x) => (x.grades ?? []).find((g) => g.k === 2));
    // every grade recorded by the one command, none timed out or failed
    expect(seconds.map((g) => g?.state ?? 'missing').filter((st) => st !== 'graded')).to.deep.equal([]);
    expect(seconds.every((g) => g?.passed === true)).to.equal(true);
    // the engine's start and finish of each grader: never more than the slots at once
    const spans = seconds.map((g) => ({ from: Date.parse(g?.startedAt as string), to: Date.parse(g?.finishedAt as string) }));
    const most = peak(spans);
    expect(most).to.be.at.most(slots);
    expect(most, 'the graders used the slots').to.be.at.least(2);
    expect(r.stdout.split('\n').filter((l) => / regrade: grade 2 of run 1 graded \(pass\)$/.test(l))).to.have.length(100);
    const s = (JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary).sets[0];
    expect([s?.passed, s?.infra]).to.deep.equal([100, 0]);
    expect(s?.children.every((c) => c.grade?.k === 2)).to.equal(true);
  });
});

/**
 * spec.grade on the real engine: a grader the attempt cannot touch. The attempt's own score file,
 * its edits to protected tests, the tools it replaced in its own container and the verdict it
 * prints are all ignored: the grader runs in a fresh container from the fixture and the
 * attempt's exported changes. A changed grader grades the finished runs again without starting
 * any attempt container, keeping the earlier grade; a grader without its score is GradeFailed,
 * one past its deadline GradeTimedOut.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { COMPONENTS } from '../../src/constants';
import type { Summary } from '../../src/sets/summary';
import type { AttemptStatus, GradeRecord } from '../../src/status/types';
import { requireEngine } from '../support/engine';
import { containerEvents } from '../support/events';
import { Sandbox } from '../support/sandbox';

/** A set of one child: its fixture (solution.txt, tests/check.sh) and a hidden test the grader alone gets. */
function gradedSet(name: string, attempt: string, grade: string, score = true): string {
  return `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: ${name}
spec:
  matrix:
    seed: ['0']
  template:
    image: berth/busybox:local
    command: [sh, -c, ${JSON.stringify(attempt)}]
    fixture: ./task
    grade:
${grade
  .split('\n')
  .map((l) => `      ${l}`)
  .join('\n')}
${score ? '  score: {file: score.json, pass: 1}' : ''}
`;
}

// The hidden test (grade.fixture's folder lands in workingDir, as spec.fixture's does): the
// solution must say "right"; it writes the score the grader alone decides.
const HIDDEN = `sh tests/hidden/test.sh`;
const HIDDEN_TEST = `if grep -q right solution.txt && sh tests/check.sh; then echo 1 > /results/score.json; else echo 0 > /results/score.json; fi\n`;

describe('spec.grade: a grader the attempt cannot touch (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('grade');
    await sb.write('task/solution.txt', 'wrong\n');
    await sb.write('task/tests/check.sh', 'grep -q right solution.txt\n');
    await sb.write('hidden/tests/hidden/test.sh', HIDDEN_TEST);
  });
  afterEach(async function () {
    await sb.destroy();
  });

  const child = (set: string) => `${set}-0`;
  const grades = async (name: string): Promise<GradeRecord[]> => ((await sb.status(name)) as AttemptStatus).grades ?? [];
  const summary = async (): Promise<Summary['sets']> => (JSON.parse((await sb.cli('summary', '-o', 'json')).stdout) as Summary).sets;

  it("ignores the attempt's own score, its fake verdict and the tools it replaced: the grader's verdict wins", async function () {
    // The attempt writes a passing score, prints a grader's verdict, replaces grep and cat in its
    // own container with ones that always succeed, and leaves the solution wrong.
    const attempt = [
      'echo 1 > /results/score.json',
      'echo "grade: PASS score=1"',
      "printf '#!/bin/sh\\nexit 0\\n' > /bin/grep.fake && chmod +x /bin/grep.fake && rm -f /bin/grep && mv /bin/grep.fake /bin/grep",
      'echo still wrong > solution.txt',
    ].join('; ');
    await sb.write('g.yaml', gradedSet('g', attempt, `command: [sh, -c, '${HIDDEN}']\nfixture: ./hidden`));
    const r = await sb.cli('reconcile', '--once', '--wait');
    const st = (await sb.status(child('g'))) as AttemptStatus;
    expect(st.phase, r.stderr).to.equal('Succeeded');
    const [g, ...more] = st.grades ?? [];
    expect(more).to.have.length(0);
    expect(g, JSON.stringify(g)).to.include({ k: 1, run: 1, state: 'graded', score: 0, passed: false });
    expect(g?.notes?.join('\n')).to.match(/attempt's own score\.json is ignored/);
    const [s] = await summary();
    expect(s?.children[0]).to.include({ outcome: 'failed', score: 0 });
    expect(s?.children[0]?.grade).to.deep.equal({ k: 1, state: 'graded', passed: false, reason: null });
    // the grade's own folder: results, logs and status beside the run's
    const runDir = path.dirname(st.resultsDir as string);
    expect((await fs.readFile(path.join(runDir, 'grade-1', 'results', 'score.json'), 'utf8')).trim()).to.equal('0');
    const gs = JSON.parse(await fs.readFile(path.join(runDir, 'grade-1', 'status.json'), 'utf8')) as { grade: GradeRecord };
    expect(gs.grade.state).to.equal('graded');
    // the grader's container is gone once its grade is recorded
    const left = await sb.engine.containers.list([`dev.berth.instance=${sb.instance}`, `dev.berth.component=${COMPONENTS.grader}`]);
    expect(left).to.have.length(0);
  });

  it('restores the protected tests before grading', async function () {
    // The attempt makes the visible test always pass and leaves the solution wrong.
    const attempt = "echo 'exit 0' > tests/check.sh";
    await sb.write('p.yaml', gradedSet('p', attempt, `command: [sh, -c, 'sh tests/check.sh']\nprotect: ['tests/**']`, false));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.not.equal(5);
    const [g] = await grades(child('p'));
    expect(g).to.include({ state: 'graded', passed: false, exitCode: 1 });
  });

  it('grades again when the grader changes, without starting an attempt container, and keeps the earlier grade', async function () {
    await sb.write('r.yaml', gradedSet('r', 'true', `command: [sh, -c, 'exit 1']`, false));
    const first = await sb.cli('reconcile', '--once', '--wait');
    expect((await grades(child('r'))).map((g) => [g.k, g.passed])).to.deep.equal([[1, false]], first.stderr);
    const t0 = Date.now();
    const since = Math.floor(t0 / 1000) - 1;
    await sb.write('r.yaml', gradedSet('r', 'true', `command: [sh, -c, 'exit 0']`, false));
    const again = await sb.cli('reconcile', '--once', '--wait');
    expect(again.code, again.stderr).to.equal(0);
    const gs = await grades(child('r'));
    expect(gs.map((g) => [g.k, g.run, g.state, g.passed])).to.deep.equal([
      [1, 1, 'graded', false],
      [2, 1, 'graded', true],
    ]);
    expect(gs[0]?.gradeHash).to.not.equal(gs[1]?.gradeHash);
    const starts = (await containerEvents(sb.instance, since, 'start')).filter((e) => e.time >= t0);
    expect(starts.filter((e) => e.component === COMPONENTS.main)).to.have.length(0);
    expect(starts.filter((e) => e.component === COMPONENTS.grader)).to.have.length(1);
    const [s] = await summary();
    expect(s?.children[0]?.grade?.k).to.equal(2);
    expect(((await sb.status(child('r'))) as AttemptStatus).run).to.equal(1);
  });

  it('berth regrade grades a finished run again on demand', async function () {
    await sb.write('d.yaml', gradedSet('d', 'true', `command: [sh, -c, 'exit 0']`, false));
    await sb.cli('reconcile', '--once', '--wait');
    const r = await sb.cli('regrade', child('d'));
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/grade 2 of run 1 grading/);
    const w = await sb.cli('reconcile', '--once', '--wait');
    expect(w.code, w.stderr).to.equal(0);
    const gs = await grades(child('d'));
    expect(gs.map((g) => [g.k, g.state])).to.deep.equal([
      [1, 'graded'],
      [2, 'graded'],
    ]);
  });

  it('a grader that exits without the score its set expects is GradeFailed: the score missing, never 0', async function () {
    await sb.write('f.yaml', gradedSet('f', 'echo 1 > /results/score.json', `command: [sh, -c, 'exit 3']`));
    const r = await sb.cli('reconcile', '--once', '--wait');
    const [g] = await grades(child('f'));
    expect(g, r.stderr).to.include({ state: 'failed', reason: 'GradeFailed', exitCode: 3 });
    expect(g?.score).to.equal(undefined);
    const [s] = await summary();
    expect(s?.children[0]).to.include({ outcome: 'infra', reason: 'GradeFailed', score: null });
    expect(((await sb.status(child('f'))) as AttemptStatus).phase).to.equal('Succeeded');
  });

  it('a grader past its deadline is stopped: GradeTimedOut', async function () {
    await sb.write('t.yaml', gradedSet('t', 'true', `command: [sh, -c, 'sleep 60']\ndeadlineSeconds: 1`));
    const r = await sb.cli('reconcile', '--once', '--wait');
    const [g] = await grades(child('t'));
    expect(g, r.stderr).to.include({ state: 'timedOut', reason: 'GradeTimedOut' });
    const [s] = await summary();
    expect(s?.children[0]).to.include({ outcome: 'infra', reason: 'GradeTimedOut' });
  });
});

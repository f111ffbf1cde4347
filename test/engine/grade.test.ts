/**
 * spec.grade on the real engine: a grader the attempt cannot touch. The attempt's own score file,
 * its edits to protected tests, the tools it replaced in its own container and the verdict it
 * prints are all ignored: the grader runs in a fresh container from the fixture and the
 * attempt's exported changes. A changed grader grades the finished runs again without starting
 * any attempt container, keeping the earlier grade; a grader without its score is GradeFailed,
 * one past its deadline GradeTimedOut. An AttemptSet of coding tasks runs end to end (its changes
 * come home, git apply reproduces them, pass@k is the grader's), and a berth SIGKILLed while its
 * grader runs ends with exactly one grade per run and no grader left.
 */
import { expect } from 'chai';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { COMPONENTS } from '../../src/constants';
import type { Summary } from '../../src/sets/summary';
import type { AttemptStatus, GradeRecord } from '../../src/status/types';
import { docker, requireEngine } from '../support/engine';
import { containerEvents } from '../support/events';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

/** The built CLI in its own process with the sandbox's folders (its log on stderr, as a user sees it). */
function builtCli(sb: Sandbox, ...args: string[]): { code: number | null; stdout: string; stderr: string } {
  const g = sb.globalArgs().filter((a, i, all) => a !== '--log-level' && all[i - 1] !== '--log-level');
  const r = spawnSync(process.execPath, [BIN, ...args, ...g], { encoding: 'utf8', timeout: 120_000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

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

const sha = (b: string | Buffer) => createHash('sha256').update(b).digest('hex');
const exists = (file: string) =>
  fs.lstat(file).then(
    () => true,
    () => false,
  );

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

  it("an AttemptSet of coding tasks end to end: the changes come home, the hidden tests grade them, pass@k is the grader's", async function () {
    // Two tasks (a solution that must print 42, resp. 43), two seeds: seed 0 fixes the solution
    // (and exits 1: its own exit code no longer decides), seed 1 breaks it (and exits 0). Each
    // attempt records its whole workspace (sha256 of every file) and what it saw of the tree.
    for (const [t, answer] of [
      ['t1', 42],
      ['t2', 43],
    ] as const) {
      await sb.write(`tasks/${t}/solution.sh`, 'echo 41\n');
      await sb.write(`tasks/${t}/README.md`, `task ${t}\n`);
      await sb.write(`tasks/${t}/tests/visible.sh`, '[ "$(sh solution.sh)" -gt 0 ]\n');
      await sb.write(`hidden/${t}/tests/hidden/test.sh`, `[ "$(sh solution.sh)" = ${answer} ]\n`);
    }
    const fix = [
      'case ${{ matrix.task }} in t1) a=42;; t2) a=43;; esac',
      "printf 'echo %s\\n' $a > solution.sh",
      'echo fixed >> README.md',
      'echo notes > notes.txt',
      'mkdir -p node_modules/m && echo x > node_modules/m/i.js',
      'echo OPENAI_API_KEY=sk-live-gradeviews > .env',
      'ln -s /etc/passwd pw',
    ].join(' && ');
    const brk = ['rm solution.sh', "echo 'echo oops' > other.sh"].join(' && ');
    const attempt = [
      'ls -R . > /results/seen.txt',
      `if [ \${{ matrix.seed }} = 0 ]; then ${fix}; code=1; else ${brk}; code=0; fi`,
      'find . -type f | sort | xargs sha256sum > /results/workspace.txt',
      'exit $code',
    ].join('; ');
    await sb.write(
      'e2e.yaml',
      `apiVersion: berth.dev/v1
kind: AttemptSet
metadata:
  name: e2e
spec:
  matrix:
    task: [t1, t2]
    seed: ['0', '1']
  template:
    image: berth/busybox:local
    command: [sh, -c, ${JSON.stringify(attempt)}]
    fixture: ./tasks/\${{ matrix.task }}
    grade:
      command: [sh, -c, 'sh tests/hidden/test.sh']
      fixture: ./hidden/\${{ matrix.task }}
`,
    );
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stdout + r.stderr).to.equal(3);
    const [s] = await summary();
    const kids = new Map((s?.children ?? []).map((c) => [`${c.coords.task}/${c.coords.seed}`, c]));
    expect([...kids.keys()].sort()).to.deep.equal(['t1/0', 't1/1', 't2/0', 't2/1']);
    for (const t of ['t1', 't2']) {
      const fixed = kids.get(`${t}/0`);
      const broke = kids.get(`${t}/1`);
      // the grader's verdict, against the attempt's own exit code
      expect(fixed, JSON.stringify(fixed)).to.include({ outcome: 'passed', phase: 'Failed' });
      expect(fixed?.grade).to.deep.equal({ k: 1, state: 'graded', passed: true, reason: null });
      expect(broke, JSON.stringify(broke)).to.include({ outcome: 'failed', phase: 'Succeeded' });
      expect(broke?.grade).to.deep.equal({ k: 1, state: 'graded', passed: false, reason: null });
    }
    // pass@k from the grader: each task one of two
    expect(s).to.include({ passed: 2, failed: 2, infra: 0 });
    expect(s?.cells.map((c) => [c.coords.task, c.passAtK])).to.deep.equal([
      ['t1', { 1: 0.5, 2: 1 }],
      ['t2', { 1: 0.5, 2: 1 }],
    ]);
    expect(s?.passAtK).to.deep.equal({ 1: 0.5, 2: 1 });

    // Each child's changes.patch on a clean copy of its fixture reproduces its workspace, less
    // the excluded folder, the secret and the link that leaves the tree.
    const listing = async (dir: string): Promise<string[]> => {
      const out: string[] = [];
      for (const f of (await fs.readdir(dir, { recursive: true })).sort()) {
        const at = path.join(dir, f);
        if ((await fs.lstat(at)).isFile()) out.push(`${sha(await fs.readFile(at))}  ./${f}`);
      }
      return out.sort();
    };
    for (const [key, c] of kids) {
      const [t] = key.split('/') as [string];
      const run = path.dirname(c.resultsDir as string);
      const seen = await fs.readFile(path.join(c.resultsDir as string, 'seen.txt'), 'utf8');
      expect(seen, `${key}: the hidden tests are the grader's only`).to.not.include('hidden');
      const workspace = (await fs.readFile(path.join(c.resultsDir as string, 'workspace.txt'), 'utf8'))
        .split('\n')
        .filter((l) => l && !/ \.\/(node_modules\/|\.env$)/.test(l))
        .sort();
      const copy = path.join(path.dirname(sb.specsDir), `copy-${t}-${c.coords.seed}`);
      await fs.cp(path.join(sb.specsDir, 'tasks', t), copy, { recursive: true });
      execFileSync('git', ['apply', path.join(run, 'workspace', 'changes.patch')], { cwd: copy });
      expect(await listing(copy), key).to.deep.equal(workspace);
      for (const absent of ['node_modules', '.env', 'pw']) expect(await exists(path.join(copy, absent)), `${key}: ${absent}`).to.equal(false);
      const patch = await fs.readFile(path.join(run, 'workspace', 'changes.patch'), 'utf8');
      expect(patch).to.not.include('sk-live');
      expect(await exists(path.join(run, 'grade-1', 'logs.txt')), `${key}: the grader's log`).to.equal(true);
    }
    expect(await listing(path.join(path.dirname(sb.specsDir), 'copy-t1-0'))).to.include(`${sha('echo 42\n')}  ./solution.sh`);
    expect(await exists(path.join(path.dirname(sb.specsDir), 'copy-t2-1', 'solution.sh'))).to.equal(false);
  });

  it("runs the attempt's edited tests without protect, and restores the fixture's with protect: ['tests/**']", async function () {
    // The attempt makes the visible test always pass and leaves the solution wrong. Without
    // protect its edit comes home and the grader runs it (a pass: the export really reached the
    // grader); with protect the fixture's test is restored and the wrong solution fails.
    const attempt = "echo 'exit 0' > tests/check.sh";
    await sb.write('u.yaml', gradedSet('u', attempt, `command: [sh, -c, 'sh tests/check.sh']`, false));
    await sb.write('p.yaml', gradedSet('p', attempt, `command: [sh, -c, 'sh tests/check.sh']\nprotect: ['tests/**']`, false));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.not.equal(5);
    const [u] = await grades(child('u'));
    expect(u, JSON.stringify(u)).to.include({ state: 'graded', passed: true, exitCode: 0, workspace: 'exported' });
    const [g] = await grades(child('p'));
    expect(g, JSON.stringify(g)).to.include({ state: 'graded', passed: false, exitCode: 1, workspace: 'exported' });
    expect(g?.notes?.join('\n')).to.match(/tests\/check\.sh: protected/);
  });

  it('grades again when the grader changes, without starting an attempt container, and keeps the earlier grade; grading is seen in the log, events, logs --grade, wait and annotations', async function () {
    await sb.write('r.yaml', gradedSet('r', 'true', `command: [sh, -c, 'echo first grader; exit 1']`, false));
    const first = builtCli(sb, 'reconcile', '--once', '--wait', '--log-level', 'info');
    expect((await grades(child('r'))).map((g) => [g.k, g.passed])).to.deep.equal([[1, false]], first.stderr);
    // the log says the run is graded and how, never only that a container was removed
    expect(first.stderr).to.match(/r-0: grading run 1 \(grade 1\)/);
    expect(first.stderr).to.match(/r-0: graded fail \(exit 1\)/);
    expect(first.stderr).not.to.match(/r-0: removed 1 container$/m);
    // wait names the outcome, not the phase; inside GitHub Actions each attempt that did not pass is annotated
    process.env.GITHUB_ACTIONS = 'true';
    let w1;
    try {
      w1 = await sb.cli('wait', child('r'));
    } finally {
      delete process.env.GITHUB_ACTIONS;
    }
    expect(w1.code).to.equal(3);
    expect(w1.stdout).to.include('attempt/r-0 condition met (finished: failed (grade-1: exit 1))\n');
    expect(w1.stderr).to.match(/^::error file=\S*r\.yaml,line=\d+,title=berth%3A attempt r-0 failed::r-0 failed \(grade-1: exit 1\)$/m);
    expect((await sb.cli('logs', child('r'), '--grade')).stdout).to.equal('first grader\n');
    const t0 = Date.now();
    const since = Math.floor(t0 / 1000) - 1;
    await sb.write('r.yaml', gradedSet('r', 'true', `command: [sh, -c, 'echo second grader; exit 0']`, false));
    const again = builtCli(sb, 'reconcile', '--once', '--wait', '--log-level', 'info');
    expect(again.code, again.stderr).to.equal(0);
    expect(again.stderr).to.match(/regrading 1 run: spec\.grade changed/);
    expect(again.stderr).to.match(/r-0: regrading run 1 \(grade 2\): spec\.grade changed/);
    expect(again.stderr).to.match(/r-0: graded pass \(exit 0\) \(grade 2 of run 1\)/);
    expect((await sb.cli('logs', child('r'), '--grade')).stdout).to.equal('second grader\n');
    expect((await sb.cli('logs', child('r'), '--grade', '1')).stdout).to.equal('first grader\n');
    const ev = (await sb.cli('events', child('r'))).stdout;
    expect(ev).to.match(/Warning +Graded +attempt\/r-0 +run 1 graded by grade-1: fail \(exit 1\)/);
    expect(ev).to.match(/Normal +Regraded +attempt\/r-0 +run 1 regraded by grade-2: pass \(exit 0\)/);
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
    expect(s?.grades).to.deep.equal({ 2: 1 });
    expect(((await sb.status(child('r'))) as AttemptStatus).run).to.equal(1);
    // the views say which grade stands: get's GRADE column, describe's grades of the run, summary's line
    const get = await sb.cli('get', child('r'));
    // (a set's child: its CELL after it)
    expect(get.stdout.split('\n')[0]).to.match(/ GRADE +CELL$/);
    expect(get.stdout.split('\n')[1]).to.match(/ grade-2: pass +seed=0$/);
    const wide = await sb.cli('get', child('r'), '-o', 'wide');
    expect(wide.stdout.split('\n')[0]).to.match(/ GRADER$/);
    const d = (await sb.cli('describe', child('r'))).stdout;
    expect(d).to.match(/Grade: +the attempt's image \["sh","-c","echo second grader; exit 0"\]/);
    expect(d).to.match(
      /Grades \(run 1; the latest decides\):\n +K +STATE +VERDICT +REASON +GRADER IMAGE +WHEN\n +1 +graded +fail +exit 1 +\S+ +\S+\n +2 +graded +pass +exit 0 +\S+ +\S+/,
    );
    expect(d).to.include(path.join(sb.resultsRoot, child('r'), 'run-1', 'grade-2'));
    expect((await sb.cli('summary')).stdout).to.include('graded: 1 of 1 by their latest grade (grade-2: 1)');
  });

  it('berth regrade grades a finished run again on demand, in one command; --no-wait leaves the grade to the next reconcile', async function () {
    await sb.write('d.yaml', gradedSet('d', 'true', `command: [sh, -c, 'exit 0']`, false));
    await sb.cli('reconcile', '--once', '--wait');
    const r = await sb.cli('regrade', child('d'));
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal(`attempt/${child('d')} regrade: grade 2 of run 1 graded (pass)\n`);
    expect((await grades(child('d'))).map((g) => [g.k, g.state])).to.deep.equal([
      [1, 'graded'],
      [2, 'graded'],
    ]);
    expect(await sb.engine.containers.list([`dev.berth.instance=${sb.instance}`, `dev.berth.component=${COMPONENTS.grader}`])).to.have.length(0);
    const n = await sb.cli('regrade', '--no-wait', child('d'));
    expect(n.code, n.stderr).to.equal(0);
    expect(n.stdout).to.match(/grade 3 of run 1 grading/);
    const w = await sb.cli('reconcile', '--once', '--wait');
    expect(w.code, w.stderr).to.equal(0);
    expect((await grades(child('d'))).map((g) => [g.k, g.state])).to.deep.equal([
      [1, 'graded'],
      [2, 'graded'],
      [3, 'graded'],
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

  // Crash safety of grading: the grade is recorded `grading` before its container is made, so a
  // berth killed while the grader runs resumes that very grade (exactly one grade per run).
  describe('berth SIGKILLed while the grader runs, then run again', function () {
    // The grader says it started, then waits for a file the test puts into its results folder
    // (the one bind it has), so berth is killed while it certainly runs.
    const WAITING = `touch /results/started; while [ ! -f /results/go ]; do sleep 0.1; done; ${HIDDEN}`;
    const gradeDir = (name: string, k = 1) => path.join(sb.resultsRoot, child(name), 'run-1', `grade-${k}`);
    const graders = () => sb.engine.containers.list([`dev.berth.instance=${sb.instance}`, `dev.berth.component=${COMPONENTS.grader}`]);

    /** berth (the built CLI) reconciling until the grader runs and says so, then SIGKILLed. */
    async function killWhileGrading(name: string): Promise<void> {
      const proc = spawn(process.execPath, [BIN, 'reconcile', '--once', '--wait', ...sb.globalArgs()], { stdio: ['ignore', 'ignore', 'pipe'] });
      let err = '';
      proc.stderr.on('data', (c) => (err += String(c)));
      const exited = new Promise<unknown>((resolve) => proc.on('exit', resolve));
      try {
        await waitFor('the grader running', async () => (await graders()).some((c) => c.state === 'running'), { instance: sb.instance, timeoutMs: 60_000 });
        await waitFor('the grader started', async () => exists(path.join(gradeDir(name), 'results', 'started')), {
          dirs: [path.join(gradeDir(name), 'results')],
          timeoutMs: 30_000,
        });
      } catch (e) {
        throw new Error(`${(e as Error).message}; berth said: ${err}`);
      } finally {
        proc.kill('SIGKILL');
        await exited;
      }
      const g = await grades(child(name));
      expect(g.map((x) => [x.k, x.state])).to.deep.equal([[1, 'grading']]);
    }

    async function oneGrade(name: string): Promise<void> {
      const gs = await grades(child(name));
      expect(gs.map((g) => [g.k, g.run, g.state, g.passed])).to.deep.equal([[1, 1, 'graded', true]]);
      expect((await fs.readdir(path.join(sb.resultsRoot, child(name), 'run-1'))).filter((n) => n.startsWith('grade'))).to.deep.equal(['grade-1']);
      expect((await fs.readFile(path.join(gradeDir(name), 'results', 'score.json'), 'utf8')).trim()).to.equal('1');
      expect(await graders(), 'no grader left').to.have.length(0);
    }

    it('finds the running grader and waits for it: one grade, one grader start', async function () {
      const since = Math.floor(Date.now() / 1000) - 1;
      await sb.write('c.yaml', gradedSet('c', 'echo right > solution.txt', `command: [sh, -c, '${WAITING}']\nfixture: ./hidden\ndeadlineSeconds: 120`));
      await killWhileGrading('c');
      await fs.writeFile(path.join(gradeDir('c'), 'results', 'go'), '');
      const r = await sb.cli('reconcile', '--once', '--wait');
      expect(r.code, r.stdout + r.stderr).to.equal(0);
      await oneGrade('c');
      const starts = await containerEvents(sb.instance, since, 'start');
      expect(starts.filter((e) => e.component === COMPONENTS.grader)).to.have.length(1);
      expect(starts.filter((e) => e.component === COMPONENTS.main)).to.have.length(1);
    });

    it('a grader gone meanwhile is made again into the same grade-1, never a grade-2', async function () {
      const since = Math.floor(Date.now() / 1000) - 1;
      await sb.write('m.yaml', gradedSet('m', 'echo right > solution.txt', `command: [sh, -c, '${WAITING}']\nfixture: ./hidden\ndeadlineSeconds: 120`));
      await killWhileGrading('m');
      for (const c of await graders()) await docker.getContainer(c.id).remove({ force: true });
      await fs.rm(path.join(gradeDir('m'), 'results', 'started'));
      const run = sb.cli('reconcile', '--once', '--wait');
      // the grader made again (its grade folder emptied first) says it started: let it finish
      await waitFor('the grader made again', async () => exists(path.join(gradeDir('m'), 'results', 'started')), { instance: sb.instance, timeoutMs: 60_000 });
      await fs.writeFile(path.join(gradeDir('m'), 'results', 'go'), '');
      const r = await run;
      expect(r.code, r.stdout + r.stderr).to.equal(0);
      await oneGrade('m');
      const starts = await containerEvents(sb.instance, since, 'start');
      expect(starts.filter((e) => e.component === COMPONENTS.grader)).to.have.length(2);
      expect(starts.filter((e) => e.component === COMPONENTS.main)).to.have.length(1);
    });
  });

  it('a grader past its deadline is stopped: GradeTimedOut', async function () {
    await sb.write('t.yaml', gradedSet('t', 'true', `command: [sh, -c, 'sleep 60']\ndeadlineSeconds: 1`));
    const r = await sb.cli('reconcile', '--once', '--wait');
    const [g] = await grades(child('t'));
    expect(g, r.stderr).to.include({ state: 'timedOut', reason: 'GradeTimedOut' });
    const [s] = await summary();
    expect(s?.children[0]).to.include({ outcome: 'infra', reason: 'GradeTimedOut' });
  });

  it('with ttlSecondsAfterFinished: 0, reconcile --once --wait ends with every graded attempt collected (grader and main container gone)', async function () {
    const set = (name: string) =>
      gradedSet(name, 'echo fixed > solution.txt', `command: [sh, -c, 'echo 1 > /results/score.json']`).replace(
        '    fixture: ./task\n',
        '    fixture: ./task\n    ttlSecondsAfterFinished: 0\n',
      );
    for (const n of ['ta', 'tb', 'tc']) await sb.write(`${n}.yaml`, set(n));
    const r = await sb.cli('reconcile', '--once', '--wait');
    expect(r.code, r.stderr).to.equal(0);
    for (const n of ['ta', 'tb', 'tc']) expect((await grades(child(n))).map((g) => g.state)).to.deep.equal(['graded']);
    const left = await sb.engine.containers.list([`dev.berth.instance=${sb.instance}`]);
    expect(left.map((c) => c.name)).to.deep.equal([]);
  });
});

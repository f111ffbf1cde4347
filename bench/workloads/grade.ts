/**
 * Export + grade overhead per attempt (issue 36, `BENCH_ONLY=grade`), in-process. One attempt of
 * a coding task: a fixture like a small repository (BENCH_GRADE_FILES files, default 2,000, about
 * 10 KiB each: 20 MiB, in folders of 100), copied into /workspace by berth; its command changes
 * 10 files a folder (200), protected tests among them, and adds 100; run to its end once by
 * berth (`reconcile --once --wait`: the attempt, its harvest and its first grade), its container
 * kept. Then, every round, in alternating order:
 *
 * - berth: the run's export as the harvest makes it (exportWorkspace: the engine's archive of
 *   workingDir read, changes.json, changes.patch, files/; the export of the round before removed
 *   first, untimed) plus a grade of that run as berth's executor runs it (its operations
 *   `begin-grade`, `create-grader`, `copy-in-grader` (the grader's archive: the fixture, the
 *   changes less `protect`, grade.fixture), `start-grader`; the grader waited for; then
 *   `finish-grade` (its logs, its status) and `remove-container`), each round a new grade k.
 * - floor: the engine's archive of the attempt's workingDir read to its end
 *   (GET /containers/{id}/archive, what `docker cp` reads) + a fresh container of the same image
 *   with one PUT archive of the bytes a minimal tool would copy (the workspace as the attempt
 *   left it with the protected tests as the fixture had them and the hidden tests added; made
 *   once, untimed), started, waited for, its logs read, removed.
 *
 * berth's Engine and executor are called in-process: the row measures berth's code, not the
 * CLI's start-up. The executor is configured as a pass configures it (src/controller/pass.ts:
 * the packed fixture layers kept in the state folder, which the setup run's copy filled). The raw API is bench/lib/engine.ts (Node's http over the socket).
 */
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, LABELS } from '../../src/constants';
import { desiredGrader } from '../../src/desired/grade';
import { createDockerEngine } from '../../src/engine/docker';
import { Executor } from '../../src/execute/executor';
import { graderArchive } from '../../src/pack/grade-archive';
import { exportWorkspace } from '../../src/workspace/export';
import { finishGradeOp, gradeOps } from '../../src/plan/grade';
import { removeContainerOp } from '../../src/plan/ops';
import { gradeHash } from '../../src/spec/grade-hash';
import { loadSpecs } from '../../src/spec/loader';
import { StatusStore } from '../../src/status/store';
import { silentLogger } from '../../src/util/log';
import type { RawEngine } from '../lib/engine';
import { peerLabels, rawCreateBody, specText, type BenchRun } from '../lib/fixture';
import { berth } from '../lib/proc';
import { profiled } from './noop';
import { archive } from './harvest';

export interface GradeSamples {
  files: number;
  fixtureBytes: number;
  /** What the attempt's export lists (from its changes.json). */
  changed: { added: number; modified: number };
  /** Bytes of the floor's archive in (what the grader gets). */
  inputBytes: number;
  /** berth's `reconcile --once --wait` that ran the attempt, its harvest and its first grade (once, information). */
  setupMs: number;
  berth: number[];
  floor: number[];
  /** berth's parts: the export, and the grade (begin to removed). */
  exportMs: number[];
  gradeMs: number[];
  /** The floor's parts: the archive read, and the grader (create to removed). */
  archiveMs: number[];
  graderMs: number[];
  /** Both graders' steps: created, filled and started; waited for; its end read and removed. */
  steps: { berth: GraderSteps; floor: GraderSteps };
  /** BENCH_PROFILE: a CPU profile of one more berth round (untimed). */
  profile?: string;
}

export interface GraderSteps {
  start: number[];
  wait: number[];
  end: number[];
}

const PER_DIR = 100;
const FILE_BYTES = 10 * 1024;
const CHANGED_PER_DIR = 10;
const ADDED = 100;

/** The attempt: 10 files a folder changed (the protected tests' among them), 100 added. */
const ATTEMPT = [
  `for f in */*/m*.txt; do echo '// changed by the attempt' >> "$f"; done`,
  `mkdir -p src/added; i=0; while [ $i -lt ${ADDED} ]; do seq 1 200 > src/added/n$i.txt; i=$((i+1)); done`,
  'echo done',
].join('; ');

/** The grader: the hidden check reads the changes and the protected tests, writes its verdict. */
const CHECK = [
  'set -e',
  'test -f src/added/n99.txt',
  'grep -q "changed by the attempt" src/p00/m000.txt',
  '! grep -q "changed by the attempt" tests/t00/m000.txt',
  'find . -type f | wc -l > /results/files.txt',
  'echo graded',
  '',
].join('\n');
const GRADER_CMD = ['sh', 'hidden_tests/check.sh'];

/** A line of code-like text, its number in it. */
function line(d: number, f: number, i: number): string {
  return `export const value_${d}_${f}_${i} = compute(${i}, "${'x'.repeat(i % 40)}"); // line ${i}\n`;
}

/** The fixture: `files` files in folders of PER_DIR (src/pNN, the last tenth under tests/tNN), the first CHANGED_PER_DIR of each named m*. */
async function writeFixture(dir: string, files: number): Promise<number> {
  let bytes = 0;
  const dirs = Math.ceil(files / PER_DIR);
  const testDirs = Math.max(1, Math.round(dirs / 10));
  for (let d = 0; d < dirs; d++) {
    const sub =
      d < dirs - testDirs
        ? path.join(dir, 'src', `p${String(d).padStart(2, '0')}`)
        : path.join(dir, 'tests', `t${String(d - (dirs - testDirs)).padStart(2, '0')}`);
    await fs.mkdir(sub, { recursive: true });
    const count = Math.min(PER_DIR, files - d * PER_DIR);
    await Promise.all(
      Array.from({ length: count }, (_, f) => {
        let text = '';
        for (let i = 0; text.length < FILE_BYTES; i++) text += line(d, f, i);
        bytes += text.length;
        const name = `${f < CHANGED_PER_DIR ? 'm' : 'f'}${String(f).padStart(3, '0')}.txt`;
        return fs.writeFile(path.join(sub, name), text);
      }),
    );
  }
  return bytes;
}

function steps(into: GraderSteps, t1: number, s1: number, s2: number, t2: number): void {
  into.start.push(s1 - t1);
  into.wait.push(s2 - s1);
  into.end.push(t2 - s2);
}

export async function gradeRounds(
  engine: RawEngine,
  run: BenchRun,
  files: number,
  rounds: number,
  log: (m: string) => void,
  profileDir?: string,
): Promise<GradeSamples> {
  const sb = await run.berthSandbox('grade');
  const fixtureBytes = await writeFixture(path.join(sb.specsDir, 'fixture'), files);
  await fs.mkdir(path.join(sb.specsDir, 'hidden', 'hidden_tests'), { recursive: true });
  await fs.writeFile(path.join(sb.specsDir, 'hidden', 'hidden_tests', 'check.sh'), CHECK);
  const name = 'g0000';
  await fs.writeFile(
    path.join(sb.specsDir, `${name}.yaml`),
    specText(
      name,
      ['sh', '-c', ATTEMPT],
      ['  fixture: ./fixture', '  grade:', `    command: ${JSON.stringify(GRADER_CMD)}`, '    fixture: ./hidden', "    protect: ['tests/**']"],
    ),
  );
  log(`grade: ${files.toLocaleString('en')} files (${(fixtureBytes / 2 ** 20).toFixed(1)} MiB) copied in, the attempt run, exported and graded by berth once`);
  const setup = await berth(['reconcile', '--once', '--wait', '--timeout', '600', ...sb.globalArgs('warn')], { timeoutMs: 700_000 });
  const store = new StatusStore(sb.stateDir, sb.instance);
  const rec = await store.get(name);
  const first = rec?.grades?.[0];
  if (!rec || rec.phase !== 'Succeeded' || !rec.resultsDir || first?.state !== 'graded' || !first.passed) {
    throw new Error(`grade: berth's setup run did not end Succeeded and graded: ${JSON.stringify(rec?.grades ?? rec?.phase)}\n${setup.stderr}`);
  }
  const [attempt] = await engine.listContainers([`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=main`]);
  if (!attempt) throw new Error("grade: the attempt's container is gone after its run (it must be kept)");
  const runDir = path.dirname(rec.resultsDir);
  const changes = JSON.parse(await fs.readFile(path.join(runDir, 'workspace', 'changes.json'), 'utf8')) as { added: unknown[]; modified: unknown[] };

  // The floor's input, made once: the workspace as the attempt left it, the protected tests as the fixture had them, the hidden tests.
  const floorDir = await run.dir('grade-floor');
  const tree = path.join(floorDir, 'tree');
  await fs.mkdir(tree);
  execFileSync('sh', ['-c', `docker cp ${attempt.Id}:/workspace/. - | tar -C "$1" -xf -`, 'sh', tree]);
  await fs.rm(path.join(tree, 'tests'), { recursive: true });
  await fs.cp(path.join(sb.specsDir, 'fixture', 'tests'), path.join(tree, 'tests'), { recursive: true });
  await fs.cp(path.join(sb.specsDir, 'hidden'), tree, { recursive: true });
  const input = execFileSync('tar', ['-C', tree, '-cf', '-', '.'], { maxBuffer: 1 << 30 });

  const loaded = (await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot })).specs.find((s) => s.spec.name === name);
  const grade = loaded?.spec.grade;
  if (!loaded || !grade) throw new Error('grade: the spec did not load with its grade');
  const berthEngine = createDockerEngine();
  const executor = new Executor({
    engine: berthEngine,
    store,
    instance: sb.instance,
    concurrency: 1,
    log: silentLogger(),
    env: process.env,
    resultsRoot: sb.resultsRoot,
    // as a pass configures it (src/controller/pass.ts): the packed fixture layers kept in the state folder
    fixtureCache: { dir: path.join(sb.stateDir, DEFAULTS.fixtureCacheDir), maxBytes: DEFAULTS.fixtureCacheBytes },
  });
  const out: GradeSamples = {
    files,
    fixtureBytes,
    changed: { added: changes.added.length, modified: changes.modified.length },
    inputBytes: input.length,
    setupMs: setup.ms,
    berth: [],
    floor: [],
    exportMs: [],
    gradeMs: [],
    archiveMs: [],
    graderMs: [],
    steps: { berth: { start: [], wait: [], end: [] }, floor: { start: [], wait: [], end: [] } },
  };

  const berthRound = async (r: number, keep = true) => {
    await fs.rm(path.join(runDir, 'workspace'), { recursive: true });
    const k = r + 2;
    const d = desiredGrader(sb.instance, loaded, grade, gradeHash(grade), rec.run, k, rec.resultsDir as string, grade.image ?? loaded.spec.image);
    const action = { attempt: name, kind: 'grade' as const, summary: `bench grade ${k}` };
    const t0 = performance.now();
    const exported = await exportWorkspace(berthEngine, runDir, attempt.Id);
    const t1 = performance.now();
    const began = await executor.runAction({ ...action, ops: gradeOps(d, true, 'bench') });
    const id = (await store.get(name))?.grades?.find((g) => g.k === k)?.containerId;
    if (!began.ok || !id) throw new Error(`grade: berth: grade ${k} did not start: ${began.error ?? began.outcome}`);
    const s1 = performance.now();
    await engine.call('POST', `/containers/${id}/wait`);
    const s2 = performance.now();
    const ended = await executor.runAction({
      ...action,
      ops: [finishGradeOp(name, { run: rec.run, k }, 'bench', { id }), removeContainerOp({ name: d.container.name, id }, 'its grade ended')],
    });
    const t2 = performance.now();
    const g = (await store.get(name))?.grades?.find((x) => x.k === k);
    if (!exported.done || !ended.ok || g?.state !== 'graded' || !g.passed) throw new Error(`grade: berth: grade ${k} did not pass: ${JSON.stringify(g)}`);
    if (!keep) return;
    steps(out.steps.berth, t1, s1, s2, t2);
    out.exportMs.push(t1 - t0);
    out.gradeMs.push(t2 - t1);
    out.berth.push(t2 - t0);
  };

  const floorRound = async (r: number) => {
    const results = await run.dir('grade-floor', `r${r}`);
    const t0 = performance.now();
    await archive(engine, attempt.Id, '/workspace');
    const t1 = performance.now();
    const id = await engine.createContainer(`bench-${run.id}-grade-floor-${r}`, rawCreateBody(GRADER_CMD, results, peerLabels(run, 'grade-floor', `r${r}`)));
    const put = await engine.putArchive(id, '/workspace', input);
    if (put.status !== 200) throw new Error(`grade: floor: PUT archive → ${put.status}: ${put.body}`);
    await engine.startContainer(id);
    const s1 = performance.now();
    const w = await engine.call<{ StatusCode: number }>('POST', `/containers/${id}/wait`);
    const s2 = performance.now();
    const logs = await engine.request('GET', `/containers/${id}/logs?stdout=1&stderr=1`);
    await engine.removeContainer(id);
    const t2 = performance.now();
    if (w.StatusCode !== 0 || !logs.body.includes('graded')) throw new Error(`grade: floor: the grader exited ${w.StatusCode}: ${logs.body}`);
    steps(out.steps.floor, t1, s1, s2, t2);
    out.archiveMs.push(t1 - t0);
    out.graderMs.push(t2 - t1);
    out.floor.push(t2 - t0);
  };

  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      await berthRound(r);
      await floorRound(r);
    } else {
      await floorRound(r);
      await berthRound(r);
    }
    const at = (xs: number[]) => (xs[r] as number).toFixed(0);
    log(
      `grade round ${r + 1}/${rounds}: berth ${at(out.berth)} ms (export ${at(out.exportMs)}, grade ${at(out.gradeMs)}), floor ${at(out.floor)} ms (archive ${at(out.archiveMs)}, grader ${at(out.graderMs)})`,
    );
  }
  if (process.env.BENCH_GRADE_TRACE === '1') {
    // one more berth round (untimed), its operations one at a time: where berth's time goes
    await fs.rm(path.join(runDir, 'workspace'), { recursive: true });
    const k = rounds + 100;
    const d = desiredGrader(sb.instance, loaded, grade, gradeHash(grade), rec.run, k, rec.resultsDir, grade.image ?? loaded.spec.image);
    const times: string[] = [];
    const timed = async (what: string, f: () => Promise<unknown>) => {
      const t = performance.now();
      await f();
      times.push(`${what} ${(performance.now() - t).toFixed(0)}`);
    };
    await timed('export', () => exportWorkspace(berthEngine, runDir, attempt.Id));
    await timed('(grader archive made and read, no engine)', async () => {
      const input = await graderArchive({
        runDir,
        fixture: d.fixture,
        packed: { layers: d.fixtureLayers, cache: { dir: path.join(sb.stateDir, DEFAULTS.fixtureCacheDir), maxBytes: DEFAULTS.fixtureCacheBytes } },
        gradeFixture: d.grade.fixture,
        protect: d.grade.protect,
        workingDir: d.workingDir,
        owner: d.owner,
      });
      const packing = input.pack();
      for await (const _ of packing.body) void _;
      await packing.done;
      await input.dispose();
    });
    for (const op of gradeOps(d, true, 'bench')) await timed(op.type, () => executor.runAction({ attempt: name, kind: 'grade', summary: 'trace', ops: [op] }));
    const id = (await store.get(name))?.grades?.find((g) => g.k === k)?.containerId as string;
    await timed('wait', () => engine.call('POST', `/containers/${id}/wait`));
    for (const op of [finishGradeOp(name, { run: rec.run, k }, 'bench', { id }), removeContainerOp({ name: d.container.name, id }, 'its grade ended')])
      await timed(op.type, () => executor.runAction({ attempt: name, kind: 'grade', summary: 'trace', ops: [op] }));
    log(`grade: berth's steps, ms: ${times.join(', ')}`);
  }
  if (profileDir) {
    log('grade: profiling one more berth round (untimed)');
    out.profile = path.join(profileDir, 'grade-berth.cpuprofile');
    await profiled(out.profile, () => berthRound(rounds, false));
  }
  await berth(['clean', ...sb.globalArgs('warn')]);
  await fs.rm(sb.dir, { recursive: true, force: true });
  await fs.rm(floorDir, { recursive: true, force: true });
  return out;
}

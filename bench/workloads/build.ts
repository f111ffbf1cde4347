/**
 * Images built from a Dockerfile (issue 50, `BENCH_ONLY=build`):
 *
 * - fleet: berth's `reconcile --once --wait --max-running 4` over an AttemptSet of 300 children
 *   over 20 task folders, each with a Dockerfile of its own (FROM berth/busybox:local, a COPY of
 *   the task's files, a RUN), each child `true`; against a script doing `docker build` of the 20
 *   contexts (one after the other, as berth's --max-builds 1 does) then `docker run --rm` per
 *   attempt, `xargs -P 4`. Every round's contexts carry a stamp of their own (a fresh build for
 *   both: no cache hit from an earlier round), and rounds alternate which goes first.
 * - no-op: a `reconcile --once` pass over 300 settled attempts each building from a context
 *   folder of its own (unchanged since: the digest cache makes each a stat walk), against the same
 *   pass over 300 settled attempts each with a fixture folder of its own holding the same files.
 *   The 300 contexts have the same content (one image is built; the load still walks 300).
 *
 * Every image built here is removed after (berth's by its instance's build records, the script's
 * by the bench's label).
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { readBuildRecords } from '../../src/build/records';
import { StatusStore } from '../../src/status/store';
import { BENCH_LABEL, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { berth, run as runCmd } from '../lib/proc';
import { spread, verdictOf, type Row } from '../lib/report';
import { pairedRatio, summarize } from '../lib/stats';

export const BUILD_VS_SCRIPT = 1.1;
/** No more than the fixtures' pass: 5 % allowed for the noise of a shared machine. */
export const BUILD_NOOP_VS_FIXTURES = 1.05;
const SLOTS = 4;
const FILES = 10;

export interface BuildSamples {
  attempts: number;
  contexts: number;
  berth: number[];
  script: number[];
  noop: { attempts: number; contexts: number[]; fixtures: number[] };
}

const dockerfile = (stamp: string) => `FROM berth/busybox:local\nCOPY . /task\nRUN echo ${stamp} > /stamp && ls /task > /dev/null\n`;

/** A task folder: its Dockerfile (when `stamp`) and FILES small files. */
async function writeTask(dir: string, name: string, stamp: string | undefined): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  if (stamp !== undefined) await fs.writeFile(path.join(dir, 'Dockerfile'), dockerfile(stamp));
  for (let f = 0; f < FILES; f++) await fs.writeFile(path.join(dir, `f${f}.txt`), `${name} file ${f}\n`.repeat(40));
}

/** Removes the images an instance's berth built (its build records name them: an image carries only its build hash). */
async function removeBuiltBy(sb: BerthSandbox): Promise<void> {
  const tags = readBuildRecords(sb.stateDir).flatMap((r) => (r.instance === sb.instance && r.state === 'built' ? [r.tag] : []));
  if (tags.length) await runCmd('docker', ['rmi', '-f', ...new Set(tags)], { allowFail: true });
}

async function removeBenchImages(runId: string): Promise<void> {
  const ids = (await runCmd('docker', ['images', '-q', '--filter', `label=${BENCH_LABEL}=${runId}`], { allowFail: true })).stdout.split('\n').filter(Boolean);
  if (ids.length) await runCmd('docker', ['rmi', '-f', ...new Set(ids)], { allowFail: true });
}

async function settledOk(sb: BerthSandbox, want: number, what: string, stderr: string): Promise<void> {
  const recs = await new StatusStore(sb.stateDir, sb.instance).loadAll();
  const ok = [...recs.values()].filter((s) => s.phase === 'Succeeded').length;
  if (ok !== want) throw new Error(`build: ${what}: ${ok} of ${want} attempts Succeeded\n${stderr.slice(-3000)}`);
}

async function berthRound(run: BenchRun, round: number, attempts: number, contexts: number): Promise<number> {
  const sb = await run.berthSandbox(`bld${round}`);
  const tasks = Array.from({ length: contexts }, (_, i) => `t${String(i).padStart(2, '0')}`);
  for (const t of tasks) await writeTask(path.join(sb.specsDir, 'tasks', t), t, `${run.id}-${round}-berth-${t}`);
  const seeds = Math.ceil(attempts / contexts);
  await fs.writeFile(
    path.join(sb.specsDir, 'set.yaml'),
    [
      'apiVersion: berth.dev/v1',
      'kind: AttemptSet',
      'metadata: {name: bld}',
      'spec:',
      '  matrix:',
      `    task: [${tasks.join(', ')}]`,
      `    seed: {range: [0, ${seeds}]}`,
      '  template:',
      '    build:',
      '      context: ./tasks/${{ matrix.task }}',
      "    command: ['true']",
      '',
    ].join('\n'),
  );
  try {
    const r = await berth(['reconcile', '--once', '--wait', '--timeout', '1800', '--max-running', String(SLOTS), ...sb.globalArgs('warn')], {
      timeoutMs: 2_000_000,
    });
    await settledOk(sb, seeds * contexts, 'berth', r.stderr);
    await berth(['clean', ...sb.globalArgs('warn')]);
    return r.ms;
  } finally {
    await removeBuiltBy(sb);
  }
}

async function scriptRound(run: BenchRun, round: number, attempts: number, contexts: number): Promise<number> {
  const root = await run.dir(`build-script-${round}`);
  const tags: string[] = [];
  for (let i = 0; i < contexts; i++) {
    const t = `t${String(i).padStart(2, '0')}`;
    await writeTask(path.join(root, t), t, `${run.id}-${round}-script-${t}`);
    tags.push(`berth-bench/${run.id}-${t}:1`);
  }
  const seeds = Math.ceil(attempts / contexts);
  const builds = tags
    .map((tag, i) => `docker build -q --label ${BENCH_LABEL}=${run.id} -t ${tag} ${path.join(root, `t${String(i).padStart(2, '0')}`)} >/dev/null`)
    .join(' && ');
  const lines = Array.from({ length: seeds }, () => tags)
    .flat()
    .join('\n');
  const script = `set -e; ${builds}; xargs -P ${SLOTS} -n 1 sh -c 'docker run --rm --network none --label ${BENCH_LABEL}=${run.id} "$0" true' <<'EOF'\n${lines}\nEOF\n`;
  try {
    const r = await runCmd('sh', ['-c', script], { timeoutMs: 1_800_000 });
    return r.ms;
  } finally {
    await removeBenchImages(run.id);
  }
}

/** 300 settled attempts, each from a context (or a fixture) of its own with the same files; then `reconcile --once` timed `samples` times each, alternating. */
async function noopRounds(run: BenchRun, attempts: number, samples: number, log: (m: string) => void): Promise<BuildSamples['noop']> {
  const ctx = await run.berthSandbox('bldnoopc');
  const fix = await run.berthSandbox('bldnoopf');
  const names = Array.from({ length: attempts }, (_, i) => `n${String(i).padStart(3, '0')}`);
  let ctxSpecs = '';
  let fixSpecs = '';
  for (const n of names) {
    await writeTask(path.join(ctx.specsDir, 'tasks', n), 'same', `${run.id}-noop`);
    await writeTask(path.join(fix.specsDir, 'tasks', n), 'same', `${run.id}-noop`);
    ctxSpecs += `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${n}}\nspec:\n  build: {context: ./tasks/${n}}\n  command: ['true']\n---\n`;
    fixSpecs += `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: ${n}}\nspec:\n  image: berth/busybox:local\n  fixture: ./tasks/${n}\n  command: ['true']\n---\n`;
  }
  await fs.writeFile(path.join(ctx.specsDir, 'a.yaml'), ctxSpecs);
  await fs.writeFile(path.join(fix.specsDir, 'a.yaml'), fixSpecs);
  const out: BuildSamples['noop'] = { attempts, contexts: [], fixtures: [] };
  try {
    for (const [sb, what] of [
      [ctx, 'contexts'],
      [fix, 'fixtures'],
    ] as const) {
      const r = await berth(['reconcile', '--once', '--wait', '--timeout', '1800', '--max-running', '8', ...sb.globalArgs('warn')], { timeoutMs: 2_000_000 });
      await settledOk(sb, attempts, `no-op setup (${what})`, r.stderr);
      log(`build: ${attempts} attempts over ${what} settled in ${(r.ms / 1000).toFixed(1)} s`);
    }
    for (let i = 0; i < samples; i++) {
      const order = i % 2 === 0 ? ([ctx, fix] as const) : ([fix, ctx] as const);
      for (const sb of order) {
        const r = await berth(['reconcile', '--once', ...sb.globalArgs('warn')], { timeoutMs: 600_000 });
        (sb === ctx ? out.contexts : out.fixtures).push(r.ms);
      }
    }
    log(
      `build: no-op pass over ${attempts} contexts ${summarize(out.contexts).median.toFixed(0)} ms, over ${attempts} fixtures ${summarize(out.fixtures).median.toFixed(0)} ms`,
    );
    for (const sb of [ctx, fix]) await berth(['clean', ...sb.globalArgs('warn')]);
    return out;
  } finally {
    await removeBuiltBy(ctx);
  }
}

export async function buildRounds(
  run: BenchRun,
  o: { rounds: number; attempts: number; contexts: number; noopAttempts: number; noopSamples: number },
  log: (m: string) => void,
): Promise<BuildSamples> {
  const out: BuildSamples = {
    attempts: Math.ceil(o.attempts / o.contexts) * o.contexts,
    contexts: o.contexts,
    berth: [],
    script: [],
    noop: { attempts: 0, contexts: [], fixtures: [] },
  };
  for (let round = 0; round < o.rounds; round++) {
    const order = round % 2 === 0 ? (['berth', 'script'] as const) : (['script', 'berth'] as const);
    for (const who of order) {
      const ms = who === 'berth' ? await berthRound(run, round, o.attempts, o.contexts) : await scriptRound(run, round, o.attempts, o.contexts);
      out[who].push(ms);
      log(`build round ${round + 1}/${o.rounds}: ${who} ${(ms / 1000).toFixed(1)} s`);
    }
  }
  out.noop = await noopRounds(run, o.noopAttempts, o.noopSamples, log);
  return out;
}

export function buildRows(s: BuildSamples, rows: Row[]): void {
  const r = pairedRatio(s.berth, s.script);
  rows.push({
    id: 'build-vs-script',
    workload: `Images built from a Dockerfile: ${s.attempts} attempts over ${s.contexts} task folders with a Dockerfile each, ${SLOTS} slots, each \`true\``,
    berth: spread(summarize(s.berth)),
    reference: `\`docker build\` of the ${s.contexts} contexts, then \`docker run --rm\` per attempt, \`xargs -P ${SLOTS}\``,
    refValue: spread(summarize(s.script)),
    ratio: r,
    target: `≤ ${BUILD_VS_SCRIPT}×`,
    verdict: verdictOf(r.median <= BUILD_VS_SCRIPT),
    chart: { label: 'build fleet vs docker build+run', target: BUILD_VS_SCRIPT },
  });
  const n = pairedRatio(s.noop.contexts, s.noop.fixtures);
  rows.push({
    id: 'build-noop-vs-fixtures',
    workload: `A no-op \`reconcile --once\` over ${s.noop.attempts} settled attempts, each building from an unchanged context of its own`,
    berth: spread(summarize(s.noop.contexts)),
    reference: `the same pass over ${s.noop.attempts} settled attempts, each with an unchanged fixture of its own (the same files)`,
    refValue: spread(summarize(s.noop.fixtures)),
    ratio: n,
    target: `≤ ${BUILD_NOOP_VS_FIXTURES}× (no more, 5 % for noise)`,
    verdict: verdictOf(n.median <= BUILD_NOOP_VS_FIXTURES),
  });
}

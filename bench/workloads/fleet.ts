/**
 * Fleet throughput (issue 18, `BENCH_ONLY=fleet`): N short attempts through their whole life,
 * 8 at a time. Each attempt gets a fixture of 20 small files copied into /workspace, runs
 * `sleep 0.5` and writes a result file into /results, exits 0; then its log and result are
 * collected and its container removed.
 *
 * - berth: `reconcile --once --wait --max-running 8 --concurrency 8` over N spec files with
 *   `ttlSecondsAfterFinished: 0` (harvest, then removal, inside the timed run); checked: every
 *   attempt Succeeded, its result file harvested, no container of the instance left.
 * - floor: the raw Engine API (bench/lib/engine.ts, Node's http over the socket), 8 attempts in
 *   flight, each: create, PUT the fixture's tar (made once) into /workspace, start, wait, read
 *   the logs, GET the result file's archive, DELETE.
 * - peer: a shell script per attempt through `xargs -P 8`: `docker create` with the same flags,
 *   `docker cp` the fixture in, `docker start -a` (its log), `docker cp` the result out,
 *   `docker rm`.
 * - with a grader on (BENCH_FLEET_GRADE, default 1; 0 leaves these two out): berth as above with
 *   `grade` in every spec (a hidden check copied in last; every attempt also graded, and only then
 *   removed; checked: every grade passed), against the floor with a grader per attempt: after
 *   the attempt's wait, its /workspace archive read to its end, and a fresh container of the same
 *   image given the same tree (the fixture, unchanged by the attempt, and the check; one tar made
 *   once) in one PUT archive, started, waited for, its logs read, removed.
 * Rounds alternate in a rotating order; ratios are paired by round.
 */
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../../src/constants';
import { StatusStore } from '../../src/status/store';
import type { RawEngine } from '../lib/engine';
import { IMAGE, logOptFlags, names, peerLabels, rawCreateBody, specText, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { berth, buildOf, run as runCmd, type Build } from '../lib/proc';
import { spread, verdictOf, type Row } from '../lib/report';
import { pairedRatio, summarize } from '../lib/stats';
import { Timeline } from '../lib/timeline';
import { archive } from './harvest';

export interface FleetSamples {
  attempts: number;
  berth: number[];
  raw: number[];
  dockerRun: number[];
  /** berth's runs: passes of --wait, from its progress lines (information). */
  berthPasses: number[];
  /** With a grader on (BENCH_FLEET_GRADE): berth's runs and the floor's, in the same rotation. */
  graded?: { berth: number[]; raw: number[]; berthPasses: number[] };
  /** BENCH_AB: another build's runs, alternating with this one's. */
  other?: { label: string; ms: number[] };
}

const SCRIPT = 'sleep 0.5; ls /workspace | wc -l > /results/result.txt; echo done';
const CMD = ['sh', '-c', SCRIPT];

async function writeFixture(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  await Promise.all(Array.from({ length: 20 }, (_, i) => fs.writeFile(path.join(dir, `input-${String(i).padStart(2, '0')}.txt`), `line ${i}\n`.repeat(20))));
}

/** The grader's hidden check, copied in last (grade.fixture): the fixture is there, the attempt's result is not. */
const CHECK = 'test -f input-19.txt && test ! -e result.txt && echo graded\n';
const GRADER_CMD = ['sh', 'hidden/check.sh'];

function fleetSpec(name: string, graded: boolean): string {
  const grade = graded ? ['  grade:', `    command: ${JSON.stringify(GRADER_CMD)}`, '    fixture: ./grade'] : [];
  return specText(name, CMD, ['  fixture: ./fixture', '  ttlSecondsAfterFinished: 0', ...grade]);
}

async function berthRound(engine: RawEngine, run: BenchRun, round: number, n: number, build?: Build, graded = false): Promise<{ ms: number; passes: number }> {
  const sb: BerthSandbox = await run.berthSandbox(`f${build ? 'o' : graded ? 'g' : ''}${round}`);
  await writeFixture(path.join(sb.specsDir, 'fixture'));
  if (graded) {
    await fs.mkdir(path.join(sb.specsDir, 'grade', 'hidden'), { recursive: true });
    await fs.writeFile(path.join(sb.specsDir, 'grade', 'hidden', 'check.sh'), CHECK);
  }
  const all = names('f', n);
  await Promise.all(all.map((a) => fs.writeFile(path.join(sb.specsDir, `${a}.yaml`), fleetSpec(a, graded))));
  const r = await berth(['reconcile', '--once', '--wait', '--timeout', '900', '--max-running', '8', '--concurrency', '8', ...sb.globalArgs('warn')], {
    timeoutMs: 1_000_000,
    ...(build ? { build } : {}),
  });
  const recs = await new StatusStore(sb.stateDir, sb.instance).loadAll();
  const ok = [...recs.values()].filter((s) => s.phase === 'Succeeded');
  if (ok.length !== n) throw new Error(`fleet: berth: ${ok.length} of ${n} attempts Succeeded`);
  for (const s of ok) {
    const dir = s.resultsDir;
    if (!dir) throw new Error(`fleet: berth: ${s.name} has no results folder`);
    const got = (await fs.readFile(path.join(dir, 'result.txt'), 'utf8')).trim();
    if (got !== '20') throw new Error(`fleet: berth: ${s.name}: result.txt says ${JSON.stringify(got)}, not 20`);
    const g = s.grades?.at(-1);
    if (graded && (s.grades?.length !== 1 || g?.state !== 'graded' || !g.passed))
      throw new Error(`fleet: berth: ${s.name}: graded ${JSON.stringify(s.grades)}`);
  }
  const left = await engine.listContainers([`${LABELS.instance}=${sb.instance}`]);
  // with a grade too: --wait ends only after the TTL's removal that follows the last grade
  if (left.length) {
    const what = left.map((c) => `${c.Names.join(',')} (${c.Labels?.[LABELS.component] ?? '?'}, ${c.State})`).join('; ');
    throw new Error(`fleet: berth left ${left.length} containers after --wait with ttlSecondsAfterFinished: 0: ${what}\n${r.stderr.slice(-4000)}`);
  }
  await berth(['clean', ...sb.globalArgs('warn')]);
  return { ms: r.ms, passes: (r.stderr.match(/^\[\d+s\]/gm) ?? []).length };
}

/** Runs `fn` over `items`, `limit` at a time. */
async function pool<T>(items: readonly T[], limit: number, fn: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(limit, items.length) }, async () => {
      while (next < items.length) await fn(items[next++] as T);
    }),
  );
}

/** `check`: the grader's tree as one tar, when every attempt is graded too. */
async function rawRound(engine: RawEngine, run: BenchRun, round: number, n: number, tar: Buffer, check?: Buffer): Promise<number> {
  const root = await run.dir(`fleet-raw${check ? 'g' : ''}-${round}`);
  const all = names(check ? 'q' : 'r', n);
  await Promise.all(all.map((a) => fs.mkdir(path.join(root, a))));
  const t0 = performance.now();
  await pool(all, 8, async (a) => {
    const id = await engine.createContainer(`bench-${run.id}-fr${round}-${a}`, rawCreateBody(CMD, path.join(root, a), peerLabels(run, 'fleet-raw', a)));
    const put = await engine.putArchive(id, '/workspace', tar);
    if (put.status !== 200) throw new Error(`fleet: raw: PUT archive → ${put.status}: ${put.body}`);
    await engine.startContainer(id);
    const w = await engine.call<{ StatusCode: number }>('POST', `/containers/${id}/wait`);
    if (w.StatusCode !== 0) throw new Error(`fleet: raw: ${a} exited ${w.StatusCode}`);
    const logs = await engine.request('GET', `/containers/${id}/logs?stdout=1&stderr=1`);
    if (logs.status !== 200 || !logs.body.includes('done')) throw new Error(`fleet: raw: ${a}: logs ${logs.status}`);
    const out = await engine.request('GET', `/containers/${id}/archive?path=${encodeURIComponent('/results/result.txt')}`);
    if (out.status !== 200) throw new Error(`fleet: raw: ${a}: archive ${out.status}`);
    if (check) {
      await archive(engine, id, '/workspace');
      const gdir = path.join(root, `${a}-grade`);
      await fs.mkdir(gdir);
      const g = await engine.createContainer(`bench-${run.id}-fg${round}-${a}`, rawCreateBody(GRADER_CMD, gdir, peerLabels(run, 'fleet-raw-grader', a)));
      const p = await engine.putArchive(g, '/workspace', check);
      if (p.status !== 200) throw new Error(`fleet: raw: ${a}: grader PUT archive → ${p.status}: ${p.body}`);
      await engine.startContainer(g);
      const gw = await engine.call<{ StatusCode: number }>('POST', `/containers/${g}/wait`);
      const glogs = await engine.request('GET', `/containers/${g}/logs?stdout=1&stderr=1`);
      if (gw.StatusCode !== 0 || !glogs.body.includes('graded')) throw new Error(`fleet: raw: ${a}: the grader exited ${gw.StatusCode}: ${glogs.body}`);
      await engine.removeContainer(g);
    }
    await engine.removeContainer(id);
  });
  return performance.now() - t0;
}

function peerScript(fixture: string, labels: string[]): string {
  // $1 = attempt name, $2 = its results folder; same flags as bench/lib/fixture.ts dockerRunArgs.
  return [
    'set -e',
    'n="$1"; out="$2"',
    `docker create --name "$n" ${labels.join(' ')} --network none --cap-drop ALL --security-opt no-new-privileges --init --cgroupns private --pids-limit 512 --stop-timeout 10 ${logOptFlags().join(' ')} -w /workspace -v "$out:/results:rw" ${IMAGE} sh -c '${SCRIPT}' >/dev/null`,
    `docker cp ${fixture}/. "$n:/workspace" >/dev/null`,
    'docker start -a "$n" > "$out.log"',
    'docker cp "$n:/results/result.txt" "$out.result" >/dev/null',
    'docker rm "$n" >/dev/null',
    '',
  ].join('\n');
}

async function dockerRunRound(run: BenchRun, round: number, n: number, fixture: string): Promise<number> {
  const root = await run.dir(`fleet-peer-${round}`);
  const all = names('p', n);
  await Promise.all(all.map((a) => fs.mkdir(path.join(root, a))));
  // the per-attempt label is left out (one script for all): six labels, the same size as berth's
  const labels = Object.entries(peerLabels(run, 'fleet-docker-run', 'p0000')).map(([k, v]) => `--label ${k}=${v}`);
  const script = path.join(root, 'attempt.sh');
  await fs.writeFile(script, peerScript(fixture, labels));
  const input = all.map((a) => `bench-${run.id}-fp${round}-${a} ${path.join(root, a)}`).join('\n') + '\n';
  const r = await runCmd('xargs', ['-P', '8', '-L', '1', 'sh', script], { input, timeoutMs: 1_000_000 });
  for (const a of all) {
    const got = (await fs.readFile(path.join(root, `${a}.result`), 'utf8')).trim();
    if (got !== '20') throw new Error(`fleet: docker run: ${a}: result says ${JSON.stringify(got)}`);
  }
  return r.ms;
}

export async function fleetRounds(engine: RawEngine, run: BenchRun, n: number, rounds: number, log: (m: string) => void): Promise<FleetSamples> {
  const fixture = await run.dir('fleet-fixture');
  await writeFixture(fixture);
  const tar = execFileSync('tar', ['-C', fixture, '-cf', '-', '.']);
  const out: FleetSamples = { attempts: n, berth: [], raw: [], dockerRun: [], berthPasses: [] };
  const contenders: [string, (round: number) => Promise<void>][] = [
    [
      'berth',
      async (i) => {
        const b = await berthRound(engine, run, i, n);
        out.berth.push(b.ms);
        out.berthPasses.push(b.passes);
      },
    ],
    ['raw', async (i) => void out.raw.push(await rawRound(engine, run, i, n, tar))],
    ['docker run', async (i) => void out.dockerRun.push(await dockerRunRound(run, i, n, fixture))],
  ];
  if (process.env.BENCH_FLEET_GRADE !== '0') {
    const graderTree = await run.dir('fleet-grader-tree');
    await writeFixture(graderTree);
    await fs.mkdir(path.join(graderTree, 'hidden'));
    await fs.writeFile(path.join(graderTree, 'hidden', 'check.sh'), CHECK);
    const graderTar = execFileSync('tar', ['-C', graderTree, '-cf', '-', '.']);
    const g = (out.graded = { berth: [] as number[], raw: [] as number[], berthPasses: [] as number[] });
    contenders.push(
      [
        'berth, graded',
        async (i) => {
          const b = await berthRound(engine, run, i, n, undefined, true);
          g.berth.push(b.ms);
          g.berthPasses.push(b.passes);
        },
      ],
      ['raw, graded', async (i) => void g.raw.push(await rawRound(engine, run, i, n, tar, graderTar))],
    );
  }
  const other = buildOf(process.env.BENCH_AB);
  if (other) {
    const o = (out.other = { label: other.label, ms: [] as number[] });
    contenders.push([`berth ${other.label}`, async (i) => void o.ms.push((await berthRound(engine, run, i, n, other)).ms)]);
  }
  for (let i = 0; i < rounds; i++) {
    for (let k = 0; k < contenders.length; k++) {
      const [name, fn] = contenders[(i + k) % contenders.length] as [string, (round: number) => Promise<void>];
      log(`fleet ${n}: round ${i + 1}/${rounds}: ${name}`);
      // BENCH_FLEET_TRACE=1: where each contender's slot time went, from the engine's event times
      const trace = process.env.BENCH_FLEET_TRACE === '1' ? await Timeline.open(engine, run.id) : undefined;
      try {
        await fn(i);
      } finally {
        trace?.close();
      }
      if (trace) log(`fleet ${n}: round ${i + 1}: ${name}: ${trace.summary(8)}`);
    }
  }
  return out;
}

/** Targets of issue 18: berth ≤ 1.15× the floor, and faster than the peer. */
export const FLEET_VS_FLOOR = 1.15;

export function fleetRows(f: FleetSamples, rows: Row[]): void {
  const n = f.attempts.toLocaleString('en');
  const b = spread(summarize(f.berth));
  const r1 = pairedRatio(f.berth, f.raw);
  rows.push({
    id: 'fleet-vs-floor',
    workload: `Fleet throughput: ${n} short attempts (20-file fixture in, result out, removed), 8 at a time (--wait passes: ${f.berthPasses.join(', ')})`,
    berth: b,
    reference: 'raw Engine API: create, put archive, start, wait, logs, archive out, remove; 8 in flight (floor)',
    refValue: spread(summarize(f.raw)),
    ratio: r1,
    target: `≤ ${FLEET_VS_FLOOR}×`,
    verdict: verdictOf(r1.median <= FLEET_VS_FLOOR),
    chart: { label: `fleet ${f.attempts} vs raw API`, target: FLEET_VS_FLOOR },
  });
  const r2 = pairedRatio(f.berth, f.dockerRun);
  rows.push({
    id: 'fleet-vs-docker-run',
    workload: `Fleet throughput: ${n} short attempts, 8 at a time`,
    berth: b,
    reference: '`docker create` + `docker cp` in + `docker start -a` + `docker cp` out + `docker rm`, `xargs -P 8`',
    refValue: spread(summarize(f.dockerRun)),
    ratio: r2,
    target: '< 1× (faster)',
    verdict: verdictOf(r2.median < 1),
    chart: { label: `fleet ${f.attempts} vs docker run`, target: 1 },
  });
  if (f.graded) {
    const g = f.graded;
    const r4 = pairedRatio(g.berth, g.raw);
    rows.push({
      id: 'fleet-graded-vs-floor',
      workload: `Fleet throughput with a grader on: ${n} short attempts, each also graded (spec.grade: a fresh container given the fixture, the changes and a hidden check), 8 at a time (--wait passes: ${g.berthPasses.join(', ')})`,
      berth: spread(summarize(g.berth)),
      reference:
        "raw Engine API as the floor above, and per attempt: its /workspace archive read, a fresh container with the grader's tree in one PUT archive, started, waited for, logs, removed; 8 in flight (floor)",
      refValue: spread(summarize(g.raw)),
      ratio: r4,
      target: `≤ ${FLEET_VS_FLOOR}×`,
      verdict: verdictOf(r4.median <= FLEET_VS_FLOOR),
      chart: { label: `fleet ${f.attempts} graded vs raw API`, target: FLEET_VS_FLOOR },
    });
    const r5 = pairedRatio(g.berth, f.berth);
    rows.push({
      id: 'fleet-graded-vs-plain',
      workload: `Fleet throughput: ${n} short attempts, 8 at a time: graded against not graded (what a grader costs)`,
      berth: spread(summarize(g.berth)),
      reference: 'berth without a grader, the same rounds',
      refValue: b,
      ratio: r5,
      target: '—',
      verdict: 'info',
    });
  }
  if (f.other) {
    const r3 = pairedRatio(f.berth, f.other.ms);
    rows.push({
      id: 'fleet-vs-build',
      workload: `Fleet throughput: ${n} short attempts, 8 at a time: this build against build ${f.other.label} (BENCH_AB)`,
      berth: b,
      reference: `build ${f.other.label}, the same rounds`,
      refValue: spread(summarize(f.other.ms)),
      ratio: r3,
      target: '—',
      verdict: 'info',
    });
  }
}

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

export interface FleetSamples {
  attempts: number;
  berth: number[];
  raw: number[];
  dockerRun: number[];
  /** berth's runs: passes of --wait, from its progress lines (information). */
  berthPasses: number[];
  /** BENCH_AB: another build's runs, alternating with this one's. */
  other?: { label: string; ms: number[] };
}

const SCRIPT = 'sleep 0.5; ls /workspace | wc -l > /results/result.txt; echo done';
const CMD = ['sh', '-c', SCRIPT];

async function writeFixture(dir: string): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  await Promise.all(Array.from({ length: 20 }, (_, i) => fs.writeFile(path.join(dir, `input-${String(i).padStart(2, '0')}.txt`), `line ${i}\n`.repeat(20))));
}

function fleetSpec(name: string): string {
  return specText(name, CMD, ['  fixture: ./fixture', '  ttlSecondsAfterFinished: 0']);
}

async function berthRound(engine: RawEngine, run: BenchRun, round: number, n: number, build?: Build): Promise<{ ms: number; passes: number }> {
  const sb: BerthSandbox = await run.berthSandbox(`f${build ? 'o' : ''}${round}`);
  await writeFixture(path.join(sb.specsDir, 'fixture'));
  const all = names('f', n);
  await Promise.all(all.map((a) => fs.writeFile(path.join(sb.specsDir, `${a}.yaml`), fleetSpec(a))));
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
  }
  const left = await engine.listContainers([`${LABELS.instance}=${sb.instance}`]);
  if (left.length) throw new Error(`fleet: berth left ${left.length} containers after --wait with ttlSecondsAfterFinished: 0`);
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

async function rawRound(engine: RawEngine, run: BenchRun, round: number, n: number, tar: Buffer): Promise<number> {
  const root = await run.dir(`fleet-raw-${round}`);
  const all = names('r', n);
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

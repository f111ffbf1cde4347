/**
 * `make bench`: berth against the engine's floor (the raw Engine API over the unix socket) and
 * its peers (`docker run`, docker-compose 1.29), in the same run, as ratios. See BENCHMARKS.md.
 *
 *   node --import tsx bench/run.ts
 *
 * Environment:
 *   BENCH_ROUNDS       rounds of each alternating comparison (default 5; 1 for a quick run)
 *   BENCH_SIZES        no-op pass sizes (default 10,200,1000)
 *   BENCH_NOOP_PER_ROUND samples of each no-op contender a round (default 3)
 *   BENCH_DROPS        drop-to-running samples (default 20)
 *   BENCH_DROPS_AT_MAX drop-to-running samples with the controller at the largest size (default 5)
 *   BENCH_GIT_COMMITS  commits of the git workload (default 5)
 *   BENCH_COMPLETIONS  attempts of the completion-detection workload (default 40)
 *   BENCH_SET_CELLS    the AttemptSet workload plans a CELLS x CELLS set (default 100: 10,000 children)
 *   BENCH_COMPARE_CELLS the compare workload compares a CELLS x CELLS set with its baseline (default 100: 10,000 paired cells)
 *   BENCH_HARVEST_FILES files in the results folder of the harvest workload (default 100,000)
 *   BENCH_DISK_ATTEMPTS, BENCH_DISK_ENTRIES  attempts and entries each of the disk-measure workload (default 1,000 and 100)
 *   BENCH_REDACT_MB    MiB of the log of the redaction workload (default 100)
 *   BENCH_EXECS        execs of `true` through the API, and docker exec calls, of the exec workload (default 1,000)
 *   BENCH_GRADE_FILES  files of the grade workload's fixture, about 10 KiB each (default 2,000)
 *   BENCH_SWARM_DROPS  drop-to-running samples on the swarm (default 5)
 *   BENCH_SWARM_SIZES  swarm no-op pass sizes (default 10,200)
 *   BENCH_SWARM_SCALE_ATTEMPTS, BENCH_SWARM_SCALE_SLOTS, BENCH_SWARM_SCALE_ROUNDS  the swarm-scale workload's sample of short attempts a phase,
 *                      --max-running per node, and rounds (default 60, 6, 2)
 *   BENCH_FLEET_ATTEMPTS attempts of the fleet-throughput workload (default 300)
 *   BENCH_FLEET_TRACE  1: log each fleet round's container timeline (engine event times)
 *   BENCH_TENK_SPECS   specs of the ten-thousand workload, 50 of them running (default 10,000)
 *   BENCH_AB           label=[node@]path/to/bin/berth.js: another build in the fleet, completion and
 *                      no-op (CLI) workloads (an A/B in one run; on this Node, or on the node named)
 *   BENCH_FIXTURE_FILES files of the fixture-plan workload's generated repository and of the large-fixture workload's tree (default 5,000, ~150 MB)
 *   BENCH_FIXTURE_MB   the large-fixture tree's size in MiB (default 150)
 *   BENCH_FIXTURE_ATTEMPTS containers it is copied into, 4 at a time (default 20)
 *   BENCH_IMAGES_ROUNDS rounds of the images workload (default 3): 12 attempts over 6 images from a registry of its own
 *   BENCH_IMAGES_TRACE 1: log each images round's timeline (the engine's pull/create/start/die events, berth's log)
 *   BENCH_BUILD_ROUNDS, BENCH_BUILD_ATTEMPTS, BENCH_BUILD_CONTEXTS  the build workload: rounds (default 3) of an AttemptSet of
 *                      ATTEMPTS (300) over CONTEXTS (20) task folders with a Dockerfile each, against docker build + docker run
 *   BENCH_BUILD_NOOP_ATTEMPTS, BENCH_BUILD_NOOP_SAMPLES  its no-op pass: attempts (300) over contexts vs over fixtures, samples each (5)
 *   BENCH_STARTUP_RUNS runs of each contender of the start-up workload (default 15)
 *   BENCH_HUNDREDK_CONTROLLER 0: the hundredk workload without its controller at 100,000 specs; only: its controller alone
 *   BENCH_TENK_RESTART 1: the ten-thousand workload's controller started a second time (a restart; the hundredk workload's is)
 *   BENCH_ONLY         comma list of
 * startup,hundredk,cold,drop,noop,resources,report,harvest,disk,redact,exec,grade,credentials,sets,compare,completion,git,swarm,swarm-scale,fleet,tenk,
 * fixture-plan,fixture,images,build: a partial run, written to
 *                      bench/results/partial.*.tmp instead of latest.*
 *   BENCH_PROFILE=1    also take CPU profiles (untimed extra runs under `node --cpu-prof`: berth's
 *                      cold start and clean of 50, a no-op pass at the largest size in-process and
 *                      as a CLI, the controller at the largest size) into BENCH_PROFILE_DIR
 *                      (default: a berth-bench-profiles-<run id> folder in the temp dir, kept),
 *                      and add a summary of each to the report
 *
 * Everything the bench creates carries `dev.berth.bench=<run id>` or belongs to a berth instance
 * `bench-<run id>-*`, and is removed by label in a `finally`, also when a step fails.
 */
import { execFileSync } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cleanupRun } from './lib/cleanup';
import { RawEngine, socketFromEnv } from './lib/engine';
import { engineTurn, newestEngineTag, type TurnOutput } from './lib/engine-turn';
import { BenchRun } from './lib/fixture';
import { markdownTable, spread, svgChart, verdictOf, type Row } from './lib/report';
import { fmtMs, pairedRatio, summarize, type Summary } from './lib/stats';
import { berth, killLiveChildren, REPO, run as runCmd } from './lib/proc';
import { coldRounds, profileColdBerth, type ColdSamples } from './workloads/cold';
import { renderProfile, summarizeProfile, type ProfileSummary } from './lib/profile';
import { controllerAt1000, dropToRunning, profileController, type ControllerAt1000, type DropSamples } from './workloads/controller';
import { fixtureRounds, type FixtureSamples } from './workloads/fixture';
import { gradeRounds, type GradeSamples } from './workloads/grade';
import { fixturePlanRounds, type FixturePlanSamples } from './workloads/fixture-plan';
import { harvestRounds, type HarvestSamples } from './workloads/harvest';
import { credentialRounds, type CredentialSamples } from './workloads/credentials';
import { diskRounds, type DiskSamples } from './workloads/disk';
import { redactRounds, type RedactSamples } from './workloads/redact';
import { execRounds, p95, type ExecSamples } from './workloads/exec';
import { noopScales, type NoopResult } from './workloads/noop';
import { reportBench, type ReportSamples } from './workloads/report';
import { setRounds, type SetSamples } from './workloads/sets';
import { compareRounds, type CompareSamples } from './workloads/compare';
import { completion, type CompletionSamples } from './workloads/completion';
import { gitWorkload, type GitSamples } from './workloads/git';
import { swarmRows, swarmWorkload, type SwarmSamples } from './workloads/swarm';
import { swarmScaleRows, swarmScaleWorkload, type SwarmScaleSamples } from './workloads/swarm-scale';
import { fleetRounds, fleetRows, type FleetSamples } from './workloads/fleet';
import { tenk, tenkRows, type TenkSamples } from './workloads/tenk';
import { imagesRounds, imagesRows, type ImagesSamples } from './workloads/images';
import { buildRounds, buildRows, type BuildSamples } from './workloads/build';
import { startupRounds, type StartupSamples } from './workloads/startup';
import { HUNDREDK_TARGETS, hundredkRounds, type HundredkSamples, type Took } from './workloads/hundredk';

const TARGETS = {
  /** `berth --version`, `validate` and `get` of 15 attempts: CPU against `node -e 0`'s (issue 55); none of them asks the engine anything. */
  startupVsNode: 1.5,
  coldVsFloor: 1.15,
  noopVsFloor: 1.5,
  teardownVsFloor: 1.15,
  /** The harvest of 100,000 files against the engine's archive of the folder plus a plain walk. */
  harvestVsFloor: 1.5,
  /** A credentialed request through the egress proxy (plain HTTP in, verified TLS out) against a direct TLS call: added ms per request. */
  credentialAddedMs: 5,
  /** One disk-measuring interval (CPU) against `du -s` of the same folders. */
  diskVsDu: 3,
  /** The harvest of a 100 MiB log with 5 secrets to redact against the same with none (issue 41). */
  redactVsPlain: 1.5,
  /** 1,000 execs of `true` through berth's API against 1,000 `docker exec` calls into the same container (issue 52). */
  execVsDocker: 1.2,
  /** A run's export plus its grade against the engine's archive of workingDir plus a fresh container with the changes copied in (issue 36). */
  gradeVsFloor: 1.2,
  /** `plan`'s spec load over a large unchanged fixture, in a new process's state, against a plain stat walk of its files (issue 39). */
  fixturePlanVsWalk: 1.2,
  dropOverheadMs: 150,
  rssMb: 150,
  /** "~0 CPU idle": at most 1% of one core. */
  idleCpuPct: 1,
  /** The fleet report of 1,000 attempts: its file, and its first paint in headless chromium. */
  reportBytes: 2 * 1024 * 1024,
  reportFirstPaintMs: 1000,
  /** A cold CLI no-op pass at the largest size: ≤ this × (the floor of its lists + `node -e 0`), same rounds. */
  noopCliVsFloorPlusNode: 2.5,
  /** An AttemptSet of 10,000 children: expansion and plan in a cold CLI pass (issue 14). */
  setPlanMs: 1000,
  /** `berth compare --baseline` over 10,000 paired cells, CLI, cold (issue 53). */
  compareMs: 1000,
  /** A container's `die` event → berth's record saying the attempt finished, p95. */
  completionP95Ms: 500,
  /** A large fixture (5,000 files, 150 MiB) into 20 containers, 4 at a time, against `docker cp` of the same tree (issue 39). */
  fixtureVsDockerCp: 1.1,
};

function envInt(name: string, def: number, min = 1): number {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isInteger(n) || n < min) throw new Error(`${name}=${v}: expected an integer >= ${min}`);
  return n;
}

const log = (m: string) => process.stderr.write(`[bench] ${m}\n`);

interface Machine {
  nproc: number;
  cpu: string;
  memoryGiB: number;
  kernel: string;
  engine: string;
  apiVersion: string;
  storageDriver: string;
  cgroup: string;
  compose: string;
  node: string;
  berthCommit: string;
}

async function machine(engine: RawEngine): Promise<Machine> {
  const v = await engine.version();
  const info = await engine.info();
  const compose = (await runCmd('docker-compose', ['version', '--short'])).stdout.trim();
  let commit = 'unknown';
  try {
    commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { cwd: REPO, encoding: 'utf8' }).trim();
    const dirty = execFileSync('git', ['status', '--porcelain', '--', 'src'], { cwd: REPO, encoding: 'utf8' }).trim();
    if (dirty) commit += ' + uncommitted changes in src/';
  } catch {
    /* not a checkout */
  }
  return {
    nproc: os.availableParallelism(),
    cpu: os.cpus()[0]?.model ?? 'unknown',
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    kernel: os.release(),
    engine: v.Version,
    apiVersion: v.ApiVersion,
    storageDriver: info.Driver,
    cgroup: `v${info.CgroupVersion ?? '?'} (${info.CgroupDriver ?? '?'})`,
    compose,
    node: process.version,
    berthCommit: commit,
  };
}

async function preflight(engine: RawEngine): Promise<void> {
  try {
    await engine.ping();
  } catch (err) {
    throw new Error(`no Docker engine answers on ${engine.socketPath} (${(err as Error).message}): run ./scripts/bench-deps.sh (make bench does)`);
  }
  const img = await engine.request('GET', '/images/berth%2Fbusybox:local/json');
  if (img.status !== 200) throw new Error('image berth/busybox:local is missing: run ./scripts/images.sh (make bench does)');
  try {
    await runCmd('docker-compose', ['version', '--short']);
  } catch (err) {
    throw new Error(`docker-compose is missing or broken (${(err as Error).message.split('\n')[0]}): run ./scripts/bench-deps.sh (make bench does)`);
  }
  try {
    await runCmd('docker', ['version', '--format', '{{.Client.Version}}']);
  } catch (err) {
    throw new Error(`the docker CLI is missing (${(err as Error).message.split('\n')[0]})`);
  }
  await fs.access(path.join(REPO, 'dist', 'cli', 'index.js')).catch(() => {
    throw new Error('berth is not built (dist/cli/index.js): run npm run build (make bench does)');
  });
  const v = await berth(['--version']);
  if (v.code !== 0) throw new Error('node bin/berth.js --version failed');
}

interface Results {
  profiles: { title: string; file: string }[];
  startupCpu?: StartupSamples;
  hundredk?: HundredkSamples;
  /** The controller watching 100,000 specs (tenk.ts at 100,000; BENCH_ONLY=hundredk). */
  tenk100k?: TenkSamples;
  /** `node bin/berth.js --version` and `node -e 0`, alternating: what start-up costs berth's CLI. */
  startup?: { berthVersion: number[]; bareNode: number[] };
  cold?: ColdSamples;
  noop?: NoopResult;
  drop?: DropSamples;
  at1000?: ControllerAt1000;
  clean1000Ms?: number;
  harvest?: HarvestSamples;
  credentials?: CredentialSamples;
  disk?: DiskSamples;
  redact?: RedactSamples;
  exec?: ExecSamples;
  grade?: GradeSamples;
  fixture?: FixtureSamples;
  report?: ReportSamples;
  sets?: SetSamples;
  compare?: CompareSamples;
  completion?: CompletionSamples;
  git?: GitSamples;
  swarm?: SwarmSamples;
  /** 100,000 short attempts on the swarm, extrapolated from a sample on one node and on two (BENCH_ONLY=swarm-scale). */
  swarmScale?: SwarmScaleSamples;
  fleet?: FleetSamples;
  tenk?: TenkSamples;
  fixturePlan?: FixturePlanSamples;
  images?: ImagesSamples;
  build?: BuildSamples;
}

/** Specs from git: commit → running by polling and by webhook, and what a no-op poll costs. */
function gitRows(g: GitSamples, rows: Row[]): void {
  const poll = summarize(g.poll);
  const hook = summarize(g.hook);
  rows.push({
    id: 'git-poll',
    workload: `Specs from git: commit → first container started, polling every ${g.intervalMs / 1000} s (${g.poll.length} commits)`,
    berth: `median ${fmtMs(poll.median)}, max ${fmtMs(poll.max)}`,
    reference: 'poll interval + 1 s',
    refValue: fmtMs(g.intervalMs + 1000),
    target: `max ≤ ${fmtMs(g.intervalMs + 1000)}`,
    verdict: verdictOf(poll.max <= g.intervalMs + 1000),
  });
  rows.push({
    id: 'git-webhook',
    workload: `Specs from git: signed webhook POST → first container started (${g.hook.length} commits)`,
    berth: `median ${fmtMs(hook.median)}, max ${fmtMs(hook.max)}`,
    reference: '1 s',
    refValue: '1 s',
    target: 'median ≤ 1 s',
    verdict: verdictOf(hook.median <= 1000),
  });
  const polls = Math.round(g.noop.windowMs / g.intervalMs);
  rows.push({
    id: 'git-noop',
    workload: `Specs from git: no-op polls of an unchanged repository (${(g.noop.windowMs / 1000).toFixed(1)} s)`,
    berth: `${g.noop.fetches} git fetches, ${g.noop.mutations} engine events`,
    reference: `${polls} polls`,
    refValue: `${polls} fetches, 0 events`,
    target: 'one fetch a poll, no engine mutation',
    verdict: verdictOf(g.noop.mutations === 0 && Math.abs(g.noop.fetches - polls) <= 1),
  });
}

function startupRows(st: StartupSamples, rows: Row[]): void {
  const node = summarize(st.cpu.bareNode);
  for (const [id, xs, what] of [
    ['startup-version', st.cpu.version, '`berth --version`'],
    ['startup-validate', st.cpu.validate, `\`berth validate\` of a folder of ${st.attempts} attempts`],
    ['startup-get', st.cpu.get, `\`berth get\` of ${st.attempts} attempts (finished, with their records; no engine call)`],
  ] as const) {
    const r = pairedRatio(xs, st.cpu.bareNode);
    const med = summarize(xs).median;
    rows.push({
      id,
      workload: `Start-up: ${what}, CPU (user + system), median of ${xs.length} runs (wall ${fmtMs(summarize(st.wall[id === 'startup-version' ? 'version' : id === 'startup-validate' ? 'validate' : 'get']).median)})`,
      berth: spread(summarize(xs)),
      reference: '`node -e 0`, same rounds, alternating',
      refValue: spread(node),
      ratio: r,
      target: `≤ ${TARGETS.startupVsNode}× (medians)`,
      verdict: verdictOf(med <= TARGETS.startupVsNode * node.median),
      chart: { label: `${id.replace('startup-', 'start-up: ')} CPU vs node -e 0`, target: TARGETS.startupVsNode },
    });
  }
}

/** 100,000 cells (issue 55): each command's median wall time, CPU and peak RSS, against the issue's absolute targets. */
function hundredkRows(h: HundredkSamples, c: TenkSamples | undefined, rows: Row[]): void {
  const med = (xs: Took[], k: keyof Took) => summarize(xs.map((x) => x[k])).median;
  const fig = (xs: Took[]) =>
    `${spread(summarize(xs.map((x) => x.wallMs)))}; CPU ${fmtMs(med(xs, 'cpuMs'))}; peak RSS ${(med(xs, 'rssKb') / 1024).toFixed(0)} MB`;
  const fleets = { sets: '10 AttemptSets of 10,000 (500 tasks × 20 seeds)', one: 'one AttemptSet of 100,000 (maxChildren)' } as const;
  for (const f of ['sets', 'one'] as const) {
    const x = h.fleets[f];
    for (const [id, xs, what, ms, mb] of [
      ['validate', x.validate, '`berth validate`', HUNDREDK_TARGETS.validateMs, HUNDREDK_TARGETS.validateMb],
      ['plan-fresh', x.planFresh, '`berth plan` (nothing started), fresh state folder', HUNDREDK_TARGETS.planMs, HUNDREDK_TARGETS.planMb],
      ['plan-kept', x.planKept, '`berth plan`, state folder kept (its spec cache)', HUNDREDK_TARGETS.planMs, HUNDREDK_TARGETS.planMb],
    ] as const) {
      rows.push({
        id: `hundredk-${f}-${id}`,
        workload: `100,000 cells, ${fleets[f]}: ${what}, new process; wall (min–max), CPU, peak RSS (medians of ${xs.length})`,
        berth: fig(xs),
        reference: '—',
        refValue: '—',
        target: `≤ ${fmtMs(ms)} and ≤ ${mb} MB`,
        verdict: verdictOf(med(xs, 'wallMs') <= ms && med(xs, 'rssKb') / 1024 <= mb),
      });
    }
  }
  for (const [id, xs, what] of [
    ['get', h.get, '`berth get` (a table of 100,000 rows)'],
    ['summary', h.summary, '`berth summary`'],
  ] as const) {
    rows.push({
      id: `hundredk-${id}`,
      workload: `${what} over 100,000 finished records (records read from their index; the first get, which read the 100,000 files and kept it: ${fmtMs(h.getFirst.wallMs)}, CPU ${fmtMs(h.getFirst.cpuMs)})`,
      berth: fig(xs),
      reference: '—',
      refValue: '—',
      target: `≤ ${fmtMs(HUNDREDK_TARGETS.getMs)}`,
      verdict: verdictOf(med(xs, 'wallMs') <= HUNDREDK_TARGETS.getMs),
    });
  }
  const r = h.report;
  rows.push({
    id: 'hundredk-report-size',
    workload: `Fleet report of ${r.attempts.toLocaleString('en')} finished cells: file size (made in ${fmtMs(r.buildMs)}, in-process)`,
    berth: `${(r.bytes / 1024 / 1024).toFixed(1)} MB`,
    reference: '—',
    refValue: '—',
    target: `≤ ${HUNDREDK_TARGETS.reportBytes / 1024 / 1024} MB`,
    verdict: verdictOf(r.bytes <= HUNDREDK_TARGETS.reportBytes),
  });
  const open = summarize(r.openMs);
  rows.push({
    id: 'hundredk-report-open',
    workload: `Fleet report of ${r.attempts.toLocaleString('en')} finished cells in headless chromium: opened until loaded, its heatmap drawn (${r.heatCells} cells) and the table's first page shown (first paint ${fmtMs(summarize(r.firstPaintMs).median)})`,
    berth: spread(open),
    reference: 'a minimal page, same browser, alternating',
    refValue: spread(summarize(r.minimalOpenMs)),
    ratio: pairedRatio(r.openMs, r.minimalOpenMs),
    target: `≤ ${fmtMs(HUNDREDK_TARGETS.reportOpenMs)}`,
    verdict: verdictOf(open.median <= HUNDREDK_TARGETS.reportOpenMs),
  });
  if (c) hundredkControllerRows(c, rows);
}

/** The controller watching 100,000 specs (tenk.ts at 100,000): a first start, and a restart when measured. */
function hundredkControllerRows(c: TenkSamples, rows: Row[]): void {
  for (const [k, tag, what] of [
    [c.controller, '', ''],
    ...(c.restart ? [[c.restart, '-restart', ', restarted (its state folder and spec cache kept)'] as const] : []),
  ] as const) {
    const n = `${c.specs.toLocaleString('en')} specs (${(c.specs - c.running).toLocaleString('en')} finished and collected, ${c.running} running)`;
    const pct = (100 * k.idleCpuMs) / k.idleWindowMs;
    rows.push({
      id: `hundredk-controller${tag}-rss`,
      workload: `Controller watching ${n}${what}: peak RSS (VmHWM)`,
      berth: `${(k.rssPeakKb / 1024).toFixed(0)} MB (before the drops ${(k.rssPeakBeforeDropsKb / 1024).toFixed(0)} MB; idle ${(k.rssIdleKb / 1024).toFixed(0)} MB)`,
      reference: '—',
      refValue: '—',
      target: '≤ 1,024 MB',
      verdict: verdictOf(k.rssPeakKb / 1024 <= 1024),
    });
    rows.push({
      id: `hundredk-controller${tag}-ready`,
      workload: `Controller watching ${n}${what}: start-up + first pass until idle (its line "synced" logged, then idle)`,
      berth: fmtMs(k.readyMs),
      reference: '—',
      refValue: '—',
      target: '≤ 30 s',
      verdict: verdictOf(k.readyMs <= 30_000),
    });
    rows.push({
      id: `hundredk-controller${tag}-idle-cpu`,
      workload: `Controller watching ${n}${what}: CPU while idle`,
      berth: `${k.idleCpuMs} ms over ${(k.idleWindowMs / 1000).toFixed(1)} s = ${pct.toFixed(2)}% of a core`,
      reference: '—',
      refValue: '—',
      target: '≤ 1% of a core',
      verdict: verdictOf(pct <= 1),
    });
    if (k.drops.berth.length) {
      const d = summarize(k.drops.berth);
      rows.push({
        id: `hundredk-controller${tag}-drop`,
        workload: `Controller watching ${n}${what}: a dropped spec file → its container running (${d.n} drops; the engine's own create+start ${fmtMs(summarize(k.drops.floor).median)})`,
        berth: `median ${fmtMs(d.median)} (${k.drops.berth.map((x) => x.toFixed(0)).join(', ')} ms)`,
        reference: '—',
        refValue: '—',
        target: '≤ 500 ms',
        verdict: verdictOf(d.median <= 500),
      });
    }
  }
}

function coldRows(c: ColdSamples, rows: Row[]): void {
  const s = (xs: number[]) => summarize(xs);
  const r1 = pairedRatio(c.start.berth, c.start.raw);
  rows.push({
    id: 'cold-vs-floor',
    workload: 'Cold start, 50 attempts, 8 in flight',
    berth: spread(s(c.start.berth)),
    reference: 'raw Engine API create+start (floor)',
    refValue: spread(s(c.start.raw)),
    ratio: r1,
    target: `≤ ${TARGETS.coldVsFloor}×`,
    verdict: verdictOf(r1.median <= TARGETS.coldVsFloor),
    chart: { label: 'cold start 50 vs raw API', target: TARGETS.coldVsFloor },
  });
  const r2 = pairedRatio(c.start.berth, c.start.compose);
  rows.push({
    id: 'cold-vs-compose',
    workload: 'Cold start, 50 attempts, 8 in flight',
    berth: spread(s(c.start.berth)),
    reference: 'docker-compose up -d (its default parallelism: all 50 in flight, see BENCHMARKS.md)',
    refValue: spread(s(c.start.compose)),
    ratio: r2,
    target: '< 1× (faster)',
    verdict: verdictOf(r2.median < 1),
    chart: { label: 'cold start 50 vs docker-compose', target: 1 },
  });
  const r3 = pairedRatio(c.start.berth, c.start.dockerRun);
  rows.push({
    id: 'cold-vs-docker-run',
    workload: 'Cold start, 50 attempts, 8 in flight',
    berth: spread(s(c.start.berth)),
    reference: '`docker run -d` ×50, 8 in parallel',
    refValue: spread(s(c.start.dockerRun)),
    ratio: r3,
    target: '—',
    verdict: 'info',
    chart: { label: 'cold start 50 vs docker run loop' },
  });
  const r5 = pairedRatio(c.start.berthInProcess, c.start.raw);
  rows.push({
    id: 'cold-inprocess-vs-floor',
    workload: 'Cold start, 50 attempts, 8 in flight — berth in-process (no node start-up)',
    berth: spread(s(c.start.berthInProcess)),
    reference: 'raw Engine API create+start (floor)',
    refValue: spread(s(c.start.raw)),
    ratio: r5,
    target: '—',
    verdict: 'info',
    chart: { label: 'cold start 50, in-process, vs raw API' },
  });
  const r4 = pairedRatio(c.noop50.berthCli, c.noop50.compose);
  rows.push({
    id: 'noop50-vs-compose',
    workload: 'No-op pass at 50 running (CLI)',
    berth: spread(s(c.noop50.berthCli)),
    reference: 'docker-compose no-op up -d',
    refValue: spread(s(c.noop50.compose)),
    ratio: r4,
    target: '—',
    verdict: 'info',
    chart: { label: 'no-op at 50 (CLI) vs docker-compose' },
  });
}

function teardownRows(c: ColdSamples, rows: Row[]): void {
  const r1 = pairedRatio(c.teardown.berth, c.teardown.raw);
  rows.push({
    id: 'teardown-vs-floor',
    workload: 'Teardown of 50 running',
    berth: `berth clean: ${spread(summarize(c.teardown.berth))}`,
    reference: 'raw API list + force-remove, 8 in flight (floor)',
    refValue: spread(summarize(c.teardown.raw)),
    ratio: r1,
    target: `≤ ${TARGETS.teardownVsFloor}×`,
    verdict: verdictOf(r1.median <= TARGETS.teardownVsFloor),
    chart: { label: 'teardown 50 vs raw API', target: TARGETS.teardownVsFloor },
  });
  const r3 = pairedRatio(c.teardown.berthInProcess, c.teardown.raw);
  rows.push({
    id: 'teardown-inprocess-vs-floor',
    workload: 'Teardown of 50 running — berth in-process (no node start-up)',
    berth: `berth clean: ${spread(summarize(c.teardown.berthInProcess))}`,
    reference: 'raw API list + force-remove, 8 in flight (floor)',
    refValue: spread(summarize(c.teardown.raw)),
    ratio: r3,
    target: '—',
    verdict: 'info',
    chart: { label: 'teardown 50, in-process, vs raw API' },
  });
  const r2 = pairedRatio(c.teardown.berth, c.teardown.compose);
  rows.push({
    id: 'teardown-vs-compose',
    workload: 'Teardown of 50 running',
    berth: `berth clean: ${spread(summarize(c.teardown.berth))}`,
    reference: 'docker-compose down',
    refValue: spread(summarize(c.teardown.compose)),
    ratio: r2,
    target: '—',
    verdict: 'info',
    chart: { label: 'teardown 50 vs docker-compose down' },
  });
}

function noopRows(n: NoopResult, rows: Row[]): void {
  const largest = n.scales[n.scales.length - 1];
  for (const sc of n.scales) {
    const isMax = sc === largest;
    const r = pairedRatio(sc.inproc, sc.floor);
    rows.push({
      id: `noop${sc.n}-inproc`,
      workload: `No-op pass at ${sc.n.toLocaleString('en')} finished, in-process`,
      berth: spread(summarize(sc.inproc)),
      reference: 'the pass’s 4 label-filtered lists, raw API (floor)',
      refValue: spread(summarize(sc.floor)),
      ratio: r,
      target: isMax ? `≤ ${TARGETS.noopVsFloor}×` : '—',
      verdict: isMax ? verdictOf(r.median <= TARGETS.noopVsFloor) : 'info',
      chart: { label: `no-op pass at ${sc.n} (in-process) vs lists`, ...(isMax ? { target: TARGETS.noopVsFloor } : {}) },
    });
  }
  if (largest) {
    const r = pairedRatio(largest.cli, largest.floor);
    rows.push({
      id: `noop${largest.n}-cli`,
      workload: `No-op pass at ${largest.n.toLocaleString('en')} finished, CLI process (node start-up included)`,
      berth: spread(summarize(largest.cli)),
      reference: 'the pass’s 4 label-filtered lists, raw API (floor)',
      refValue: spread(summarize(largest.floor)),
      ratio: r,
      target: '—',
      verdict: 'info',
      chart: { label: `no-op pass at ${largest.n} (CLI) vs lists` },
    });
  }
  if (largest && largest.bareNode.length) {
    const plus = largest.floor.map((f, i) => f + (largest.bareNode[i] ?? NaN));
    const r = pairedRatio(largest.cli, plus);
    rows.push({
      id: `noop${largest.n}-cli-ci`,
      workload: `No-op \`reconcile --once\` at ${largest.n.toLocaleString('en')}, new process, state folder kept (berth's spec cache on disk)`,
      berth: spread(summarize(largest.cli)),
      reference: 'floor lists + `node -e 0`, same round',
      refValue: spread(summarize(plus)),
      ratio: r,
      target: `≤ ${TARGETS.noopCliVsFloorPlusNode}×`,
      verdict: verdictOf(r.median <= TARGETS.noopCliVsFloorPlusNode),
      chart: { label: `no-op at ${largest.n} (CLI, state kept) vs lists + node`, target: TARGETS.noopCliVsFloorPlusNode },
    });
    // The target's other reading, "2.5 × the floor, plus Node's start-up": berth's time less the
    // same round's `node -e 0`, over the floor alone (information: BENCHMARKS.md, round ten).
    const less = largest.cli.map((c, i) => c - (largest.bareNode[i] ?? NaN));
    const r3 = pairedRatio(less, largest.floor);
    rows.push({
      id: `noop${largest.n}-cli-less-node`,
      workload: `No-op \`reconcile --once\` at ${largest.n.toLocaleString('en')}, state folder kept, less \`node -e 0\` of the same round`,
      berth: spread(summarize(less)),
      reference: 'the pass’s 4 label-filtered lists, raw API (floor)',
      refValue: spread(summarize(largest.floor)),
      ratio: r3,
      target: '—',
      verdict: 'info',
      chart: { label: `no-op at ${largest.n} (CLI less node) vs lists` },
    });
    const r2 = pairedRatio(largest.cliNoCache, plus);
    rows.push({
      id: `noop${largest.n}-cli-nocache`,
      workload: `No-op \`reconcile --once\` at ${largest.n.toLocaleString('en')}, new process, no spec cache on disk (first run)`,
      berth: spread(summarize(largest.cliNoCache)),
      reference: 'floor lists + `node -e 0`, same round',
      refValue: spread(summarize(plus)),
      ratio: r2,
      target: '—',
      verdict: 'info',
      chart: { label: `no-op at ${largest.n} (CLI, no cache) vs lists + node` },
    });
  }
  if (largest?.ab && largest.ab.cli.length) {
    const ab = largest.ab;
    // The other build's pass in the same rotations (BENCH_AB; over a copy of the state folder).
    const plus = largest.floor.map((f, i) => f + (largest.bareNode[i] ?? NaN));
    rows.push({
      id: `noop${largest.n}-cli-build-${ab.label}`,
      workload: `No-op \`reconcile --once\` at ${largest.n.toLocaleString('en')}, build ${ab.label} (BENCH_AB; same rounds, state folder copied)`,
      berth: spread(summarize(ab.cli)),
      reference: 'floor lists + `node -e 0`, same round',
      refValue: spread(summarize(plus)),
      ratio: pairedRatio(ab.cli, plus),
      target: '—',
      verdict: 'info',
    });
    rows.push({
      id: `noop${largest.n}-cli-cpu-vs-${ab.label}`,
      workload: `No-op \`reconcile --once\` at ${largest.n.toLocaleString('en')}, CPU (user + system): this build against build ${ab.label} (BENCH_AB)`,
      berth: spread(summarize(ab.thisCpu)),
      reference: `build ${ab.label}, same rounds`,
      refValue: spread(summarize(ab.cpu)),
      ratio: pairedRatio(ab.thisCpu, ab.cpu),
      target: '—',
      verdict: 'info',
    });
  }
  const calls = n.scales.map((sc) => sc.calls);
  const all = calls.flat();
  const fixed = all.length > 0 && all.every((c) => c === all[0]);
  rows.push({
    id: 'noop-calls',
    workload: 'Engine calls per no-op pass',
    berth: n.scales.map((sc) => `${[...new Set(sc.calls)].join('/')} at ${sc.n.toLocaleString('en')}`).join(', '),
    reference: '—',
    refValue: '—',
    target: 'the same at every size',
    verdict: verdictOf(fixed),
  });
}

function dropRows(d: DropSamples, at1000: ControllerAt1000 | undefined, rows: Row[]): void {
  const floor = summarize(d.floor);
  const overhead = summarize(d.berth.map((x) => x - floor.median));
  const ratio = summarize(d.berth.map((x) => x / floor.median));
  rows.push({
    id: 'drop-overhead',
    workload: `Drop-to-running overhead, controller (${d.berth.length} drops)`,
    berth: `median ${fmtMs(overhead.median)}, p95 ${fmtMs(overhead.p95)} (spec written → started: ${fmtMs(summarize(d.berth).median)})`,
    reference: 'raw create+start of one container (start event)',
    refValue: spread(floor),
    ratio,
    target: `overhead median ≤ ${TARGETS.dropOverheadMs} ms`,
    verdict: verdictOf(overhead.median <= TARGETS.dropOverheadMs),
    chart: { label: 'drop-to-running vs raw create+start' },
  });
  if (at1000 && at1000.drops.berth.length) {
    const o2 = summarize(at1000.drops.berth.map((x) => x - floor.median));
    rows.push({
      id: 'drop-overhead-1000',
      workload: `Drop-to-running overhead, controller watching ${at1000.specs.toLocaleString('en')} (${o2.n} drops)`,
      berth: `median ${fmtMs(o2.median)}, p95 ${fmtMs(o2.p95)}`,
      reference: 'raw create+start of one container (start event)',
      refValue: spread(floor),
      ratio: summarize(at1000.drops.berth.map((x) => x / floor.median)),
      target: '—',
      verdict: 'info',
      chart: { label: `drop-to-running at ${at1000.specs} vs raw` },
    });
  }
}

function resourceRows(r: ControllerAt1000, rows: Row[]): void {
  const mb = r.rssPeakKb / 1024;
  rows.push({
    id: 'controller-rss',
    workload: `Controller watching ${r.specs.toLocaleString('en')} specs: peak RSS (VmHWM)`,
    berth: `${mb.toFixed(0)} MB (peak before the drops ${(r.rssPeakBeforeDropsKb / 1024).toFixed(0)} MB; idle RSS ${(r.rssIdleKb / 1024).toFixed(0)} MB)`,
    reference: '—',
    refValue: '—',
    target: `≤ ${TARGETS.rssMb} MB`,
    verdict: verdictOf(mb <= TARGETS.rssMb),
  });
  const pct = (r.idleCpuMs / r.idleWindowMs) * 100;
  rows.push({
    id: 'controller-idle-cpu',
    workload: `Controller watching ${r.specs.toLocaleString('en')} specs: CPU while idle`,
    berth: `${r.idleCpuMs.toFixed(0)} ms over ${(r.idleWindowMs / 1000).toFixed(1)} s = ${pct.toFixed(2)}% of a core`,
    reference: '—',
    refValue: '—',
    target: `~0 (≤ ${TARGETS.idleCpuPct}% of a core)`,
    verdict: verdictOf(pct <= TARGETS.idleCpuPct),
  });
  rows.push({
    id: 'controller-ready',
    workload: `Controller watching ${r.specs.toLocaleString('en')} specs: start-up + first pass until idle`,
    berth: fmtMs(r.readyMs),
    reference: '—',
    refValue: '—',
    target: '—',
    verdict: 'info',
  });
}

function harvestRows(h: HarvestSamples, rows: Row[]): void {
  const r = pairedRatio(h.berth, h.floor);
  rows.push({
    id: 'harvest',
    workload: `Harvest of a run with ${h.files.toLocaleString('en')} files (${(h.bytes / 1024 / 1024).toFixed(1)} MiB): log, manifest (every file hashed), status`,
    berth: spread(summarize(h.berth)),
    reference: `the engine's archive of the folder (docker cp) ${fmtMs(summarize(h.archive).median)} + a plain walk ${fmtMs(summarize(h.walk).median)} (floor)`,
    refValue: spread(summarize(h.floor)),
    ratio: r,
    target: `≤ ${TARGETS.harvestVsFloor}×`,
    verdict: verdictOf(r.median <= TARGETS.harvestVsFloor),
    chart: { label: `harvest of ${h.files} files vs archive + walk`, target: TARGETS.harvestVsFloor },
  });
}

function credentialRows(c: CredentialSamples, rows: Row[]): void {
  const added = c.berth.map((b, i) => b - (c.direct[i] as number));
  const a = summarize(added);
  rows.push({
    id: 'credential-proxy',
    workload: `One request with an injected credential, each on a fresh connection: plain HTTP through berth's egress proxy, which opens verified TLS to the upstream and sets the header (median of ${c.requests} a round; p95 ${fmtMs(summarize(c.berthP95).median)})`,
    berth: spread(summarize(c.berth)),
    reference: `a direct TLS call to the same upstream, header set by the client (p95 ${fmtMs(summarize(c.directP95).median)}); added by the proxy: ${fmtMs(a.median)} (${fmtMs(a.min)}–${fmtMs(a.max)})`,
    refValue: spread(summarize(c.direct)),
    ratio: pairedRatio(c.berth, c.direct),
    target: `≤ +${TARGETS.credentialAddedMs} ms`,
    verdict: verdictOf(a.median <= TARGETS.credentialAddedMs),
  });
}

function diskRows(d: DiskSamples, rows: Row[]): void {
  const r = pairedRatio(d.berthCpu, d.duCpu);
  const cpu = summarize(d.berthCpu);
  rows.push({
    id: 'disk-measure',
    workload: `One disk-measuring interval over ${d.attempts.toLocaleString('en')} running attempts (${d.entries.toLocaleString('en')} entries, their writable layers and results folders; generated trees, no containers): CPU, as a share of the 10 s interval ${((cpu.median / 10_000) * 100).toFixed(1)} %; wall ${fmtMs(summarize(d.berthWall).median)}`,
    berth: spread(cpu),
    reference: `a plain du -s of the same folders (its CPU; wall ${fmtMs(summarize(d.duWall).median)})`,
    refValue: spread(summarize(d.duCpu)),
    ratio: r,
    target: `≤ ${TARGETS.diskVsDu}×`,
    verdict: verdictOf(r.median <= TARGETS.diskVsDu),
    chart: { label: `disk measure of ${d.attempts} attempts vs du -s`, target: TARGETS.diskVsDu },
  });
}

function redactRows(x: RedactSamples, rows: Row[]): void {
  const r = pairedRatio(x.redacted, x.plain);
  const mbps = (ms: number[]) => `${(x.logBytes / 2 ** 20 / (summarize(ms).median / 1000)).toFixed(0)} MiB/s`;
  rows.push({
    id: 'redact',
    workload: `Harvest of a ${(x.logBytes / 2 ** 20).toFixed(0)} MiB container log into logs.txt with ${x.secrets} secrets to redact (each plain, base64 ×6, hex ×2): ${mbps(x.redacted)}`,
    berth: spread(summarize(x.redacted)),
    reference: `the same harvest with no secret (the plain copy): ${mbps(x.plain)}`,
    refValue: spread(summarize(x.plain)),
    ratio: r,
    target: `≤ ${TARGETS.redactVsPlain}×`,
    verdict: verdictOf(r.median <= TARGETS.redactVsPlain),
    chart: { label: `log harvest with 5 secrets vs none`, target: TARGETS.redactVsPlain },
  });
}

function execRows(x: ExecSamples, rows: Row[]): void {
  const r = pairedRatio(x.api, x.docker);
  const per = Math.round(x.execs / x.api.length);
  rows.push({
    id: 'exec',
    workload: `${per} execs of true, one at a time, through berth's API (POST /v1/attempts/NAME/exec on the Unix socket, a connection each) into a running sandbox; one round trip p95 ${fmtMs(p95(x.oneApi))}`,
    berth: spread(summarize(x.api)),
    reference: `${per} docker exec calls (the docker CLI) into the same container`,
    refValue: spread(summarize(x.docker)),
    ratio: r,
    target: `≤ ${TARGETS.execVsDocker}×`,
    verdict: verdictOf(r.median <= TARGETS.execVsDocker),
    chart: { label: `${per} execs through the API vs docker exec`, target: TARGETS.execVsDocker },
  });
  const d = pairedRatio(x.dropBusy, x.dropIdle);
  rows.push({
    id: 'exec-busy-loop',
    workload: `The reconcile loop beside 100 execs at once through the API (${x.busyExecs} ended meanwhile): a new spec's drop-to-running`,
    berth: spread(summarize(x.dropBusy)),
    reference: 'the same drop-to-running with the controller idle',
    refValue: spread(summarize(x.dropIdle)),
    ratio: d,
    target: 'info',
    verdict: 'info',
  });
  // what berth's API path adds to a drop beside 100 execs, over the engine's own work for them (older results have no such samples)
  if (!x.dropEngine?.length) return;
  const e = pairedRatio(x.dropBusy, x.dropEngine);
  rows.push({
    id: 'exec-busy-engine',
    workload: `The reconcile loop beside 100 execs at once through the API (${x.busyExecs} ended meanwhile): a new spec's drop-to-running`,
    berth: spread(summarize(x.dropBusy)),
    reference: `the same drop-to-running beside 100 execs made on the engine directly, no berth in their path (${x.engineExecs} ended meanwhile)`,
    refValue: spread(summarize(x.dropEngine)),
    ratio: e,
    target: 'info',
    verdict: 'info',
  });
}

function gradeRows(g: GradeSamples, rows: Row[]): void {
  const r = pairedRatio(g.berth, g.floor);
  const med = (xs: number[]) => fmtMs(summarize(xs).median);
  rows.push({
    id: 'grade',
    workload: `Export + grade of one attempt: ${g.files.toLocaleString('en')}-file fixture (${(g.fixtureBytes / 2 ** 20).toFixed(1)} MiB), ${g.changed.modified} files modified and ${g.changed.added} added; berth's export ${med(g.exportMs)} + its grader (archive composed less protect, created, put, started, waited for, finished, removed) ${med(g.gradeMs)}`,
    berth: spread(summarize(g.berth)),
    reference: `the engine's archive of workingDir (docker cp) ${med(g.archiveMs)} + a fresh container with the same tree (${(g.inputBytes / 2 ** 20).toFixed(1)} MiB) in one PUT archive, started, waited for, logs, removed ${med(g.graderMs)} (floor)`,
    refValue: spread(summarize(g.floor)),
    ratio: r,
    target: `≤ ${TARGETS.gradeVsFloor}×`,
    verdict: verdictOf(r.median <= TARGETS.gradeVsFloor),
    chart: { label: 'export + grade vs archive + fresh container', target: TARGETS.gradeVsFloor },
  });
}

function fixtureRows(f: FixtureSamples, rows: Row[]): void {
  const r = pairedRatio(f.berth, f.peer);
  rows.push({
    id: 'large-fixture',
    workload: `Large fixture: a generated tree of ${f.files.toLocaleString('en')} files (${(f.bytes / 2 ** 20).toFixed(0)} MiB, nested folders, mixed sizes) copied into ${f.attempts} containers, ${f.parallel} at a time; berth packs it once into its cache (a fresh one each round) and streams it to each, with the run's workspace-base.json`,
    berth: spread(summarize(f.berth)),
    reference: `docker cp of the same tree into the same kind of containers, ${f.parallel} at a time (peer)`,
    refValue: spread(summarize(f.peer)),
    ratio: r,
    target: `≤ ${TARGETS.fixtureVsDockerCp}×`,
    verdict: verdictOf(r.median <= TARGETS.fixtureVsDockerCp),
    chart: { label: `large fixture into ${f.attempts} containers vs docker cp`, target: TARGETS.fixtureVsDockerCp },
  });
  rows.push({
    id: 'shared-base-layer',
    workload: `A set of ${f.shared.children} children over that tree as a shared base layer, each with a small layer of its own (archives made and read, ${fmtMs(f.shared.ms)})`,
    berth: `${f.shared.packs} layers packed: the base ${f.shared.basePacks}×, ${f.shared.packs - f.shared.basePacks} task layers`,
    reference: 'the base packed once',
    refValue: '1',
    target: 'base packed 1×',
    verdict: verdictOf(f.shared.basePacks === 1),
  });
}

function fixturePlanRows(f: FixturePlanSamples, rows: Row[]): void {
  const r = pairedRatio(f.berth, f.floor);
  rows.push({
    id: 'fixture-plan',
    workload: `\`plan\`'s spec load over an unchanged ${f.files.toLocaleString('en')}-file fixture (${(f.bytes / 2 ** 20).toFixed(0)} MiB), nothing kept in memory, digests kept on disk (${f.reads} files read; the first load, every file hashed: ${fmtMs(f.firstMs)})`,
    berth: spread(summarize(f.berth)),
    reference: 'a plain stat walk of the same tree: readdirSync + lstatSync of every entry (floor)',
    refValue: spread(summarize(f.floor)),
    ratio: r,
    target: `≤ ${TARGETS.fixturePlanVsWalk}×`,
    verdict: verdictOf(r.median <= TARGETS.fixturePlanVsWalk && f.reads === 0),
    chart: { label: 'plan over a large unchanged fixture vs stat walk', target: TARGETS.fixturePlanVsWalk },
  });
}

function reportRows(r: ReportSamples, rows: Row[]): void {
  const s = (xs: number[]) => summarize(xs);
  const kib = r.bytes / 1024;
  rows.push({
    id: 'report-size',
    workload: `Fleet report of ${r.attempts.toLocaleString('en')} attempts (berth report): file size`,
    berth: `${kib.toFixed(0)} KiB (made in ${spread(s(r.buildMs))})`,
    reference: '—',
    refValue: '—',
    target: `≤ ${TARGETS.reportBytes / 1024 / 1024} MB`,
    verdict: verdictOf(r.bytes <= TARGETS.reportBytes),
  });
  const fp = s(r.firstPaintMs);
  rows.push({
    id: 'report-first-paint',
    workload: `Fleet report of ${r.attempts.toLocaleString('en')} attempts: first paint in headless chromium (file opened from disk)`,
    berth: `${spread(fp)} (DOMContentLoaded ${spread(s(r.domContentLoadedMs))})`,
    reference: 'a minimal page, same browser, alternating',
    refValue: spread(s(r.minimalFirstPaintMs)),
    ratio: pairedRatio(r.firstPaintMs, r.minimalFirstPaintMs),
    target: `≤ ${fmtMs(TARGETS.reportFirstPaintMs)}`,
    verdict: verdictOf(fp.median <= TARGETS.reportFirstPaintMs),
  });
}

function setRows(r: SetSamples, rows: Row[]): void {
  const cold = summarize(r.setCold);
  const n = r.children.toLocaleString('en');
  rows.push({
    id: 'set-plan-cold',
    workload: `AttemptSet of ${n} children: \`berth plan\`, CLI, cold (new process, fresh state folder)`,
    berth: spread(cold),
    reference: '`berth plan` over one attempt, same rounds',
    refValue: spread(summarize(r.one)),
    ratio: pairedRatio(r.setCold, r.one),
    target: `median ≤ ${fmtMs(TARGETS.setPlanMs)}`,
    verdict: verdictOf(cold.median <= TARGETS.setPlanMs),
  });
  rows.push({
    id: 'set-plan-kept',
    workload: `AttemptSet of ${n} children: \`berth plan\`, CLI, state folder kept (as CI keeps it)`,
    berth: spread(summarize(r.setKept)),
    reference: '`node -e 0`, same rounds',
    refValue: spread(summarize(r.bareNode)),
    ratio: pairedRatio(r.setKept, r.bareNode),
    target: '—',
    verdict: 'info',
  });
  const same = JSON.stringify(r.calls.set) === JSON.stringify(r.calls.one);
  const fmt = (c: Record<string, number>) =>
    Object.entries(c)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  rows.push({
    id: 'set-calls',
    workload: `Engine calls of a pass over the set of ${n}`,
    berth: fmt(r.calls.set),
    reference: 'a pass over one attempt',
    refValue: fmt(r.calls.one),
    target: 'the same',
    verdict: verdictOf(same),
  });
}

function compareRows(r: CompareSamples, rows: Row[]): void {
  const cli = summarize(r.compare);
  const n = r.cells.toLocaleString('en');
  rows.push({
    id: 'compare-cli',
    workload: `\`berth compare --baseline\` over ${n} paired cells (${r.regressions.toLocaleString('en')} regressions), CLI, cold (new process)`,
    berth: spread(cli),
    reference: '`berth summary -o json` over the same set, same rounds',
    refValue: spread(summarize(r.summary)),
    ratio: pairedRatio(r.compare, r.summary),
    target: `median ≤ ${fmtMs(TARGETS.compareMs)}`,
    verdict: verdictOf(cli.median <= TARGETS.compareMs),
  });
  rows.push({
    id: 'compare-stats',
    workload: `The comparison alone over ${n} paired cells (pairing, 2,000 bootstrap resamples, exact McNemar), in-process`,
    berth: spread(summarize(r.inProcess)),
    reference: '—',
    refValue: '—',
    target: '—',
    verdict: 'info',
  });
}

function completionRows(c: CompletionSamples, rows: Row[]): void {
  for (const [id, xs, how] of [
    ['completion-controller', c.controller, 'the controller (`reconcile`)'],
    ['completion-wait', c.wait, '`reconcile --once --wait`'],
  ] as const) {
    const s = summarize(xs);
    rows.push({
      id,
      workload: `Completion detection in ${how}: container \`die\` event → finished status record (${s.n} attempts, 8 running)`,
      berth: `p50 ${fmtMs(s.median)}, p95 ${fmtMs(s.p95)} (max ${fmtMs(s.max)})`,
      reference: '—',
      refValue: '—',
      target: `p95 ≤ ${fmtMs(TARGETS.completionP95Ms)}`,
      verdict: verdictOf(s.p95 <= TARGETS.completionP95Ms),
    });
    const o = c.other;
    if (!o) continue;
    const t = summarize(id === 'completion-wait' ? o.wait : o.controller);
    rows.push({
      id: `${id}-build-${o.label}`,
      workload: `Completion detection in ${how}, build ${o.label} (BENCH_AB; run between this build's two)`,
      berth: `p50 ${fmtMs(t.median)}, p95 ${fmtMs(t.p95)} (max ${fmtMs(t.max)})`,
      reference: '—',
      refValue: '—',
      target: '—',
      verdict: 'info',
    });
  }
}

function details(res: Results): string {
  const out: string[] = [];
  if (res.startup) {
    const b = summarize(res.startup.berthVersion);
    const n = summarize(res.startup.bareNode);
    out.push(
      `CLI start-up, included in every berth CLI figure: \`node bin/berth.js --version\` ${spread(b)} vs \`node -e 0\` ${spread(n)}: loading berth's modules costs ${fmtMs(b.median - n.median)} per command.\n`,
    );
  }
  if (res.noop) {
    out.push('### No-op pass: where the time goes (in-process, median of rounds)\n');
    out.push(
      '| attempts | seeding (`reconcile --once --wait`) | pass | load specs | load status records | engine lists (observe) | floor lists | CLI pass | calls by op |',
    );
    out.push('|---:|---:|---:|---:|---:|---:|---:|---:|---|');
    for (const sc of res.noop.scales) {
      const m = (xs: number[]) => fmtMs(summarize(xs).median);
      const ops = Object.entries(sc.callsByOp)
        .map(([k, v]) => `${k} ${v}`)
        .join(', ');
      out.push(
        `| ${sc.n} | ${fmtMs(sc.seedMs)} | ${m(sc.inproc)} | ${m(sc.breakdown.loadSpecs)} | ${m(sc.breakdown.loadStatus)} | ${m(sc.breakdown.observe)} | ${m(sc.floor)} | ${m(sc.cli)} | ${ops} |`,
      );
    }
    out.push('');
  }
  if (res.grade) {
    const g = res.grade;
    const m = (xs: number[]) => fmtMs(summarize(xs).median);
    out.push('### Export + grade: where the time goes (median of rounds)\n');
    out.push('| contender | read the workspace | grader created, filled, started | grader waited for | its end read, removed | total |');
    out.push('|---|---:|---:|---:|---:|---:|');
    out.push(`| berth | export ${m(g.exportMs)} | ${m(g.steps.berth.start)} | ${m(g.steps.berth.wait)} | ${m(g.steps.berth.end)} | ${m(g.berth)} |`);
    out.push(`| floor | archive ${m(g.archiveMs)} | ${m(g.steps.floor.start)} | ${m(g.steps.floor.wait)} | ${m(g.steps.floor.end)} | ${m(g.floor)} |`);
    out.push('');
  }
  if (res.clean1000Ms !== undefined && res.noop) {
    const n = res.noop.scales[res.noop.scales.length - 1]?.n ?? 0;
    out.push(`\`berth clean\` of the ${n.toLocaleString('en')} finished attempts (clean-up, one sample): ${fmtMs(res.clean1000Ms)}.\n`);
  }
  return out.join('\n');
}

async function main(): Promise<void> {
  const t0 = Date.now();
  const rounds = envInt('BENCH_ROUNDS', 5);
  const noopPerRound = envInt('BENCH_NOOP_PER_ROUND', 3);
  const sizes = (process.env.BENCH_SIZES ?? '10,200,1000').split(',').map((x) => Number(x.trim()));
  if (sizes.some((x) => !Number.isInteger(x) || x < 1) || sizes.some((x, i) => i > 0 && x <= (sizes[i - 1] as number))) {
    throw new Error(`BENCH_SIZES=${process.env.BENCH_SIZES}: expected increasing positive integers`);
  }
  const dropN = envInt('BENCH_DROPS', 20);
  const dropsAtMax = envInt('BENCH_DROPS_AT_MAX', 5, 0);
  const only = process.env.BENCH_ONLY ? new Set(process.env.BENCH_ONLY.split(',').map((s) => s.trim())) : undefined;
  const want = (w: string) => !only || only.has(w);
  if (only)
    for (const w of only)
      if (
        ![
          'startup',
          'hundredk',
          'cold',
          'drop',
          'noop',
          'resources',
          'report',
          'harvest',
          'disk',
          'redact',
          'exec',
          'grade',
          'credentials',
          'sets',
          'compare',
          'completion',
          'git',
          'swarm',
          'swarm-scale',
          'fleet',
          'tenk',
          'fixture-plan',
          'fixture',
          'images',
          'build',
        ].includes(w)
      )
        throw new Error(`BENCH_ONLY: unknown workload ${w}`);
  if (want('resources') && !want('noop')) throw new Error('BENCH_ONLY: resources needs noop (the controller watches its attempts)');

  const loadStart = os.loadavg();
  const engine = new RawEngine(socketFromEnv());
  await preflight(engine);
  const m = await machine(engine);
  const run = new BenchRun();
  await run.init();
  log(`run ${run.id}: ${rounds} rounds; engine ${m.engine} (API ${m.apiVersion}), docker-compose ${m.compose}, ${m.nproc} cores, ${m.memoryGiB} GiB`);

  // One clean-up, whoever asks first (the run's finally, or a signal); it first ends the
  // children still running, so nothing it starts itself is ended by anyone.
  let cleaning: Promise<void> | undefined;
  const cleanupOnce = () =>
    (cleaning ??= (async () => {
      killLiveChildren();
      await cleanupRun(engine, run, log);
    })());
  let interrupted = false;
  const onSignal = (sig: NodeJS.Signals) => {
    if (interrupted) return;
    interrupted = true;
    log(`${sig}: stopping the bench's children and cleaning up`);
    cleanupOnce().then(
      () => process.exit(130),
      (err: Error) => {
        log(err.message);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  const profileDir =
    process.env.BENCH_PROFILE === '1' ? (process.env.BENCH_PROFILE_DIR ?? path.join(os.tmpdir(), `berth-bench-profiles-${run.id}`)) : undefined;
  if (profileDir) {
    await fs.mkdir(profileDir, { recursive: true });
    log(`CPU profiles go to ${profileDir}`);
  }
  const res: Results = { profiles: [] };
  let failure: unknown;
  try {
    const startup = { berthVersion: [] as number[], bareNode: [] as number[] };
    for (let i = 0; i < Math.max(5, rounds); i++) {
      startup.bareNode.push((await runCmd(process.execPath, ['-e', '0'])).ms);
      startup.berthVersion.push((await berth(['--version'])).ms);
    }
    res.startup = startup;
    if (want('startup')) {
      log('start-up: CPU of berth --version, validate and get of 15 attempts against node -e 0');
      res.startupCpu = await startupRounds(run, envInt('BENCH_STARTUP_RUNS', 15), log);
    }
    if (want('cold')) {
      res.cold = await coldRounds(engine, run, rounds, log);
      if (profileDir) {
        log('profiling berth: cold start and clean of 50 (untimed)');
        const p = await profileColdBerth(engine, run, profileDir);
        res.profiles.push(
          { title: 'berth reconcile --once, cold start of 50 (CLI process)', file: p.up },
          { title: 'berth clean of 50 running (CLI process)', file: p.clean },
        );
      }
    }
    if (want('drop')) {
      log(`drop-to-running: ${dropN} spec files dropped into a running controller's folder`);
      res.drop = await dropToRunning(engine, run, dropN, log);
    }
    if (want('noop')) {
      res.noop = await noopScales(engine, run, sizes, rounds, log, profileDir, noopPerRound);
      const n = sizes[sizes.length - 1] as number;
      if (res.noop.profiles) {
        res.profiles.push(
          { title: `no-op pass at ${n}, in-process (reconcilePass)`, file: res.noop.profiles.inproc },
          { title: `no-op pass at ${n}, CLI process`, file: res.noop.profiles.cli },
        );
      }
    }
    if (want('resources') && res.noop) {
      const n = sizes[sizes.length - 1] as number;
      log(`controller watching ${n} specs: idle CPU over 10 s, peak RSS${dropsAtMax ? `, ${dropsAtMax} drops` : ''}`);
      res.at1000 = await controllerAt1000(engine, run, res.noop.sandbox, n, dropsAtMax, log);
      if (profileDir) {
        log(`profiling the controller watching ${n} specs: start-up, first pass, 3 drops (untimed)`);
        const file = await profileController(engine, run, res.noop.sandbox, n, 3, profileDir, log);
        res.profiles.push({ title: `controller watching ${n} specs: start-up, first pass, 3 drops`, file });
      }
    }
    // The no-op's attempts (their 1,000 exited containers) go as soon as nothing needs them: every
    // list the engine answers walks all its containers, so they would slow the workloads after.
    if (res.noop) {
      const c = await berth(['clean', ...res.noop.sandbox.globalArgs('warn')]);
      res.clean1000Ms = c.ms;
    }
    if (want('git')) {
      log('specs from git: commit → running by polling and by webhook; no-op polls');
      res.git = await gitWorkload(engine, run, envInt('BENCH_GIT_COMMITS', 5), log);
    }
    if (want('fleet')) res.fleet = await fleetRounds(engine, run, envInt('BENCH_FLEET_ATTEMPTS', 300), rounds, log);
    if (want('images')) res.images = await imagesRounds(run, envInt('BENCH_IMAGES_ROUNDS', 3), log);
    if (want('build'))
      res.build = await buildRounds(
        run,
        {
          rounds: envInt('BENCH_BUILD_ROUNDS', 3),
          attempts: envInt('BENCH_BUILD_ATTEMPTS', 300),
          contexts: envInt('BENCH_BUILD_CONTEXTS', 20),
          noopAttempts: envInt('BENCH_BUILD_NOOP_ATTEMPTS', 300),
          noopSamples: envInt('BENCH_BUILD_NOOP_SAMPLES', 5),
        },
        log,
      );
    if (want('tenk')) res.tenk = await tenk(engine, run, envInt('BENCH_TENK_SPECS', 10_000), 50, dropsAtMax, log);
    if (want('completion')) {
      res.completion = await completion(engine, run, envInt('BENCH_COMPLETIONS', 40), log);
    }
    if (want('sets')) {
      const cells = envInt('BENCH_SET_CELLS', 100);
      log(`AttemptSet of ${cells * cells} children: berth plan, cold and with the state kept`);
      res.sets = await setRounds(cells, rounds, log);
    }
    if (want('compare')) {
      const cells = envInt('BENCH_COMPARE_CELLS', 100);
      log(`berth compare --baseline over ${cells * cells} paired cells, CLI, cold`);
      res.compare = await compareRounds(cells, rounds, log);
    }
    if (want('swarm')) {
      const swSizes = (process.env.BENCH_SWARM_SIZES ?? '10,200').split(',').map((x) => Number(x.trim()));
      log(`--backend swarm: drop-to-running against networks/create (the run's own overlay) + services/create, no-op passes at ${swSizes.join(', ')}`);
      res.swarm = await swarmWorkload(run, envInt('BENCH_SWARM_DROPS', 5), swSizes, Math.min(rounds, 3), log);
    }
    if (want('swarm-scale')) {
      log('--backend swarm: a sample of short attempts on one node and on two, its rate extrapolated to 100,000');
      res.swarmScale = await swarmScaleWorkload(
        run,
        envInt('BENCH_SWARM_SCALE_ATTEMPTS', 60, 4),
        envInt('BENCH_SWARM_SCALE_SLOTS', 6, 1),
        envInt('BENCH_SWARM_SCALE_ROUNDS', 2, 1),
        log,
      );
    }
    if (want('harvest')) res.harvest = await harvestRounds(engine, run, envInt('BENCH_HARVEST_FILES', 100_000), rounds, log);
    if (want('credentials')) {
      log('the egress proxy with an injected credential: plain HTTP through it to a TLS upstream, against a direct TLS call');
      res.credentials = await credentialRounds(rounds, envInt('BENCH_CRED_REQUESTS', 200, 10), log);
    }
    if (want('disk')) res.disk = await diskRounds(run, envInt('BENCH_DISK_ATTEMPTS', 1000), envInt('BENCH_DISK_ENTRIES', 100), rounds, log);
    if (want('redact')) res.redact = await redactRounds(engine, run, envInt('BENCH_REDACT_MB', 100), rounds, log);
    if (want('exec')) res.exec = await execRounds(run, envInt('BENCH_EXECS', 1000, 10), rounds, log);
    if (want('grade')) {
      res.grade = await gradeRounds(engine, run, envInt('BENCH_GRADE_FILES', 2000, 200), rounds, log, profileDir);
      if (res.grade.profile) res.profiles.push({ title: 'export + grade of one attempt, in-process (one berth round)', file: res.grade.profile });
    }
    if (want('fixture')) {
      const o = {
        files: envInt('BENCH_FIXTURE_FILES', 5000, 100),
        megabytes: envInt('BENCH_FIXTURE_MB', 150),
        attempts: envInt('BENCH_FIXTURE_ATTEMPTS', 20, 4),
      };
      res.fixture = await fixtureRounds(engine, run, o, rounds, log);
    }
    if (want('fixture-plan')) res.fixturePlan = await fixturePlanRounds(await run.dir('fixture-plan'), envInt('BENCH_FIXTURE_FILES', 5000, 100), rounds, log);
    if (want('hundredk')) {
      log('100,000 cells: validate, plan, get, summary, the report (and the controller watching 100,000 specs)');
      // BENCH_HUNDREDK_CONTROLLER=only: the controller's rows alone
      if (process.env.BENCH_HUNDREDK_CONTROLLER !== 'only') res.hundredk = await hundredkRounds(run, rounds, log);
      if (process.env.BENCH_HUNDREDK_CONTROLLER !== '0') {
        process.env.BENCH_TENK_RESTART ??= '1';
        res.tenk100k = await tenk(engine, run, 100_000, 50, dropsAtMax, log);
      }
    }
    if (want('report')) {
      log('the fleet report of 1,000 attempts: size, time to make it, first paint in headless chromium');
      res.report = await reportBench(rounds, log);
    }
  } catch (err) {
    failure = err;
  } finally {
    try {
      await cleanupOnce();
    } catch (err) {
      failure ??= err;
      log((err as Error).message);
    }
    engine.agent.destroy();
  }
  if (interrupted) return; // the signal handler exits once the clean-up is done
  if (failure) throw failure;

  const rows: Row[] = [];
  if (res.startupCpu) startupRows(res.startupCpu, rows);
  if (res.cold) coldRows(res.cold, rows);
  if (res.noop) noopRows(res.noop, rows);
  if (res.cold) teardownRows(res.cold, rows);
  if (res.drop) dropRows(res.drop, res.at1000, rows);
  if (res.at1000) resourceRows(res.at1000, rows);
  if (res.harvest) harvestRows(res.harvest, rows);
  if (res.disk) diskRows(res.disk, rows);
  if (res.redact) redactRows(res.redact, rows);
  if (res.exec) execRows(res.exec, rows);
  if (res.grade) gradeRows(res.grade, rows);
  if (res.fixture) fixtureRows(res.fixture, rows);
  if (res.fixturePlan) fixturePlanRows(res.fixturePlan, rows);
  if (res.credentials) credentialRows(res.credentials, rows);
  if (res.report) reportRows(res.report, rows);
  if (res.sets) setRows(res.sets, rows);
  if (res.compare) compareRows(res.compare, rows);
  if (res.completion) completionRows(res.completion, rows);
  if (res.git) gitRows(res.git, rows);
  if (res.swarm) swarmRows(res.swarm, rows);
  if (res.swarmScale) swarmScaleRows(res.swarmScale, rows);
  if (res.fleet) fleetRows(res.fleet, rows);
  if (res.images) imagesRows(res.images, rows);
  if (res.build) buildRows(res.build, rows);
  if (res.tenk) tenkRows(res.tenk, rows);
  if (res.hundredk) hundredkRows(res.hundredk, res.tenk100k, rows);
  else if (res.tenk100k) hundredkControllerRows(res.tenk100k, rows);

  // the newest engine's turn (lib/engine-turn.ts): its rows go to the run that started it
  const turnOut = process.env.BENCH_ENGINE_TURN ? process.env.BENCH_TURN_OUT : undefined;
  if (turnOut) {
    const turn: TurnOutput = {
      rows: rows.map(({ chart: c, ...r }) => ({ ...r, ...(c ? { chart: c } : {}) })),
      engine: `Docker Engine ${m.engine} (API ${m.apiVersion}, ${m.storageDriver})`,
    };
    await fs.writeFile(turnOut, JSON.stringify(turn));
    return;
  }
  const newest = newestEngineTag();
  const turnWorkloads = ['cold', 'fleet'].filter((w) => want(w));
  let newestLine = '';
  if (newest && turnWorkloads.length > 0) {
    const turn = await engineTurn(newest, turnWorkloads, log);
    rows.push(...turn.rows);
    newestLine = ` The rows whose workload names another engine (\`<id>@${newest}\` in the JSON) ran on ${turn.engine}, a private engine of the compatibility matrix (README, "Engines"), each ratio against that engine's own floor in the same rounds.`;
  }

  const profileSummaries: { title: string; summary: ProfileSummary }[] = [];
  for (const p of res.profiles) {
    try {
      profileSummaries.push({ title: p.title, summary: summarizeProfile(p.file) });
    } catch (err) {
      log(`profile ${p.file}: ${(err as Error).message}`);
    }
  }
  const profileMd = profileSummaries.length
    ? [
        '### CPU profiles (`BENCH_PROFILE=1`, untimed extra runs)',
        '',
        `Files in \`${profileDir}\`.`,
        '',
        ...profileSummaries.map((p) => renderProfile(p.title, p.summary)),
      ].join('\n')
    : '';
  const loadEnd = os.loadavg();
  // The bench itself loads the machine (50 container starts at once): only the load before it
  // started says whether other work shared the machine.
  const busy = (loadStart[0] ?? 0) > m.nproc;
  const loadLine = `Load average (1, 5, 15 min) before the run ${loadStart.map((x) => x.toFixed(1)).join(', ')}, after it ${loadEnd.map((x) => x.toFixed(1)).join(', ')} (the bench's own container starts count in it)${busy ? ` — **other work was running when the bench started (load above ${m.nproc} cores): absolute figures are noisy; the paired ratios less so**` : ''}.`;
  const durationS = Math.round((Date.now() - t0) / 1000);
  const when = new Date().toISOString();
  const machineLine = `${m.nproc} cores (${m.cpu}), ${m.memoryGiB} GiB; Docker Engine ${m.engine} (API ${m.apiVersion}, ${m.storageDriver}, cgroup ${m.cgroup}); docker-compose ${m.compose}; Node ${m.node}; kernel ${m.kernel}; berth ${m.berthCommit}`;
  const table = markdownTable(rows);
  const misses = rows.filter((r) => r.verdict === 'MISS');
  const md = [
    `## berth benchmark — ${when}${only ? ` (partial: ${[...only].join(', ')})` : ''}`,
    '',
    `Run \`${run.id}\`, ${rounds} round${rounds === 1 ? '' : 's'}, ${durationS} s. Machine: ${machineLine}.${newestLine}`,
    '',
    loadLine,
    '',
    `Ratios are berth ÷ reference, paired by round (round *i* of berth over round *i* of the reference), median and min–max over rounds; contenders alternate in an order that rotates every round. The no-op pass's rows take ${noopPerRound} sample${noopPerRound === 1 ? '' : 's'} of each contender a round (\`BENCH_NOOP_PER_ROUND\`, one rotation each), paired by rotation.`,
    '',
    table,
    details(res),
    profileMd,
    `**${rows.filter((r) => r.verdict === 'PASS').length} PASS, ${misses.length} MISS**${misses.length ? `: ${misses.map((r) => r.id).join(', ')}` : ''}.`,
    '',
  ].join('\n');
  process.stdout.write(md);

  const outDir = path.join(REPO, 'bench', 'results');
  await fs.mkdir(outDir, { recursive: true });
  const base = only ? 'partial' : 'latest';
  const suffix = only ? '.tmp' : '';
  const summ = (xs: number[]): Summary => summarize(xs);
  const json = {
    runId: run.id,
    at: when,
    durationS,
    rounds,
    partial: only ? [...only] : null,
    machine: m,
    loadAverage: { start: loadStart, end: loadEnd },
    targets: TARGETS,
    rows: rows.map(({ chart: _c, ...r }) => r),
    raw: {
      cold: res.cold && { ...res.cold, summary: Object.fromEntries(Object.entries(res.cold.start).map(([k, v]) => [k, summ(v)])) },
      noop: res.noop && {
        instanceSize: res.noop.scales.map((s) => s.n),
        scales: res.noop.scales.map((s) => ({ ...s, summary: { inproc: summ(s.inproc), cli: summ(s.cli), floor: summ(s.floor) } })),
      },
      drop: res.drop,
      startup: res.startup,
      startupCpu: res.startupCpu,
      controllerAtMax: res.at1000,
      cleanMaxMs: res.clean1000Ms,
      harvest: res.harvest,
      disk: res.disk,
      redact: res.redact,
      exec: res.exec && { ...res.exec, oneApiP95: p95(res.exec.oneApi), oneApi: undefined },
      grade: res.grade,
      fixture: res.fixture,
      credentials: res.credentials,
      report: res.report,
      sets: res.sets,
      compare: res.compare,
      completion: res.completion,
      git: res.git,
      swarm: res.swarm,
      swarmScale: res.swarmScale,
      fleet: res.fleet,
      tenk: res.tenk,
      hundredk: res.hundredk,
      tenk100k: res.tenk100k,
    },
    profiles: profileSummaries,
  };
  await fs.writeFile(path.join(outDir, `${base}.json${suffix}`), JSON.stringify(json, null, 1) + '\n');
  await fs.writeFile(path.join(outDir, `${base}.md${suffix}`), md);
  await fs.writeFile(
    path.join(outDir, `${base}.svg${suffix}`),
    svgChart(rows, `berth vs the engine's floor and its peers — ${when.slice(0, 10)}, ${rounds} rounds`),
  );
  log(`wrote bench/results/${base}.{md,json,svg}${suffix} in ${durationS} s`);
}

main().catch((err: unknown) => {
  process.stderr.write(`[bench] FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
});

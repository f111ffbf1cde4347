/**
 * Workloads 1 and 3: cold start of 50 `sleep 600` attempts (network none), 8 in flight for
 * everyone, until all run; then teardown of the same 50. Contenders, in an order that rotates
 * every round: berth (`reconcile --once`, then `clean`), the raw Engine API (create+start, then
 * force-remove), a `docker run -d` loop, docker-compose 1.29 (`up -d`, then `down`).
 * Also, while each stack is up: a no-op `berth reconcile --once` and a no-op `docker-compose up -d`
 * at 50.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { run as berthInProcess } from '../../src/cli/index';
import { bufferIo } from '../../src/cli/io';
import { pool } from '../lib/cleanup';
import type { RawEngine } from '../lib/engine';
import { composeFile, dockerRunArgs, names, peerLabels, rawCreateBody, type BenchRun } from '../lib/fixture';
import { berth, cpuProfArgs, run as runCmd, sleep } from '../lib/proc';

export const COLD_N = 50;
export const IN_FLIGHT = 8;
const CMD = ['sleep', '600'];

export type ColdContender = 'berth' | 'berthInProcess' | 'raw' | 'dockerRun' | 'compose';
export const COLD_CONTENDERS: ColdContender[] = ['berth', 'raw', 'dockerRun', 'compose', 'berthInProcess'];

export interface ColdSamples {
  start: Record<ColdContender, number[]>;
  teardown: Record<'berth' | 'berthInProcess' | 'raw' | 'compose', number[]>;
  noop50: Record<'berthCli' | 'compose', number[]>;
  order: ColdContender[][];
}

export function emptyCold(): ColdSamples {
  return {
    start: { berth: [], berthInProcess: [], raw: [], dockerRun: [], compose: [] },
    teardown: { berth: [], berthInProcess: [], raw: [], compose: [] },
    noop50: { berthCli: [], compose: [] },
    order: [],
  };
}

async function expectRunning(engine: RawEngine, labels: string[], what: string): Promise<void> {
  const running = await engine.listContainers(labels, { status: 'running' });
  if (running.length !== COLD_N) throw new Error(`${what}: ${running.length} containers running, expected ${COLD_N}`);
}

async function expectGone(engine: RawEngine, labels: string[], what: string): Promise<void> {
  const left = await engine.listContainers(labels);
  if (left.length) throw new Error(`${what}: ${left.length} containers left after teardown`);
}

async function resultsDirs(run: BenchRun, tag: string, ns: readonly string[]): Promise<Map<string, string>> {
  const base = await run.dir('peers', tag);
  const out = new Map<string, string>();
  await Promise.all(
    ns.map(async (n) => {
      const d = path.join(base, n);
      await fs.mkdir(d, { recursive: true });
      out.set(n, d);
    }),
  );
  return out;
}

async function berthRound(engine: RawEngine, run: BenchRun, round: number, s: ColdSamples, log: (m: string) => void): Promise<void> {
  const sb = await run.berthSandbox(`c${round}`);
  await sb.writeSpecs(names('a', COLD_N), CMD);
  const args = ['reconcile', '--once', '--max-running', String(COLD_N), '--concurrency', String(IN_FLIGHT), ...sb.globalArgs()];
  const up = await berth(args);
  const labels = ['dev.berth.managed=true', `dev.berth.instance=${sb.instance}`];
  await expectRunning(engine, labels, 'berth reconcile --once');
  s.start.berth.push(up.ms);
  const noop = await berth(args);
  s.noop50.berthCli.push(noop.ms);
  const down = await berth(['clean', ...sb.globalArgs()]);
  await expectGone(engine, labels, 'berth clean');
  s.teardown.berth.push(down.ms);
  log(`  berth      up ${up.ms.toFixed(0)} ms, no-op ${noop.ms.toFixed(0)} ms, clean ${down.ms.toFixed(0)} ms`);
}

/**
 * The same two commands through berth's CLI entry point in this process (src/cli/index.ts
 * `run`): berth's work without Node's start-up and module loading, to tell the two apart.
 */
async function berthInProcessRound(engine: RawEngine, run: BenchRun, round: number, s: ColdSamples, log: (m: string) => void): Promise<void> {
  const sb = await run.berthSandbox(`i${round}`);
  await sb.writeSpecs(names('a', COLD_N), CMD);
  const cli = async (args: string[]) => {
    const io = bufferIo();
    const t0 = performance.now();
    const code = await berthInProcess(['node', 'berth', ...args, ...sb.globalArgs('warn')], io);
    const ms = performance.now() - t0;
    if (code !== 0) throw new Error(`berth ${args.join(' ')} (in-process) exited ${code}: ${io.stderr.slice(-1500)}`);
    return ms;
  };
  const up = await cli(['reconcile', '--once', '--max-running', String(COLD_N), '--concurrency', String(IN_FLIGHT)]);
  const labels = ['dev.berth.managed=true', `dev.berth.instance=${sb.instance}`];
  await expectRunning(engine, labels, 'berth reconcile --once (in-process)');
  s.start.berthInProcess.push(up);
  const down = await cli(['clean']);
  await expectGone(engine, labels, 'berth clean (in-process)');
  s.teardown.berthInProcess.push(down);
  log(`  berth (in-process) up ${up.toFixed(0)} ms, clean ${down.toFixed(0)} ms`);
}

async function rawRound(engine: RawEngine, run: BenchRun, round: number, s: ColdSamples, log: (m: string) => void): Promise<void> {
  const peer = `raw${round}`;
  const ns = names('a', COLD_N);
  const dirs = await resultsDirs(run, peer, ns);
  const t0 = performance.now();
  await pool(ns, IN_FLIGHT, async (n) => {
    const id = await engine.createContainer(`bench-${run.id}-${peer}-${n}`, rawCreateBody(CMD, dirs.get(n) as string, peerLabels(run, peer, n)));
    await engine.startContainer(id);
  });
  const up = performance.now() - t0;
  const labels = [run.label, `dev.berth.bench.peer=${peer}`];
  await expectRunning(engine, labels, 'raw create+start');
  s.start.raw.push(up);
  // Teardown floor: find them (one label-filtered list), force-remove, 8 in flight.
  const t1 = performance.now();
  const found = await engine.listContainers(labels);
  await pool(found, IN_FLIGHT, (c) => engine.removeContainer(c.Id));
  const down = performance.now() - t1;
  await expectGone(engine, labels, 'raw force-remove');
  s.teardown.raw.push(down);
  log(`  raw API    up ${up.toFixed(0)} ms, remove ${down.toFixed(0)} ms`);
}

async function dockerRunRound(engine: RawEngine, run: BenchRun, round: number, s: ColdSamples, log: (m: string) => void): Promise<void> {
  const peer = `run${round}`;
  const ns = names('a', COLD_N);
  const dirs = await resultsDirs(run, peer, ns);
  const t0 = performance.now();
  await pool(ns, IN_FLIGHT, async (n) => {
    await runCmd('docker', dockerRunArgs(`bench-${run.id}-${peer}-${n}`, CMD, dirs.get(n) as string, peerLabels(run, peer, n)));
  });
  const up = performance.now() - t0;
  const labels = [run.label, `dev.berth.bench.peer=${peer}`];
  await expectRunning(engine, labels, 'docker run -d');
  s.start.dockerRun.push(up);
  // Not a teardown contender: removed by label, untimed.
  await pool(await engine.listContainers(labels), IN_FLIGHT, (c) => engine.removeContainer(c.Id));
  log(`  docker run up ${up.toFixed(0)} ms`);
}

async function composeRound(engine: RawEngine, run: BenchRun, round: number, s: ColdSamples, log: (m: string) => void): Promise<void> {
  const project = run.composeProject(`r${round}`);
  const dir = await run.dir('compose', project);
  const services = names('s', COLD_N);
  const dirs = await resultsDirs(run, project, services);
  const file = path.join(dir, 'docker-compose.yml');
  await fs.writeFile(
    file,
    composeFile(run, services, CMD, (n) => dirs.get(n) as string),
  );
  // Not COMPOSE_PARALLEL_LIMIT=8: compose 1.x deadlocks when the limit is below the number of
  // services (nested parallel_execute share one limiter: docker/compose#5864, #8226; seen here,
  // it hangs after 6 of 50). It runs with its default limit (64), i.e. all 50 in flight.
  const env = { ...process.env };
  delete env.COMPOSE_PARALLEL_LIMIT;
  const compose = (...a: string[]) => runCmd('docker-compose', ['-p', project, '-f', file, ...a], { env, cwd: dir, timeoutMs: 180_000 });
  const up = await compose('up', '-d');
  const labels = [`com.docker.compose.project=${project}`];
  await expectRunning(engine, labels, 'docker-compose up -d');
  s.start.compose.push(up.ms);
  const noop = await compose('up', '-d');
  s.noop50.compose.push(noop.ms);
  const down = await compose('down');
  await expectGone(engine, labels, 'docker-compose down');
  s.teardown.compose.push(down.ms);
  log(`  compose    up ${up.ms.toFixed(0)} ms, no-op ${noop.ms.toFixed(0)} ms, down ${down.ms.toFixed(0)} ms`);
}

const ROUND: Record<ColdContender, typeof berthRound> = {
  berth: berthRound,
  berthInProcess: berthInProcessRound,
  raw: rawRound,
  dockerRun: dockerRunRound,
  compose: composeRound,
};

export async function coldRounds(engine: RawEngine, run: BenchRun, rounds: number, log: (m: string) => void): Promise<ColdSamples> {
  const s = emptyCold();
  for (let r = 0; r < rounds; r++) {
    // Rotate the order every round so no contender always follows the same one.
    const order = COLD_CONTENDERS.map((_, i) => COLD_CONTENDERS[(i + r) % COLD_CONTENDERS.length] as ColdContender);
    s.order.push(order);
    log(`cold start / teardown, round ${r + 1}/${rounds}: ${order.join(', ')}`);
    for (const c of order) {
      await ROUND[c](engine, run, r + 1, s, log);
      // Anything a failed step left behind goes now, so the next contender starts on a quiet engine.
      await sweepPeers(engine, run);
      await sleep(500);
    }
  }
  return s;
}

/**
 * With profiling on: one more berth cold start and clean of 50, untimed, each under
 * `node --cpu-prof`. Returns the profile files.
 */
export async function profileColdBerth(engine: RawEngine, run: BenchRun, dir: string): Promise<{ up: string; clean: string }> {
  const sb = await run.berthSandbox('cprof');
  await sb.writeSpecs(names('a', COLD_N), CMD);
  const args = ['reconcile', '--once', '--max-running', String(COLD_N), '--concurrency', String(IN_FLIGHT), ...sb.globalArgs()];
  await berth(args, { nodeArgs: cpuProfArgs(dir, 'cold50-reconcile-once') });
  await expectRunning(engine, ['dev.berth.managed=true', `dev.berth.instance=${sb.instance}`], 'berth reconcile --once (profiled)');
  await berth(['clean', ...sb.globalArgs()], { nodeArgs: cpuProfArgs(dir, 'teardown50-clean') });
  return { up: path.join(dir, 'cold50-reconcile-once.cpuprofile'), clean: path.join(dir, 'teardown50-clean.cpuprofile') };
}

/** Removes the peers' containers of this run (not berth's: those belong to later workloads). */
async function sweepPeers(engine: RawEngine, run: BenchRun): Promise<void> {
  const left = await engine.listContainers([run.label]);
  if (left.length) await pool(left, IN_FLIGHT, (c) => engine.removeContainer(c.Id));
}

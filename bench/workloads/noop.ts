/**
 * Workload 2: a no-op pass at 10, 200 and 1,000 attempts. The attempts are seeded through berth
 * itself (`reconcile --once --wait` of `true` attempts: they exit at once and end Succeeded, their
 * containers kept), growing one instance 10 → 200 → 1,000. At each size, rounds alternate:
 *   - berth's pass in-process (reconcilePass with an engine wrapped by instrumentEngine and a
 *     CallCounter): its time and its engine calls;
 *   - berth's CLI (`node bin/berth.js reconcile --once`): the same pass with node's start-up;
 *   - the floor: the label-filtered list calls the pass needs, over the raw socket, in parallel.
 * `perRound` rotations of them a round (BENCH_NOOP_PER_ROUND): a pass and its floor take 0.1–0.8 s,
 * so a few samples more cost seconds and steady the median of their paired ratios.
 * Plus a breakdown of the in-process pass: spec load, status load, the engine's lists.
 */
import { promises as fs } from 'node:fs';
import { Session } from 'node:inspector/promises';
import path from 'node:path';
import { reconcilePass, type PassConfig } from '../../src/controller/pass';
import { createDockerEngine } from '../../src/engine/docker';
import { CallCounter, instrumentEngine } from '../../src/engine/wrap';
import { observe } from '../../src/observe/snapshot';
import { changeCount } from '../../src/plan/render';
import { loadSpecs } from '../../src/spec/loader';
import { StatusStore } from '../../src/status/store';
import type { RawEngine } from '../lib/engine';
import { names, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { berth, BERTH_BIN, buildOf, cpuProfArgs, run as runCmd } from '../lib/proc';
import { cpuOf } from './startup';
import { failOnStuck } from '../lib/stuck';

/** A seeded `true` attempt's container still running this long after its start is the engine's hang (bench/lib/stuck.ts). */
const SEED_MAX_UP_MS = 120_000;

export interface ScaleSamples {
  n: number;
  seedMs: number;
  inproc: number[];
  cli: number[];
  /** The CLI pass with berth's spec cache on disk removed first (`<state>/cache`: a first run, or a lost cache). */
  cliNoCache: number[];
  /** `node -e 0`, in the same rounds: Node's own start-up. */
  bareNode: number[];
  floor: number[];
  /** Engine calls of each in-process pass, total and by `kind.op`. */
  calls: number[];
  callsByOp: Record<string, number>;
  breakdown: { loadSpecs: number[]; loadStatus: number[]; observe: number[] };
  order: string[][];
  /** BENCH_AB: the other build's CLI pass (wall ms) over a copy of the state folder, in the same rounds; and both builds' CPU (user + system). */
  ab?: { label: string; cli: number[]; cpu: number[]; thisCpu: number[] };
}

export interface NoopResult {
  sandbox: BerthSandbox;
  scales: ScaleSamples[];
  /** With profiling on: CPU profiles of one no-op pass at the largest size. */
  profiles?: { inproc: string; cli: string };
}

/** Runs `f` under the V8 profiler of this process; writes the profile to `file`. */
export async function profiled(file: string, f: () => Promise<unknown>): Promise<void> {
  const session = new Session();
  session.connect();
  try {
    await session.post('Profiler.enable');
    await session.post('Profiler.setSamplingInterval', { interval: 200 });
    await session.post('Profiler.start');
    await f();
    const { profile } = await session.post('Profiler.stop');
    await fs.writeFile(file, JSON.stringify(profile));
  } finally {
    session.disconnect();
  }
}

const MANAGED = 'dev.berth.managed';

/** The four lists of one pass (src/observe/snapshot.ts), over the raw socket, in parallel. */
export async function floorLists(engine: RawEngine, instance: string): Promise<number> {
  const f = encodeURIComponent(JSON.stringify({ label: [`${MANAGED}=true`, `dev.berth.instance=${instance}`] }));
  const img = encodeURIComponent(JSON.stringify({ label: [MANAGED] }));
  const t0 = performance.now();
  const res = await Promise.all([
    engine.request('GET', `/containers/json?all=1&filters=${f}`),
    engine.request('GET', `/networks?filters=${f}`),
    engine.request('GET', `/volumes?filters=${f}`),
    engine.request('GET', `/images/json?filters=${img}`),
  ]);
  const ms = performance.now() - t0;
  for (const r of res) if (r.status !== 200) throw new Error(`floor list answered ${r.status}: ${r.body.slice(0, 200)}`);
  // Parse as any client must (not timed separately: JSON.parse of the lists is part of the floor).
  return ms + timeParse(res.map((r) => r.body));
}

function timeParse(bodies: string[]): number {
  const t0 = performance.now();
  for (const b of bodies) JSON.parse(b);
  return performance.now() - t0;
}

async function phases(sb: BerthSandbox): Promise<Map<string, number>> {
  const dir = path.join(sb.stateDir, sb.instance, 'attempts');
  const out = new Map<string, number>();
  for (const f of await fs.readdir(dir)) {
    if (!f.endsWith('.json')) continue;
    const rec = JSON.parse(await fs.readFile(path.join(dir, f), 'utf8')) as { phase: string };
    out.set(rec.phase, (out.get(rec.phase) ?? 0) + 1);
  }
  return out;
}

export async function noopScales(
  engine: RawEngine,
  run: BenchRun,
  sizes: number[],
  rounds: number,
  log: (m: string) => void,
  profileDir?: string,
  perRound = 1,
): Promise<NoopResult> {
  const sb = await run.berthSandbox('n');
  const counter = new CallCounter();
  const berthEngine = instrumentEngine(createDockerEngine(), counter.listener);
  const cfg: PassConfig = sb.passConfig();
  const passArgs = ['reconcile', '--once', '--max-running', '50', '--concurrency', '8', ...sb.globalArgs()];
  // BENCH_AB: the other build runs the same pass on a copy of the state folder (its spec cache its own).
  const other = buildOf(process.env.BENCH_AB);
  const abState = `${sb.stateDir}-ab`;
  const abArgs = passArgs.map((a) => (a === sb.stateDir ? abState : a));
  const scales: ScaleSamples[] = [];
  let have = 0;
  for (const n of sizes) {
    // Seed: n - have more `true` attempts, run to completion by berth.
    await sb.writeSpecs(names('n', n - have, have), ['true']);
    const seed = await failOnStuck(
      engine,
      sb.instance,
      SEED_MAX_UP_MS,
      `seeding ${n} attempts`,
      berth(['reconcile', '--once', '--wait', '--timeout', '1200', '--max-running', '1000', '--concurrency', '8', ...sb.globalArgs('warn')], {
        timeoutMs: 1_300_000,
      }),
    );
    have = n;
    const ph = await phases(sb);
    if (ph.get('Succeeded') !== n) throw new Error(`seeding ${n} attempts: phases ${JSON.stringify(Object.fromEntries(ph))}`);
    log(`no-op pass at ${n}: seeded in ${(seed.ms / 1000).toFixed(1)} s`);

    const s: ScaleSamples = {
      n,
      seedMs: seed.ms,
      inproc: [],
      cli: [],
      cliNoCache: [],
      bareNode: [],
      floor: [],
      calls: [],
      callsByOp: {},
      breakdown: { loadSpecs: [], loadStatus: [], observe: [] },
      order: [],
      ...(other ? { ab: { label: other.label, cli: [], cpu: [], thisCpu: [] } } : {}),
    };
    const inproc = async () => {
      counter.reset();
      const store = new StatusStore(sb.stateDir, sb.instance); // a fresh store reads every record, as a controller's pass does
      const t0 = performance.now();
      const res = await reconcilePass(cfg, berthEngine, store);
      const ms = performance.now() - t0;
      if (changeCount(res.plan) !== 0) throw new Error(`the pass at ${n} was not a no-op: ${changeCount(res.plan)} operations`);
      s.inproc.push(ms);
      s.calls.push(counter.total);
      s.callsByOp = counter.snapshot();
      // Where the time goes, measured piece by piece right after.
      const t1 = performance.now();
      await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot });
      const t2 = performance.now();
      await new StatusStore(sb.stateDir, sb.instance).loadAll();
      const t3 = performance.now();
      await observe(berthEngine, sb.instance, new Map());
      const t4 = performance.now();
      s.breakdown.loadSpecs.push(t2 - t1);
      s.breakdown.loadStatus.push(t3 - t2);
      s.breakdown.observe.push(t4 - t3);
    };
    const cli = async () => {
      const r = await berth(passArgs);
      s.cli.push(r.ms);
    };
    const cliNoCache = async () => {
      await fs.rm(path.join(sb.stateDir, 'cache'), { recursive: true, force: true });
      const r = await berth(passArgs);
      s.cliNoCache.push(r.ms);
    };
    const cliAb = async () => {
      if (!other || !s.ab) return;
      s.ab.cli.push((await berth(abArgs, { build: other })).ms);
      s.ab.cpu.push((await cpuOf([other.node, other.bin, ...abArgs], process.env)).cpu);
      s.ab.thisCpu.push((await cpuOf([process.execPath, BERTH_BIN, ...passArgs], process.env)).cpu);
    };
    const bareNode = async () => {
      s.bareNode.push((await runCmd(process.execPath, ['-e', '0'])).ms);
    };
    const floor = async () => {
      s.floor.push(await floorLists(engine, sb.instance));
    };
    // Warm up the in-process code (module load, schema compile, JIT) and the floor's connections.
    await reconcilePass(cfg, berthEngine, new StatusStore(sb.stateDir, sb.instance));
    await floorLists(engine, sb.instance);
    if (other) {
      await fs.rm(abState, { recursive: true, force: true });
      await fs.cp(sb.stateDir, abState, { recursive: true });
      await berth(abArgs, { build: other });
    }
    const contenders: [string, () => Promise<void>][] = [
      ['inproc', inproc],
      ['cli', cli],
      ['floor', floor],
      ['cliNoCache', cliNoCache],
      ['bareNode', bareNode],
      ...(other ? [['cliAb', cliAb] as [string, () => Promise<void>]] : []),
    ];
    // `perRound` rotations a round: each contender's samples pair by rotation, as rounds pair.
    for (let r = 0; r < rounds * perRound; r++) {
      const order = contenders.map((_, i) => contenders[(i + r) % contenders.length] as [string, () => Promise<void>]);
      s.order.push(order.map(([k]) => k));
      for (const [, f] of order) await f();
    }
    const med = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] ?? NaN;
    log(`  in-process ${med(s.inproc).toFixed(0)} ms (${s.calls[0]} engine calls), CLI ${med(s.cli).toFixed(0)} ms, floor ${med(s.floor).toFixed(1)} ms`);
    scales.push(s);
  }
  const result: NoopResult = { sandbox: sb, scales };
  if (profileDir) {
    const n = sizes[sizes.length - 1] as number;
    const inprocFile = path.join(profileDir, `noop${n}-inprocess.cpuprofile`);
    await profiled(inprocFile, () => reconcilePass(cfg, berthEngine, new StatusStore(sb.stateDir, sb.instance)));
    await berth(passArgs, { nodeArgs: cpuProfArgs(profileDir, `noop${n}-cli`) });
    result.profiles = { inproc: inprocFile, cli: path.join(profileDir, `noop${n}-cli.cpuprofile`) };
  }
  return result;
}

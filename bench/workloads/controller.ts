/**
 * Workloads 4 and 5: berth as a controller (`reconcile` without --once), a child process.
 *   4. drop-to-running: write a spec file, time until the engine reports its container's start
 *      (the engine's event stream, no polling), minus the engine's own create+start of one
 *      container measured in the same run, the same way (raw API, start event).
 *   5. resources: the controller watching the 1,000 finished attempts of workload 2: peak RSS
 *      (VmHWM) and CPU (utime+stime) over 10 s with nothing changing.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { RawEngine } from '../lib/engine';
import { StartWatch } from '../lib/events';
import { peerLabels, rawCreateBody, specText, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { BERTH_BIN, cpuMs, cpuProfArgs, Daemon, nodeAndBin, REPO, sleep, statusKb } from '../lib/proc';

const CMD = ['sleep', '600'];

export interface DropSamples {
  /** Spec written → container start (engine's timestamp), ms. */
  berth: number[];
  /** Raw create request sent → container start (engine's timestamp), ms: the engine's own time. */
  floor: number[];
  /** Spec written → start event read by the bench, ms (includes event delivery). */
  berthArrived: number[];
}

export interface ControllerAt1000 {
  specs: number;
  /** Controller start → first idle second (start-up and the first pass over every spec). */
  readyMs: number;
  idleCpuMs: number;
  idleWindowMs: number;
  rssPeakKb: number;
  /** VmHWM right after the idle window, before any drop: the peak of start-up and the first pass. */
  rssPeakBeforeDropsKb: number;
  rssIdleKb: number;
  drops: DropSamples;
}

/** `bin`: another build's bin/berth.js, or `NODE@BIN` to run it with another Node (the build before a Node upgrade, on its own Node). */
function startController(sb: BerthSandbox, nodeArgs: string[] = [], maxRunning = 50, build = BERTH_BIN): Daemon {
  const { node, bin } = nodeAndBin(build);
  return new Daemon(node, [...nodeArgs, bin, 'reconcile', '--max-running', String(maxRunning), '--concurrency', '8', ...sb.globalArgs()], { cwd: REPO });
}

async function stopController(d: Daemon, log: (m: string) => void): Promise<void> {
  const { code, signal } = await d.stop();
  if (code !== 0) log(`warning: the controller exited ${code ?? signal} on SIGTERM:\n${d.stderr.slice(-1500)}`);
}

/**
 * Waits until the process is idle: sampled every 100 ms, idle once `quietMs` have passed with no
 * 100 ms in which it used a fifth of a core or more, and with at most `maxCpuMs` a second over them
 * (default 10% of a core: start-up and a pass run near 100%). Resolves to the time (Date.now())
 * the quiet stretch began: the end of the last busy 100 ms (whole 1 s windows made the end of
 * start-up up to a second early or late, by where the windows fell).
 */
async function waitIdle(pid: number, timeoutMs: number, maxCpuMs = 100, quietMs = 2000): Promise<number> {
  const end = Date.now() + timeoutMs;
  let last = cpuMs(pid);
  let quietSince = Date.now();
  let quietCpu = 0;
  while (Date.now() < end) {
    await sleep(100);
    const now = cpuMs(pid);
    const used = now - last;
    last = now;
    quietCpu += used;
    // (the kernel counts CPU in 10 ms ticks: one tick in 100 ms is not yet work)
    if (used >= 20 || quietCpu > (maxCpuMs * quietMs) / 1000) {
      quietSince = Date.now();
      quietCpu = 0;
    } else if (Date.now() - quietSince >= quietMs) return quietSince;
  }
  throw new Error(`the controller (pid ${pid}) did not go idle within ${timeoutMs} ms`);
}

async function drops(
  engine: RawEngine,
  run: BenchRun,
  sb: BerthSandbox,
  count: number,
  floorEvery: number,
  tag: string,
  settleMs: number,
): Promise<DropSamples> {
  const out: DropSamples = { berth: [], floor: [], berthArrived: [] };
  const berthWatch = await StartWatch.open(engine, [`dev.berth.instance=${sb.instance}`]);
  const peer = `drop${tag}`;
  const rawWatch = await StartWatch.open(engine, [run.label, `dev.berth.bench.peer=${peer}`]);
  const rawResults = await run.dir('peers', peer);
  try {
    for (let i = 0; i < count; i++) {
      const name = `drop${tag}${String(i).padStart(3, '0')}`;
      const file = path.join(sb.specsDir, `${name}.yaml`);
      const t0 = Date.now();
      await fs.writeFile(file, specText(name, CMD));
      const ev = await berthWatch.started(sb.containerName(name), 180_000);
      out.berth.push(ev.engineMs - t0);
      out.berthArrived.push(ev.arrivedMs - t0);
      await sleep(settleMs);
      if ((i + 1) % floorEvery === 0) {
        const rname = `bench-${run.id}-${peer}-${i}`;
        const dir = path.join(rawResults, String(i));
        await fs.mkdir(dir, { recursive: true });
        const t1 = Date.now();
        const id = await engine.createContainer(rname, rawCreateBody(CMD, dir, peerLabels(run, peer, String(i))));
        await engine.startContainer(id);
        const rev = await rawWatch.started(rname, 60_000);
        out.floor.push(rev.engineMs - t1);
        await sleep(settleMs / 2);
      }
    }
  } finally {
    berthWatch.close();
    rawWatch.close();
    // The floor's containers go now (berth's go with its instance).
    for (const c of await engine.listContainers([run.label, `dev.berth.bench.peer=${peer}`])) await engine.removeContainer(c.Id);
  }
  return out;
}

export async function dropToRunning(engine: RawEngine, run: BenchRun, count: number, log: (m: string) => void): Promise<DropSamples> {
  const sb = await run.berthSandbox('d');
  const ctl = startController(sb);
  try {
    await ctl.waitFor(/controller started/, 30_000);
    await waitIdle(ctl.pid, 60_000);
    const out = await drops(engine, run, sb, count, 2, 'd', 400);
    log(`  ${count} drops: berth ${out.berth.map((x) => x.toFixed(0)).join(' ')} ms`);
    log(`  engine floor (raw create+start → start event): ${out.floor.map((x) => x.toFixed(0)).join(' ')} ms`);
    return out;
  } finally {
    await stopController(ctl, log);
  }
}

export async function controllerAt1000(
  engine: RawEngine,
  run: BenchRun,
  sb: BerthSandbox,
  specs: number,
  dropCount: number,
  log: (m: string) => void,
  maxRunning = 50,
  /** Another build's bin/berth.js (an A/B run), and the drops' name tag (unique per run over one folder). */
  other: { bin?: string; tag?: string; nodeArgs?: string[]; atIdle?: (pid: number) => Promise<void> } = {},
): Promise<ControllerAt1000> {
  const t0 = Date.now();
  const ctl = startController(sb, other.nodeArgs ?? [], maxRunning, other.bin);
  try {
    await ctl.waitFor(/controller started/, 60_000);
    // this build says when its first full pass is planned: idle is looked for after it (a pause
    // while the start-up waits on the disk is not taken for idle); another build's is not told
    if (!other.bin) await ctl.waitFor(/synced: a full pass planned/, 600_000);
    const readyMs = (await waitIdle(ctl.pid, 300_000)) - t0;
    const c0 = cpuMs(ctl.pid);
    const w0 = performance.now();
    await sleep(10_000);
    const idleCpuMs = cpuMs(ctl.pid) - c0;
    const idleWindowMs = performance.now() - w0;
    const rssIdleKb = statusKb(ctl.pid, 'VmRSS');
    const rssPeakBeforeDropsKb = statusKb(ctl.pid, 'VmHWM');
    if (other.atIdle) await other.atIdle(ctl.pid);
    log(`  ready after ${readyMs} ms; idle CPU ${idleCpuMs} ms over ${(idleWindowMs / 1000).toFixed(1)} s; RSS ${(rssIdleKb / 1024).toFixed(0)} MB`);
    const d = dropCount > 0 ? await drops(engine, run, sb, dropCount, 1, other.tag ?? 'k', 1500) : { berth: [], floor: [], berthArrived: [] };
    if (dropCount > 0) log(`  ${dropCount} drops at ${specs} specs: berth ${d.berth.map((x) => x.toFixed(0)).join(' ')} ms`);
    const rssPeakKb = statusKb(ctl.pid, 'VmHWM');
    return { specs, readyMs, idleCpuMs, idleWindowMs, rssPeakKb, rssPeakBeforeDropsKb, rssIdleKb, drops: d };
  } finally {
    await stopController(ctl, log);
  }
}

/**
 * A controller started until idle and stopped, untimed: its build's spec cache on disk is
 * written (a cache written by another build is ignored and replaced, so in an A/B run each
 * build's timed start would otherwise be a cold one).
 */
export async function warmController(sb: BerthSandbox, maxRunning: number, bin?: string): Promise<void> {
  const ctl = startController(sb, [], maxRunning, bin);
  try {
    await ctl.waitFor(/controller started/, 60_000);
    await waitIdle(ctl.pid, 300_000);
  } finally {
    await ctl.stop();
  }
}

/**
 * With profiling on: the controller again, untimed, under `node --cpu-prof` (the profiler's own
 * sampling costs a few % of a core, so the measured run above is never the profiled one):
 * start-up, first pass, a few drops. Returns the profile file.
 */
export async function profileController(
  engine: RawEngine,
  run: BenchRun,
  sb: BerthSandbox,
  specs: number,
  dropCount: number,
  dir: string,
  log: (m: string) => void,
): Promise<string> {
  const name = `controller${specs}`;
  const ctl = startController(sb, cpuProfArgs(dir, name));
  try {
    await ctl.waitFor(/controller started/, 60_000);
    await waitIdle(ctl.pid, 300_000);
    if (dropCount > 0) await drops(engine, run, sb, dropCount, 1000, 'p', 1500);
  } finally {
    await stopController(ctl, log);
  }
  return path.join(dir, `${name}.cpuprofile`);
}

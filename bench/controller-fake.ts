/**
 * A scratch harness for the controller at 100,000 specs (issue 55) that starts no container: the
 * controller (`reconcile`, as the CLI runs it: runController) in this process on the fake engine,
 * over a folder made as the bench's hundredk workload makes it (bench/workloads/tenk.ts: one
 * single-Attempt file and one finished, collected record per attempt; no container exists for
 * them). What it reports does not depend on the machine's load: CPU (user+sys) of the process
 * from just before the controller starts until its first full pass is planned and it is idle,
 * peak RSS (VmHWM), and the CPU and wall of each dropped file until the fake engine is asked to
 * start its container.
 *
 *   node --import tsx bench/controller-fake.ts gen <dir> [count]   # once: specs and records
 *   node --expose-gc --import tsx bench/controller-fake.ts run <dir> [drops] [--cold]
 *
 * `--cold` removes the spec disk cache first (every file parsed, as the bench's first start). The
 * harness's own modules (tsx, the fake engine) are in the figures: compare runs of this harness only.
 */
/* eslint-disable @typescript-eslint/no-require-imports */
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { Session } from 'node:inspector';
import { PassThrough } from 'node:stream';
import { runController } from '../src/cli/commands/controller';
import { makeContext } from '../src/cli/context';
import { bufferIo } from '../src/cli/io';
import type { ReconcileOptions } from '../src/cli/commands/reconcile';
import { createLogger } from '../src/util/log';
import { FakeEngine } from '../test/support/fake-engine';
import type * as Tenk from './workloads/tenk';
import type * as Loader from '../src/spec/loader';
import { IMAGE, specText } from './lib/fixture';

const INSTANCE = 'scratch-100k';

function dirs(root: string) {
  return { specsDir: path.join(root, 'specs'), stateDir: path.join(root, 'state'), resultsRoot: path.join(root, 'results') };
}

function cpuMs(): number {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
}

function statusKb(key: string): number {
  const m = new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(readFileSync('/proc/self/status', 'utf8'));
  return m ? Number(m[1]) : NaN;
}

async function gen(root: string, count: number): Promise<void> {
  // required here: the run below loads neither (the bench's workload brings the Docker client)
  const { finishedRecord } = require('./workloads/tenk') as typeof Tenk;
  const { loadSpecs } = require('../src/spec/loader') as typeof Loader;
  const d = dirs(root);
  await fs.mkdir(d.specsDir, { recursive: true });
  const names = Array.from({ length: count }, (_, i) => `t${String(i).padStart(4, '0')}`);
  for (let i = 0; i < names.length; i += 500)
    await Promise.all(names.slice(i, i + 500).map((n) => fs.writeFile(path.join(d.specsDir, `${n}.yaml`), specText(n, ['true']))));
  const load = await loadSpecs({ specsDir: d.specsDir, resultsRoot: d.resultsRoot });
  if (load.errors.length) throw new Error(`spec errors: ${load.errors[0]?.message}`);
  const hashOf = new Map(load.specs.map((s) => [s.spec.name, s.hash]));
  const rdir = path.join(d.stateDir, INSTANCE, 'attempts');
  await fs.mkdir(rdir, { recursive: true });
  const at = Date.now() - 3_000_000;
  for (let i = 0; i < names.length; i += 200)
    await Promise.all(
      names
        .slice(i, i + 200)
        .map((n, j) =>
          fs.writeFile(
            path.join(rdir, `${n}.json`),
            JSON.stringify(finishedRecord(INSTANCE, n, hashOf.get(n) as string, d.resultsRoot, at + (i + j) * 250), null, 2) + '\n',
          ),
        ),
    );
  console.log(`wrote ${count} specs and records under ${root}`);
}

async function runOnce(root: string, drops: number, cold: boolean): Promise<void> {
  const d = dirs(root);
  if (cold) await fs.rm(path.join(d.stateDir, 'cache'), { recursive: true, force: true });
  // Drops of earlier runs go (their specs and records), so every run finds the same folder.
  for (const f of await fs.readdir(d.specsDir)) if (f.startsWith('drop')) await fs.rm(path.join(d.specsDir, f));
  const rdir = path.join(d.stateDir, INSTANCE, 'attempts');
  for (const f of await fs.readdir(rdir)) if (f.startsWith('drop')) await fs.rm(path.join(rdir, f));
  await fs.rm(path.join(d.stateDir, INSTANCE, 'attempts.index.json'), { force: true });

  const fake = new FakeEngine();
  fake.addImage({ ref: IMAGE, labels: {} });
  // A drop is running when the controller logs its start (after the fake engine's start returned).
  const startWaiters = new Map<string, () => void>();
  const lines = new PassThrough();
  let synced: (() => void) | undefined;
  const syncedP = new Promise<void>((r) => (synced = r));
  let started: (() => void) | undefined;
  const startedP = new Promise<void>((r) => (started = r));
  lines.on('data', (b: Buffer) => {
    const s = b.toString();
    if (s.includes('synced: a full pass planned')) synced?.();
    if (s.includes('controller started')) started?.();
    for (const [n, w] of startWaiters) if (s.includes(`${n}: created run 1; started run 1`)) w();
    if (process.env.SCRATCH_LOG || /error|warn/i.test(s)) process.stderr.write(`  log: ${s.trim().slice(0, 300)}\n`);
  });
  const log = createLogger({ level: 'info', stream: lines });
  const abort = new AbortController();
  const io = bufferIo();
  const c0 = cpuMs();
  const t0 = performance.now();
  const ctx = makeContext({ specs: d.specsDir, state: d.stateDir, resultsRoot: d.resultsRoot, instance: INSTANCE }, io, { engine: fake, log });
  const done = runController(ctx, { resync: 30, maxRunning: 60, concurrency: 8 } satisfies ReconcileOptions, abort.signal);
  await startedP;
  const cStarted = cpuMs() - c0;
  await syncedP;
  const cSynced = cpuMs() - c0;
  const tSynced = performance.now() - t0;
  // idle: two 1 s windows in a row with at most 100 ms of CPU (as the bench's waitIdle)
  let quiet = 0;
  let last = cpuMs();
  while (quiet < 2) {
    await new Promise((r) => setTimeout(r, 1000));
    const now = cpuMs();
    quiet = now - last <= 100 ? quiet + 1 : 0;
    last = now;
  }
  const cReady = last - c0 - 0; // CPU until the quiet stretch ended (its ~2 s of idle in it)
  const hwmReady = statusKb('VmHWM');
  const i0 = cpuMs();
  await new Promise((r) => setTimeout(r, 10_000));
  const idleMs = cpuMs() - i0;
  const rssIdle = statusKb('VmRSS');
  // BERTH_FAKE_DROP_PROF=<file>: a CPU profile of the drops alone
  const profFile = process.env.BERTH_FAKE_DROP_PROF;
  const session = profFile ? new Session() : undefined;
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => session?.post(method, params, (err, res) => (err ? reject(err) : resolve(res))));
  if (session) {
    session.connect();
    await post('Profiler.enable');
    await post('Profiler.setSamplingInterval', { interval: 200 });
    await post('Profiler.start');
  }
  const dropCpu: number[] = [];
  const dropWall: number[] = [];
  for (let i = 0; i < drops; i++) {
    const name = `drop${String(i).padStart(3, '0')}x${Date.now().toString(36)}`;
    const got = new Promise<void>((r) => startWaiters.set(name, r));
    const a = cpuMs();
    const w = performance.now();
    await fs.writeFile(path.join(d.specsDir, `${name}.yaml`), specText(name, ['true']));
    await got;
    dropWall.push(performance.now() - w);
    dropCpu.push(cpuMs() - a);
    startWaiters.delete(name);
    await new Promise((r) => setTimeout(r, 1500));
  }
  if (session && profFile) {
    const { profile } = (await post('Profiler.stop')) as { profile: unknown };
    await fs.writeFile(profFile, JSON.stringify(profile));
    session.disconnect();
  }
  const hwm = statusKb('VmHWM');
  // what the controller holds (after a full collection; with --expose-gc)
  const gc = (globalThis as { gc?: () => void }).gc;
  gc?.();
  const liveHeapMb = gc ? Math.round(process.memoryUsage().heapUsed / 2 ** 20) : undefined;
  abort.abort();
  const code = await done;
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)] ?? NaN;
  console.log(
    JSON.stringify({
      cold,
      cpuUntilStartedMs: Math.round(cStarted),
      cpuUntilSyncedMs: Math.round(cSynced),
      cpuUntilIdleMs: Math.round(cReady),
      wallUntilSyncedMs: Math.round(tSynced),
      peakRssBeforeDropsMb: Math.round(hwmReady / 1024),
      peakRssMb: Math.round(hwm / 1024),
      idleRssMb: Math.round(rssIdle / 1024),
      liveHeapMb,
      idleCpuPct: +(idleMs / 100).toFixed(2),
      dropCpuMs: dropCpu.map((x) => Math.round(x)),
      dropCpuMedianMs: Math.round(med(dropCpu)),
      dropWallMs: dropWall.map((x) => Math.round(x)),
      exit: code,
      load: readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' '),
    }),
  );
}

const [mode, root, arg, flag] = process.argv.slice(2);
if (!root) throw new Error('usage: controller-fake.ts gen|run <dir> [count|drops] [--cold]');
(mode === 'gen' ? gen(root, Number(arg ?? 100_000)) : runOnce(root, Number(arg ?? 5), flag === '--cold' || arg === '--cold')).then(
  () => process.exit(0),
  (err: unknown) => {
    console.error(err);
    process.exit(1);
  },
);

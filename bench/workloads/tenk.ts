/**
 * Ten thousand (issue 18, `BENCH_ONLY=tenk`): a folder of 10,000 spec files, 9,950 of them
 * finished with their containers collected and 50 running (`sleep 600`, started by berth).
 *
 * The 9,950 finished ones are not run (that would take most of an hour here): their status
 * records are written as berth writes a finished, collected attempt's (the shape of a real
 * record of the fleet workload: phase Succeeded, reason Completed, run 1, the spec's own hash
 * from berth's loader, container id, engine boot, times, an inspect attestation, collectedAt),
 * and no container exists for them, as after a TTL. An in-process pass over the folder must plan
 * nothing for them (checked): that is what makes the records "as real ones".
 *
 * Then, as workload 5 at 1,000: the controller CLI over the folder (`--max-running 60`: room
 * for the drops): start-up to idle, idle CPU over 10 s, peak RSS, drop-to-running with 10,000
 * specs in the folder; and the engine calls of a no-op pass, counted in-process.
 */
import { createHash } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { reconcilePass, type PassConfig } from '../../src/controller/pass';
import { createDockerEngine } from '../../src/engine/docker';
import { CallCounter, instrumentEngine } from '../../src/engine/wrap';
import { changeCount } from '../../src/plan/render';
import { loadSpecs } from '../../src/spec/loader';
import { StatusStore } from '../../src/status/store';
import type { AttemptStatus } from '../../src/status/types';
import type { RawEngine } from '../lib/engine';
import { names, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { berth, sleep } from '../lib/proc';
import { fmtMs } from '../lib/stats';
import { verdictOf, type Row } from '../lib/report';
import { controllerAt1000, warmController, type ControllerAt1000 } from './controller';

export const TENK_TARGETS = { rssMb: 250, readyMs: 5000, dropOverheadMs: 150, idleCpuPct: 1 };

export interface TenkSamples {
  specs: number;
  running: number;
  /** Writing the 9,950 records (information). */
  fabricateMs: number;
  /** Engine calls of a no-op pass over the folder, by op, counted in-process. */
  calls: Record<string, number>;
  /** Its time, in-process (information). */
  passMs: number;
  controller: ControllerAt1000;
  /**
   * The same controller started again over the same folder and state (`BENCH_TENK_RESTART=1`; the
   * hundredk workload sets it): a restart, the spec cache and records kept. The first start above
   * finds a spec cache written by another build (the bench's in-process passes) and parses every file.
   */
  restart?: ControllerAt1000;
  /**
   * `BENCH_TENK_AB=<label>=[<node>@]<bin/berth.js of another build>,...`: the controller of each build
   * (on this Node, or on `<node>`: the build before a Node upgrade, on its own)
   * and of this one (label `this`) in turn, over the same folder, `BENCH_TENK_AB_ROUNDS` rounds;
   * each timed run right after an untimed start of the same build (its spec cache on disk).
   */
  ab?: { label: string; round: number; controller: ControllerAt1000 }[];
}

export function finishedRecord(instance: string, name: string, hash: string, resultsRoot: string, at: number): AttemptStatus {
  const t = (ms: number) => new Date(at + ms).toISOString();
  // one id per name, as the engine gives (the name padded made one id of t1000 and t10000, and so two records naming one container)
  const id = createHash('sha256').update(name).digest('hex');
  const checks = ['labels', 'image', 'networks', 'mounts', 'security', 'namespaces', 'ports', 'limits', 'init-restart', 'user', 'root filesystem', 'dns'].map(
    (c) => ({
      name: c,
      ok: true,
      detail: `${c} as the spec says`,
    }),
  );
  return {
    name,
    instance,
    phase: 'Succeeded',
    specHash: hash,
    source: `${name}.yaml`,
    run: 1,
    retriesUsed: 0,
    createdAt: t(0),
    history: [],
    updatedAt: t(9000),
    provisionedAt: t(0),
    resultsDir: path.join(resultsRoot, name, 'run-1', 'results'),
    containerId: id,
    engineBoot: { id: 'b'.repeat(64), at: t(-3_600_000) },
    startedAt: t(700),
    lastAttestation: { at: t(720), depth: 'inspect', ok: true, checks },
    reason: 'Completed',
    exitCode: 0,
    finishedAt: t(1200),
    collectedAt: t(8800),
  } as AttemptStatus;
}

export async function tenk(engine: RawEngine, run: BenchRun, total: number, running: number, drops: number, log: (m: string) => void): Promise<TenkSamples> {
  const sb = await run.berthSandbox('t');
  const finished = total - running;
  // The running ones first, started by berth itself.
  await sb.writeSpecs(names('r', running), ['sleep', '600']);
  await berth(['reconcile', '--once', '--max-running', String(running), '--concurrency', '8', ...sb.globalArgs('warn')], { timeoutMs: 600_000 });
  log(`tenk: ${running} running; writing ${finished} finished attempts' specs and records`);
  const t0 = performance.now();
  const done = names('t', finished);
  for (let i = 0; i < done.length; i += 500) await sb.writeSpecs(done.slice(i, i + 500), ['true']);
  const load = await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot });
  if (load.errors.length) throw new Error(`tenk: spec errors: ${load.errors[0]?.message}`);
  const hashOf = new Map(load.specs.map((s) => [s.spec.name, s.hash]));
  const dir = path.join(sb.stateDir, sb.instance, 'attempts');
  await fs.mkdir(dir, { recursive: true });
  const at = Date.now() - 3_000_000;
  for (let i = 0; i < done.length; i += 200) {
    await Promise.all(
      done.slice(i, i + 200).map((n, j) => {
        const h = hashOf.get(n);
        if (!h) throw new Error(`tenk: ${n} did not load`);
        return fs.writeFile(path.join(dir, `${n}.json`), JSON.stringify(finishedRecord(sb.instance, n, h, sb.resultsRoot, at + (i + j) * 250), null, 2) + '\n');
      }),
    );
  }
  const fabricateMs = performance.now() - t0;

  // A no-op pass, in-process: nothing planned, and its engine calls.
  const counter = new CallCounter();
  const berthEngine = instrumentEngine(createDockerEngine(), counter.listener);
  const cfg: PassConfig = sb.passConfig({ maxRunning: running, attestIntervalMs: 3_600_000 });
  let calls: Record<string, number> = {};
  let passMs = 0;
  for (let i = 0; i < 2; i++) {
    counter.reset();
    const p0 = performance.now();
    const res = await reconcilePass(cfg, berthEngine, new StatusStore(sb.stateDir, sb.instance));
    passMs = performance.now() - p0;
    if (changeCount(res.plan) > 0) {
      const a = res.plan.actions.find((x) => x.ops.length > 0);
      throw new Error(`tenk: a pass over the ${total} plans ${changeCount(res.plan)} changes (first: ${a?.attempt} ${a?.kind}: ${a?.summary})`);
    }
    calls = counter.snapshot();
  }
  log(`tenk: no-op pass in-process ${fmtMs(passMs)}, calls ${JSON.stringify(calls)}`);
  const builds = (process.env.BENCH_TENK_AB ?? '')
    .split(',')
    .filter((x) => x.includes('='))
    .map((x) => ({ label: x.slice(0, x.indexOf('=')), bin: x.slice(x.indexOf('=') + 1) }));
  if (!builds.length) {
    const again = process.env.BENCH_TENK_RESTART === '1';
    // room for the drops of both starts (each start's drops keep running)
    const maxRunning = running + drops * (again ? 2 : 1) + 5;
    const controller = await controllerAt1000(engine, run, sb, total, drops, log, maxRunning);
    if (!again) return { specs: total, running, fabricateMs, calls, passMs, controller };
    log(`tenk: the controller over ${total} specs again (a restart: its spec cache and the records kept)`);
    const restart = await controllerAt1000(engine, run, sb, total, drops, log, maxRunning, { tag: 'w' });
    return { specs: total, running, fabricateMs, calls, passMs, controller, restart };
  }
  // A/B: each build's controller in turn over the same folder; every run's drops stay running, so
  // the limit leaves room for all of them.
  const rounds = Math.max(1, Number(process.env.BENCH_TENK_AB_ROUNDS ?? 2));
  const contenders = [...builds, { label: 'this', bin: undefined }];
  const maxRunning = running + drops * rounds * contenders.length + 5;
  const ab: NonNullable<TenkSamples['ab']> = [];
  for (let r = 0; r < rounds; r++) {
    // alternate the order by round
    for (const c of r % 2 ? [...contenders].reverse() : contenders) {
      log(
        `tenk A/B round ${r + 1}: ${c.label} (load ${os
          .loadavg()
          .map((x) => x.toFixed(1))
          .join(' ')})`,
      );
      const tag = `${c.label.replace(/[^a-z0-9]/g, '')}${r}x`;
      // its own spec cache first (the other build's was just written over it)
      await warmController(sb, maxRunning, c.bin);
      ab.push({
        label: c.label,
        round: r + 1,
        controller: await controllerAt1000(engine, run, sb, total, drops, log, maxRunning, { ...(c.bin ? { bin: c.bin } : {}), tag }),
      });
    }
  }
  const controller = (ab.filter((x) => x.label === 'this').at(-1) as (typeof ab)[number]).controller;
  if (process.env.BENCH_TENK_PROFILE_DIR) await profileTenk(engine, run, sb, total, maxRunning, process.env.BENCH_TENK_PROFILE_DIR, log);
  return { specs: total, running, fabricateMs, calls, passMs, controller, ab };
}

/**
 * `BENCH_TENK_PROFILE_DIR`: this build's controller once more, untimed, under `--cpu-prof`
 * (start-up, first pass, 2 drops) with a heap snapshot taken once it is idle (SIGUSR2), both
 * into the folder.
 */
async function profileTenk(
  engine: RawEngine,
  run: BenchRun,
  sb: BerthSandbox,
  total: number,
  maxRunning: number,
  dir: string,
  log: (m: string) => void,
): Promise<void> {
  await fs.mkdir(dir, { recursive: true });
  const nodeArgs = [
    '--cpu-prof',
    '--cpu-prof-dir',
    dir,
    '--cpu-prof-name',
    'tenk-controller.cpuprofile',
    '--heapsnapshot-signal=SIGUSR2',
    '--diagnostic-dir',
    dir,
  ];
  await controllerAt1000(engine, run, sb, total, 2, log, maxRunning, {
    nodeArgs,
    tag: 'prof',
    atIdle: async (pid) => {
      const before = new Set(await fs.readdir(dir));
      process.kill(pid, 'SIGUSR2');
      // the snapshot is written by the controller's own thread; wait for its file to be complete
      for (let i = 0; i < 600; i++) {
        const made = (await fs.readdir(dir)).filter((f) => f.endsWith('.heapsnapshot') && !before.has(f));
        if (made.length) {
          const f = path.join(dir, made[0] as string);
          const a = (await fs.stat(f)).size;
          await sleep(1000);
          if ((await fs.stat(f)).size === a && a > 0) {
            log(`tenk: heap snapshot ${f} (${(a / 1e6).toFixed(0)} MB)`);
            return;
          }
        } else await sleep(500);
      }
      log('tenk: no heap snapshot within 5 min');
    },
  });
  log(`tenk: CPU profile ${path.join(dir, 'tenk-controller.cpuprofile')}`);
}

export function tenkRows(t: TenkSamples, rows: Row[]): void {
  const c = t.controller;
  const n = `${t.specs.toLocaleString('en')} specs (${(t.specs - t.running).toLocaleString('en')} finished and collected, ${t.running} running)`;
  const mb = c.rssPeakKb / 1024;
  rows.push({
    id: 'tenk-rss',
    workload: `Controller watching ${n}: peak RSS (VmHWM)`,
    berth: `${mb.toFixed(0)} MB (before the drops ${(c.rssPeakBeforeDropsKb / 1024).toFixed(0)} MB; idle RSS ${(c.rssIdleKb / 1024).toFixed(0)} MB)`,
    reference: '—',
    refValue: '—',
    target: `≤ ${TENK_TARGETS.rssMb} MB`,
    verdict: verdictOf(mb <= TENK_TARGETS.rssMb),
  });
  rows.push({
    id: 'tenk-ready',
    workload: `Controller watching ${n}: start-up + first pass until idle`,
    berth: fmtMs(c.readyMs),
    reference: '—',
    refValue: '—',
    target: `≤ ${fmtMs(TENK_TARGETS.readyMs)}`,
    verdict: verdictOf(c.readyMs <= TENK_TARGETS.readyMs),
  });
  const pct = (100 * c.idleCpuMs) / c.idleWindowMs;
  rows.push({
    id: 'tenk-idle-cpu',
    workload: `Controller watching ${n}: CPU while idle`,
    berth: `${c.idleCpuMs} ms over ${(c.idleWindowMs / 1000).toFixed(1)} s = ${pct.toFixed(2)}% of a core`,
    reference: '—',
    refValue: '—',
    target: `≤ ${TENK_TARGETS.idleCpuPct}% of a core`,
    verdict: verdictOf(pct <= TENK_TARGETS.idleCpuPct),
  });
  if (c.drops.berth.length) {
    const floor = median(c.drops.floor);
    const over = c.drops.berth.map((x) => x - floor);
    const m = median(over);
    rows.push({
      id: 'tenk-drop',
      workload: `Drop-to-running overhead, controller watching ${n} (${c.drops.berth.length} drops)`,
      berth: `median ${fmtMs(m)} (spec written → started: ${c.drops.berth.map((x) => x.toFixed(0)).join(', ')} ms)`,
      reference: 'raw create+start of one container (start event), same run',
      refValue: fmtMs(floor),
      target: `overhead median ≤ ${TENK_TARGETS.dropOverheadMs} ms`,
      verdict: verdictOf(m <= TENK_TARGETS.dropOverheadMs),
    });
  }
  for (const x of t.ab ?? []) {
    const k = x.controller;
    const floor = median(k.drops.floor);
    rows.push({
      id: `tenk-ab-${x.label}-${x.round}`,
      workload: `A/B round ${x.round}, build ${x.label}: ready, idle CPU, peak RSS (before the drops), drop overhead median`,
      berth: `${fmtMs(k.readyMs)}; ${k.idleCpuMs} ms / ${(k.idleWindowMs / 1000).toFixed(1)} s; ${(k.rssPeakKb / 1024).toFixed(0)} MB (${(k.rssPeakBeforeDropsKb / 1024).toFixed(0)} MB); ${fmtMs(median(k.drops.berth.map((b) => b - floor)))} (${k.drops.berth.map((b) => b.toFixed(0)).join(', ')} ms)`,
      reference: 'raw create+start, same run',
      refValue: fmtMs(floor),
      target: '—',
      verdict: 'info',
    });
  }
  const fmt = (x: Record<string, number>) =>
    Object.entries(x)
      .map(([k, v]) => `${k} ${v}`)
      .join(', ');
  // what a pass makes at any size: the four label-filtered lists and its look at the engine's boot
  const perPass = ['containers.list', 'engine.boot', 'images.list', 'networks.list', 'volumes.list'];
  const constant = Object.keys(t.calls).length === perPass.length && perPass.every((k) => t.calls[k] === 1);
  rows.push({
    id: 'tenk-noop-calls',
    workload: `Engine calls of a no-op pass over ${n} (in-process: ${fmtMs(t.passMs)})`,
    berth: fmt(t.calls),
    reference: 'a pass at any size',
    refValue: perPass.map((k) => `${k} 1`).join(', '),
    target: 'the same',
    verdict: verdictOf(constant),
  });
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  if (!s.length) return NaN;
  const m = Math.floor(s.length / 2);
  return s.length % 2 ? (s[m] as number) : ((s[m - 1] as number) + (s[m] as number)) / 2;
}

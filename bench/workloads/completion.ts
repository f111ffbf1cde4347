/**
 * Completion detection: from a container's exit (the engine's `die` event, its own timestamp) to
 * berth's status record saying the attempt finished (the record's `updatedAt` when it was
 * written with a finished phase), p50/p95, in the controller (`reconcile` without --once) and in
 * `reconcile --once --wait`. N attempts `sleep 0.5`, 8 running at a time. Both timestamps come
 * from this host's clock; nothing is polled for the figure itself (records are read once at the
 * end; only "all finished" is waited for, with a bounded poll, since no event says so).
 */
import { LABELS } from '../../src/constants';
import { StatusStore } from '../../src/status/store';
import type { EngineEvent, RawEngine } from '../lib/engine';
import { names, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { berth, BERTH_BIN, buildOf, Daemon, REPO, sleep, type Build } from '../lib/proc';

const FINISHED = new Set(['Succeeded', 'Failed', 'TimedOut']);

export interface CompletionSamples {
  /** die event → finished record written, ms, one per attempt. */
  controller: number[];
  wait: number[];
  /** BENCH_AB: the same for another build. */
  other?: { label: string; controller: number[]; wait: number[] };
}

async function collect(engine: RawEngine, sb: BerthSandbox, run: () => Promise<void>, n: number): Promise<number[]> {
  const dies = new Map<string, EngineEvent>();
  const sub = await engine.subscribe({ type: ['container'], event: ['die'], label: [`${LABELS.instance}=${sb.instance}`] }, (ev) => {
    const a = ev.attributes[LABELS.attempt];
    if (a !== undefined && !dies.has(a)) dies.set(a, ev);
  });
  try {
    await run();
  } finally {
    sub.close();
  }
  const recs = await new StatusStore(sb.stateDir, sb.instance).loadAll();
  const out: number[] = [];
  for (const [name, ev] of dies) {
    const r = recs.get(name);
    if (!r || !FINISHED.has(r.phase)) throw new Error(`completion: ${name} died but its record says ${r?.phase ?? 'nothing'}`);
    out.push(Date.parse(r.updatedAt) - ev.engineMs);
  }
  if (out.length !== n) throw new Error(`completion: ${out.length} die events for ${n} attempts`);
  return out;
}

async function allFinished(sb: BerthSandbox, n: number, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const recs = await new StatusStore(sb.stateDir, sb.instance).loadAll();
    if ([...recs.values()].filter((r) => FINISHED.has(r.phase)).length >= n) return;
    await sleep(250);
  }
  throw new Error(`completion: not all ${n} attempts finished within ${timeoutMs} ms`);
}

export async function completion(engine: RawEngine, run: BenchRun, n: number, log: (m: string) => void): Promise<CompletionSamples> {
  const other = buildOf(process.env.BENCH_AB);
  if (!other) return once(engine, run, n, log);
  // this build, the other, and this one again: a drift of the machine shows as a gap between this build's two
  const a = await once(engine, run, n, log, undefined, 'a');
  const o = await once(engine, run, n, log, other, 'o');
  const b = await once(engine, run, n, log, undefined, 'b');
  return {
    controller: [...a.controller, ...b.controller],
    wait: [...a.wait, ...b.wait],
    other: { label: other.label, controller: o.controller, wait: o.wait },
  };
}

async function once(engine: RawEngine, run: BenchRun, n: number, log: (m: string) => void, build?: Build, tag = ''): Promise<CompletionSamples> {
  const cmd = ['sh', '-c', 'sleep 0.5'];
  const of = build ? ` (build ${build.label})` : '';
  log(`completion detection: ${n} attempts through reconcile --once --wait${of}`);
  const w = await run.berthSandbox(`w${tag}`);
  await w.writeSpecs(names('w', n), cmd);
  const wait = await collect(
    engine,
    w,
    async () => {
      await berth(['reconcile', '--once', '--wait', '--timeout', '600', '--max-running', '8', '--concurrency', '8', ...w.globalArgs('warn')], {
        timeoutMs: 700_000,
        ...(build ? { build } : {}),
      });
    },
    n,
  );
  await berth(['clean', ...w.globalArgs('warn')]);

  log(`completion detection: ${n} attempts dropped into a running controller${of}`);
  const c = await run.berthSandbox(`k${tag}`);
  const d = new Daemon(build?.node ?? process.execPath, [build?.bin ?? BERTH_BIN, 'reconcile', '--max-running', '8', '--concurrency', '8', ...c.globalArgs()], {
    cwd: REPO,
  });
  let controller: number[];
  try {
    await d.waitFor(/controller started/, 120_000);
    controller = await collect(
      engine,
      c,
      async () => {
        await c.writeSpecs(names('k', n), cmd);
        await allFinished(c, n, 600_000);
      },
      n,
    );
  } finally {
    await d.stop();
  }
  await berth(['clean', ...c.globalArgs('warn')]);
  return { controller, wait };
}

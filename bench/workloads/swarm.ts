/**
 * `--backend swarm` (BENCH_ONLY=swarm), on a two-node swarm of dockerds of the bench's own (the
 * tests' test/support/swarm.ts: each node in a network namespace of its own; the shared engine
 * is never a node and never `swarm init`ed), torn down at the end:
 *   - drop-to-running: a spec file written into a running controller's folder (`reconcile
 *     --backend swarm`) → its run's task `running` (the manager's timestamp of that state),
 *     against the floor: `POST /services/create` of the same replicated job (same image,
 *     command, pinned to the same node, restart none, dnsrr) → its task `running`, measured the
 *     same way, alternating, in the same run. berth's run also has its two node-local volumes
 *     and its prepared container made first (what moves fixtures in and results out);
 *   - a no-op pass over N finished swarm attempts (10, then 200), in-process with a fresh
 *     backend each time (as a CLI pass): every HTTP request the process makes to the manager
 *     and the nodes' engines is counted (node:diagnostics_channel), by method and path.
 */
import dc from 'node:diagnostics_channel';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import Dockerode from 'dockerode';
import { createSwarmBackend } from '../../src/backend/swarm';
import { reconcilePass, type PassConfig } from '../../src/controller/pass';
import { serviceBody } from '../../src/engine/swarm/services';
import { changeCount } from '../../src/plan/render';
import { StatusStore } from '../../src/status/store';
import { TestSwarm } from '../../test/support/swarm';
import { BENCH_LABEL, names, specText, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { berth, BERTH_BIN, Daemon, REPO, sleep } from '../lib/proc';
import { spread, verdictOf, type Row } from '../lib/report';
import { pairedRatio, summarize } from '../lib/stats';

const IMAGE = 'berth/busybox:local';
/** Drop-to-running on the swarm: ≤ this × the floor (services/create → task running), same run. */
export const SWARM_DROP_VS_FLOOR = 1.2;
const CMD = ['sleep', '600'];

export interface SwarmNoop {
  n: number;
  ms: number[];
  /** HTTP requests of each pass (manager and nodes). */
  calls: number[];
  byRequest: Record<string, number>;
}

export interface SwarmSamples {
  nodes: number;
  swarmUpMs: number;
  /** Spec written → its task running (manager's timestamp), ms. */
  berth: number[];
  /** services/create sent → its task running (manager's timestamp), ms. */
  floor: number[];
  /** Of berth's: spec written → its service created (the manager's CreatedAt): berth's own part. */
  berthToService: number[];
  noop: SwarmNoop[];
}

interface TaskInfo {
  Status: { State: string; Timestamp: string };
}

/** Polls the manager until the service's task is running; the manager's time of that state (ms since the epoch). */
async function runningAt(m: Dockerode, service: string, timeoutMs: number): Promise<number> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const tasks = (await m.listTasks({ filters: JSON.stringify({ service: [service] }) }).catch(() => [])) as TaskInfo[];
    const t = tasks.find((x) => x.Status.State === 'running');
    if (t) return Date.parse(t.Status.Timestamp);
    await sleep(20);
  }
  throw new Error(`service ${service}: no running task within ${timeoutMs} ms`);
}

/** The node a service is pinned to. */
async function pinnedNode(m: Dockerode, service: string): Promise<string> {
  const s = (await m.getService(service).inspect()) as { Spec: { TaskTemplate: { Placement?: { Constraints?: string[] } } } };
  const c = (s.Spec.TaskTemplate.Placement?.Constraints ?? []).find((x) => x.startsWith('node.id=='));
  if (!c) throw new Error(`service ${service} is pinned to no node`);
  return c.slice('node.id=='.length);
}

async function drops(s: TestSwarm, run: BenchRun, sb: BerthSandbox, count: number, log: (m: string) => void): Promise<{ berth: number[]; floor: number[]; berthToService: number[] }> {
  const m = s.manager.docker;
  const out = { berth: [] as number[], floor: [] as number[], berthToService: [] as number[] };
  const env = { ...process.env, DOCKER_HOST: s.manager.address };
  const ctl = new Daemon(process.execPath, [BERTH_BIN, 'reconcile', '--backend', 'swarm', '--max-running', '50', '--concurrency', '8', ...sb.globalArgs()], { cwd: REPO, env });
  const floors: string[] = [];
  try {
    await ctl.waitFor(/controller started/, 60_000);
    // one drop first, unmeasured: the nodes' hardening probes (once per node per berth process)
    for (let i = -1; i < count; i++) {
      const name = `sw${i < 0 ? 'warm' : String(i).padStart(3, '0')}`;
      const t0 = Date.now();
      await fs.writeFile(path.join(sb.specsDir, `${name}.yaml`), specText(name, CMD));
      const svc = sb.containerName(name);
      const at = await runningAt(m, svc, 120_000);
      if (i < 0) continue;
      out.berth.push(at - t0);
      out.berthToService.push(Date.parse(((await m.getService(svc).inspect()) as { CreatedAt: string }).CreatedAt) - t0);
      await sleep(300);
      const fname = `bench-${run.id}-swfloor-${i}`;
      const node = await pinnedNode(m, svc);
      const t1 = Date.now();
      await m.createService(
        serviceBody({
          name: fname,
          labels: { [BENCH_LABEL]: run.id },
          containerLabels: { [BENCH_LABEL]: run.id },
          image: IMAGE,
          cmd: CMD,
          env: [],
          workingDir: '/workspace',
          nodeId: node,
          networks: [],
          mounts: [],
          secrets: [],
          capDrop: ['ALL'],
          capAdd: [],
          init: true,
          readonlyRootfs: false,
          pidsLimit: 1024,
        }) as never,
      );
      floors.push(fname);
      out.floor.push((await runningAt(m, fname, 120_000)) - t1);
      await sleep(300);
    }
    log(`  swarm drops: berth ${out.berth.map((x) => x.toFixed(0)).join(' ')} ms (of which to its service created: ${out.berthToService.map((x) => x.toFixed(0)).join(' ')} ms); floor (services/create → task running) ${out.floor.map((x) => x.toFixed(0)).join(' ')} ms`);
  } finally {
    const { code, signal } = await ctl.stop();
    if (code !== 0) log(`warning: the swarm controller exited ${code ?? signal}:\n${ctl.stderr.slice(-1500)}`);
    for (const f of floors) await m.getService(f).remove().catch(() => undefined);
  }
  return out;
}

/** Every HTTP request this process makes while `f` runs, by method and path (ids and query dropped). */
async function counted<T>(f: () => Promise<T>): Promise<{ value: T; total: number; byRequest: Record<string, number> }> {
  const by = new Map<string, number>();
  let total = 0;
  const on = (msg: unknown) => {
    const r = (msg as { request: { method: string; path: string } }).request;
    const p = r.path.split('?')[0]?.replace(/^\/v[\d.]+/, '').replace(/\/[0-9a-z]{20,}|\/berth[^/]*/g, '/{id}') ?? '';
    const key = `${r.method} ${p}`;
    by.set(key, (by.get(key) ?? 0) + 1);
    total++;
  };
  dc.subscribe('http.client.request.start', on);
  try {
    const value = await f();
    return { value, total, byRequest: Object.fromEntries([...by.entries()].sort(([a], [b]) => a.localeCompare(b))) };
  } finally {
    dc.unsubscribe('http.client.request.start', on);
  }
}

async function noops(s: TestSwarm, sb: BerthSandbox, sizes: number[], rounds: number, log: (m: string) => void): Promise<SwarmNoop[]> {
  const env = { ...process.env, DOCKER_HOST: s.manager.address };
  const cfg: PassConfig = sb.passConfig({ env });
  const out: SwarmNoop[] = [];
  let have = 0;
  for (const n of sizes) {
    await sb.writeSpecs(names('swn', n - have, have), ['true']);
    const t0 = Date.now();
    await berth(['reconcile', '--once', '--wait', '--timeout', '1500', '--backend', 'swarm', '--max-running', '50', '--concurrency', '8', ...sb.globalArgs('warn')], { env, timeoutMs: 1_600_000 });
    have = n;
    log(`  swarm no-op at ${n}: seeded in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
    const r: SwarmNoop = { n, ms: [], calls: [], byRequest: {} };
    const pass = async () => {
      const engine = createSwarmBackend({ docker: new Dockerode({ socketPath: s.manager.socket }), env });
      const t = performance.now();
      const c = await counted(() => reconcilePass(cfg, engine, new StatusStore(sb.stateDir, sb.instance)));
      const ms = performance.now() - t;
      if (changeCount(c.value.plan) !== 0) throw new Error(`the swarm pass at ${n} was not a no-op: ${changeCount(c.value.plan)} operations`);
      return { ms, c };
    };
    await pass(); // warm-up: module load, schema compile
    for (let i = 0; i < rounds; i++) {
      const { ms, c } = await pass();
      r.ms.push(ms);
      r.calls.push(c.total);
      r.byRequest = c.byRequest;
    }
    log(`  swarm no-op at ${n}: ${r.calls.join(', ')} HTTP requests, ${r.ms.map((x) => x.toFixed(0)).join(', ')} ms`);
    out.push(r);
  }
  return out;
}

export async function swarmWorkload(run: BenchRun, dropCount: number, sizes: number[], rounds: number, log: (m: string) => void): Promise<SwarmSamples> {
  const s = new TestSwarm(`bench-${run.id}`, { nodes: [{}, {}], images: [IMAGE, 'berth/egress-proxy:local'] });
  await s.up();
  log(`swarm of ${s.nodes.length} dockerds up in ${s.startMs} ms`);
  const env = { ...process.env, DOCKER_HOST: s.manager.address };
  const dropSb = await run.berthSandbox('swd');
  const noopSb = await run.berthSandbox('swn');
  try {
    const d = await drops(s, run, dropSb, dropCount, log);
    const noop = await noops(s, noopSb, sizes, rounds, log);
    return { nodes: s.nodes.length, swarmUpMs: s.startMs, ...d, noop };
  } finally {
    for (const sb of [dropSb, noopSb]) await berth(['clean', '--backend', 'swarm', ...sb.globalArgs('warn')], { env, allowFail: true, timeoutMs: 600_000 }).catch(() => undefined);
    await s.down();
    const left = await s.traces();
    if (left.length) log(`warning: the bench swarm left ${left.join(', ')}`);
  }
}

export function swarmRows(w: SwarmSamples, rows: Row[]): void {
  const r = pairedRatio(w.berth, w.floor);
  rows.push({
    id: 'swarm-drop-vs-floor',
    workload: `--backend swarm (${w.nodes} nodes): spec dropped into a running controller → its task running (${w.berth.length} drops)`,
    berth: spread(summarize(w.berth)),
    reference: '`POST /services/create` of the same replicated job, same node → its task running (floor)',
    refValue: spread(summarize(w.floor)),
    ratio: r,
    target: `≤ ${SWARM_DROP_VS_FLOOR}×`,
    verdict: verdictOf(r.median <= SWARM_DROP_VS_FLOOR),
    chart: { label: 'swarm drop-to-running vs services/create', target: SWARM_DROP_VS_FLOOR },
  });
  const counts = w.noop.map((x) => `${x.n}: ${[...new Set(x.calls)].join('/')}`);
  const all = w.noop.flatMap((x) => x.calls);
  const largest = w.noop[w.noop.length - 1];
  rows.push({
    id: 'swarm-noop-calls',
    workload: `--backend swarm: no-op pass over ${w.noop.map((x) => x.n).join(' and ')} finished attempts (in-process, fresh backend), HTTP requests to the manager and the nodes`,
    berth: `${counts.join('; ')} requests${largest ? `, ${spread(summarize(largest.ms))} at ${largest.n}` : ''}`,
    reference: 'the same number at every size',
    refValue: `${all[0] ?? '?'}`,
    target: 'constant',
    verdict: verdictOf(all.length > 0 && all.every((c) => c === all[0])),
  });
}

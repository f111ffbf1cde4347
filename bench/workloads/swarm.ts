/**
 * `--backend swarm` (BENCH_ONLY=swarm), on a two-node swarm of dockerds of the bench's own (the
 * tests' test/support/swarm.ts: each node in a network namespace of its own; the shared engine
 * is never a node and never `swarm init`ed), torn down at the end:
 *   - drop-to-running: a spec file written into a running controller's folder (`reconcile
 *     --backend swarm`) → its run's task `running` (the manager's timestamp of that state),
 *     against the floor: the same job by the raw API, `POST /networks/create` of an internal
 *     overlay of its own (what `network: none` is on a swarm: berth's `<run>-none`) then
 *     `POST /services/create` of berth's run's own service spec on it (floorRun) → its task
 *     `running`, measured the same way, after each drop, in the same run. berth's run also has
 *     its two node-local volumes and its prepared container made first through the node's
 *     engine (what moves fixtures in and results out; the floor's node makes its volumes
 *     itself);
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
import { changeCount } from '../../src/plan/render';
import { StatusStore } from '../../src/status/store';
import { TestSwarm } from '../../test/support/swarm';
import { BENCH_LABEL, names, specText, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { berth, BERTH_BIN, Daemon, REPO, sleep } from '../lib/proc';
import { spread, verdictOf, type Row } from '../lib/report';
import { pairedRatio, summarize } from '../lib/stats';

const IMAGE = 'berth/busybox:local';
/** Drop-to-running on the swarm: ≤ this × the floor (networks/create + services/create → task running), same run. */
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
  /** The floor's networks/create sent (its services/create right after) → its task running (manager's timestamp), ms. */
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

interface ServiceSpec {
  Name: string;
  Labels?: Record<string, string>;
  TaskTemplate: {
    ContainerSpec: { Labels?: Record<string, string>; Mounts?: { Type: string; Source: string; Target: string }[]; Secrets?: unknown[] };
    Networks?: { Target: string; Aliases?: string[] }[];
  } & Record<string, unknown>;
}

/** A floor's run: its service and the internal overlay of its own it runs on. */
interface FloorRun {
  service: string;
  network: string;
}

/**
 * The floor's run of one drop, by the raw API: a fresh internal overlay of its own
 * (`POST /networks/create`: driver overlay, internal, not attachable, as berth makes a `none`
 * run's `<run>-none`), then `POST /services/create` of berth's run's own service spec (image,
 * command, environment, working folder, user, init, capabilities, limits, upstream DNS, restart
 * none, replicated job, dnsrr, pinned to the same node, its two volume mounts) under the
 * bench's labels and names: its volumes are new ones the node makes when it creates the task's
 * container (labelled through the mount's VolumeOptions), its network the overlay just made. The
 * same job as berth's run, no less (a network of the run's own, the same mounts and limits) and
 * no more (no prepared container, no volumes made beforehand: berth's own work).
 */
async function floorRun(m: Dockerode, berthService: string, spec: ServiceSpec, name: string, runId: string): Promise<FloorRun> {
  const c = spec.TaskTemplate.ContainerSpec;
  const nets = spec.TaskTemplate.Networks ?? [];
  if (c.Secrets?.length || nets.length !== 1 || nets[0]?.Aliases?.length)
    throw new Error(`berth's run ${berthService} is not a \`none\` run without secrets: the floor would not do its job`);
  const labels = { [BENCH_LABEL]: runId };
  const net = (await m.createNetwork({
    Name: `${name}-none`,
    Driver: 'overlay',
    Internal: true,
    Attachable: false,
    CheckDuplicate: true,
    Labels: labels,
  } as never)) as { id: string };
  await m.createService({
    ...spec,
    Name: name,
    Labels: labels,
    TaskTemplate: {
      ...spec.TaskTemplate,
      ContainerSpec: { ...c, Labels: labels, Mounts: (c.Mounts ?? []).map((x, i) => ({ ...x, Source: `${name}-${i}`, VolumeOptions: { Labels: labels } })) },
      Networks: [{ Target: net.id }],
    },
  } as never);
  return { service: name, network: net.id };
}

/** Retries `f` (the node removes a service's task container, which holds its network and volumes, in its own time), bounded. */
async function whenFree(f: () => Promise<unknown>, what: string, log: (m: string) => void): Promise<void> {
  for (let i = 0; ; i++) {
    try {
      await f();
      return;
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return;
      if (i >= 150) {
        log(`warning: ${what} could not be removed: ${(err as Error).message}`);
        return;
      }
      await sleep(200);
    }
  }
}

/**
 * The floors' services; their tasks' containers, through their nodes' engines (a node removes
 * them in its own time, and they hold the volumes: as berth's run removal does); their overlays
 * and the volumes their nodes made (all of them the bench's, by name and label).
 */
async function removeFloors(s: TestSwarm, floors: FloorRun[], runId: string, log: (m: string) => void): Promise<void> {
  const m = s.manager.docker;
  const label = JSON.stringify({ label: [`${BENCH_LABEL}=${runId}`] });
  for (const f of floors)
    await m
      .getService(f.service)
      .remove()
      .catch(() => undefined);
  for (const n of s.nodes) {
    for (const c of (await n.docker.listContainers({ all: true, filters: label })) as { Id: string }[])
      await n.docker
        .getContainer(c.Id)
        .remove({ force: true })
        .catch(() => undefined);
  }
  for (const f of floors) await whenFree(() => m.getNetwork(f.network).remove(), `the floor's network ${f.network}`, log);
  for (const n of s.nodes) {
    const vols = ((await n.docker.listVolumes({ filters: label })) as { Volumes: { Name: string }[] | null }).Volumes ?? [];
    for (const v of vols) await whenFree(() => n.docker.getVolume(v.Name).remove(), `the floor's volume ${v.Name}`, log);
  }
}

async function drops(
  s: TestSwarm,
  run: BenchRun,
  sb: BerthSandbox,
  count: number,
  log: (m: string) => void,
): Promise<{ berth: number[]; floor: number[]; berthToService: number[] }> {
  const m = s.manager.docker;
  const out = { berth: [] as number[], floor: [] as number[], berthToService: [] as number[] };
  const env = { ...process.env, DOCKER_HOST: s.manager.address };
  const ctl = new Daemon(process.execPath, [BERTH_BIN, 'reconcile', '--backend', 'swarm', '--max-running', '50', '--concurrency', '8', ...sb.globalArgs()], {
    cwd: REPO,
    env,
  });
  const floors: FloorRun[] = [];
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
      const spec = ((await m.getService(svc).inspect()) as { Spec: ServiceSpec }).Spec;
      const t1 = Date.now();
      floors.push(await floorRun(m, svc, spec, fname, run.id));
      out.floor.push((await runningAt(m, fname, 120_000)) - t1);
      await sleep(300);
    }
    log(
      `  swarm drops: berth ${out.berth.map((x) => x.toFixed(0)).join(' ')} ms (of which to its service created: ${out.berthToService.map((x) => x.toFixed(0)).join(' ')} ms); floor (networks/create + services/create → task running) ${out.floor.map((x) => x.toFixed(0)).join(' ')} ms`,
    );
  } finally {
    const { code, signal } = await ctl.stop();
    if (code !== 0) log(`warning: the swarm controller exited ${code ?? signal}:\n${ctl.stderr.slice(-1500)}`);
    await removeFloors(s, floors, run.id, log);
  }
  return out;
}

/** Every HTTP request this process makes while `f` runs, by method and path (ids and query dropped). */
async function counted<T>(f: () => Promise<T>): Promise<{ value: T; total: number; byRequest: Record<string, number> }> {
  const by = new Map<string, number>();
  let total = 0;
  const on = (msg: unknown) => {
    const r = (msg as { request: { method: string; path: string } }).request;
    const p =
      r.path
        .split('?')[0]
        ?.replace(/^\/v[\d.]+/, '')
        .replace(/\/[0-9a-z]{20,}|\/berth[^/]*/g, '/{id}') ?? '';
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
    await berth(
      ['reconcile', '--once', '--wait', '--timeout', '1500', '--backend', 'swarm', '--max-running', '50', '--concurrency', '8', ...sb.globalArgs('warn')],
      { env, timeoutMs: 1_600_000 },
    );
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
    for (const sb of [dropSb, noopSb])
      await berth(['clean', '--backend', 'swarm', ...sb.globalArgs('warn')], { env, allowFail: true, timeoutMs: 600_000 }).catch(() => undefined);
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
    reference:
      "`POST /networks/create` (an internal overlay of its own) + `POST /services/create` of the same job (berth's run's service spec), same node → its task running (floor)",
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

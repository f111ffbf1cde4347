/**
 * `--backend swarm` at fleet scale (BENCH_ONLY=swarm-scale; issue 55: "the swarm backend placing
 * 100,000 short attempts over the two-node test swarm, a sample of that in the bench,
 * extrapolated by measured rate, with the rate's per-node scaling shown from one node to two").
 *
 * On a two-node swarm of the bench's own (test/support/swarm.ts, as the `swarm` workload), each
 * round runs a sample of N short attempts (`true`, network none) with `reconcile --once --wait
 * --backend swarm` twice: on one node (the worker drained: every run goes to the manager) and on
 * both, with `--max-running` SLOTS per node (so SLOTS, then 2 × SLOTS), the order alternating by
 * round. Each phase has an instance of its own, cleaned (unmeasured) before the next, so no
 * finished service of one phase counts toward a node's load in the next.
 *
 * The rate is attempts finished per second of the whole command (berth's start, its node probes,
 * every pass, the harvests: nothing left out), and, apart, of its steady part (the first run's
 * start to the last run's end, from the records). 100,000 attempts are extrapolated at the
 * whole-command rate (the fixed start-up is paid once in a real fleet, so this is the pessimistic
 * figure). The two nodes share this machine's cores: the per-node scaling shown is what a second
 * node adds here, not what a second machine would.
 */
import { promises as fs, readFileSync } from 'node:fs';
import path from 'node:path';
import { StatusStore } from '../../src/status/store';
import { TestSwarm } from '../../test/support/swarm';
import { names, type BenchRun } from '../lib/fixture';
import { berth, BERTH_BIN, cpuMs } from '../lib/proc';
import { cpuOf } from './startup';
import { type Row, verdictOf } from '../lib/report';
import { pairedRatio, summarize } from '../lib/stats';

const IMAGE = 'berth/busybox:local';
/** The fleet the sample stands for. */
export const SWARM_FLEET = 100_000;
/** Target: 100,000 short attempts on the two-node test swarm within a day, at the measured rate. */
export const SWARM_FLEET_HOURS = 24;

export interface SwarmPhase {
  nodes: number;
  attempts: number;
  maxRunning: number;
  /** The whole `reconcile --once --wait` command, ms. */
  wallMs: number;
  /** The first run's start to the last run's end (the records), ms. */
  steadyMs: number;
  /** Runs per node id (short). */
  perNode: Record<string, number>;
  failed: number;
  /** CPU ms of the berth command (user + system, its threads and children). */
  berthCpuMs: number;
  /** CPU ms of each node's dockerd and containerd during the phase (not the shims and runc they start). */
  nodeCpuMs: number[];
  /** The share of all this machine's cores busy during the phase (/proc/stat), 0-1. */
  machineBusy: number;
}

/** busy and total jiffies of all cores (/proc/stat's first line). */
function machineJiffies(): { busy: number; total: number } {
  const f = (readFileSync('/proc/stat', 'utf8').split('\n')[0] ?? '').trim().split(/\s+/).slice(1).map(Number);
  const total = f.reduce((a, b) => a + b, 0);
  const idle = (f[3] ?? 0) + (f[4] ?? 0);
  return { busy: total - idle, total };
}

/** CPU ms of a node's dockerd and containerd so far. */
async function nodeCpu(n: TestSwarm['nodes'][number]): Promise<number> {
  const containerd = Number((await fs.readFile(path.join(n.root, 'x', 'containerd', 'containerd.pid'), 'utf8').catch(() => '')).trim());
  let ms = 0;
  for (const p of [n.pid, containerd])
    if (p)
      try {
        ms += cpuMs(p);
      } catch {
        // gone
      }
  return ms;
}

export interface SwarmScaleSamples {
  attempts: number;
  slots: number;
  swarmUpMs: number;
  /** Per round: one node, then two (whatever order they ran in). */
  rounds: { one: SwarmPhase; two: SwarmPhase }[];
}

const rate = (p: SwarmPhase, ms = p.wallMs) => (p.attempts * 1000) / ms;

async function phase(s: TestSwarm, run: BenchRun, tag: string, nodes: 1 | 2, n: number, slots: number, log: (m: string) => void): Promise<SwarmPhase> {
  const sb = await run.berthSandbox(tag);
  const env = { ...process.env, DOCKER_HOST: s.manager.address };
  const worker = s.workers[0] as TestSwarm['nodes'][number];
  await s.availability(worker, nodes === 1 ? 'drain' : 'active');
  try {
    await sb.writeSpecs(names('sc', n), ['true']);
    const maxRunning = slots * nodes;
    const cpu0 = await Promise.all(s.nodes.map(nodeCpu));
    const j0 = machineJiffies();
    const t0 = performance.now();
    const argv = ['reconcile', '--once', '--wait', '--timeout', '3000', '--backend', 'swarm', '--max-running', String(maxRunning), '--concurrency', '8'];
    const { cpu: berthCpuMs } = await cpuOf([process.execPath, BERTH_BIN, ...argv, ...sb.globalArgs('warn')], env);
    const wallMs = performance.now() - t0;
    const j1 = machineJiffies();
    const nodeCpuMs = (await Promise.all(s.nodes.map(nodeCpu))).map((c, k) => c - (cpu0[k] ?? 0));
    const machineBusy = (j1.busy - j0.busy) / Math.max(1, j1.total - j0.total);
    const recs = [...(await new StatusStore(sb.stateDir, sb.instance).loadAll()).values()];
    const starts = recs.map((r) => Date.parse(r.startedAt ?? '')).filter(Number.isFinite);
    const ends = recs.map((r) => Date.parse(r.finishedAt ?? '')).filter(Number.isFinite);
    const perNode: Record<string, number> = {};
    for (const r of recs) {
      const node = (r.containerId ?? '').split('@')[1]?.slice(0, 12) ?? '?';
      perNode[node] = (perNode[node] ?? 0) + 1;
    }
    const failed = recs.filter((r) => r.phase !== 'Succeeded').length;
    if (recs.length !== n || failed)
      throw new Error(`swarm-scale (${nodes} node${nodes > 1 ? 's' : ''}): ${recs.length} records of ${n}, ${failed} not Succeeded`);
    const p: SwarmPhase = {
      nodes,
      attempts: n,
      maxRunning,
      wallMs,
      steadyMs: Math.max(...ends) - Math.min(...starts),
      perNode,
      failed,
      berthCpuMs,
      nodeCpuMs,
      machineBusy,
    };
    log(
      `  swarm-scale, ${nodes} node${nodes > 1 ? 's' : ''}, --max-running ${maxRunning}: ${n} attempts in ${(wallMs / 1000).toFixed(1)} s (${rate(p).toFixed(2)}/s; steady ${rate(p, p.steadyMs).toFixed(2)}/s), runs per node ${JSON.stringify(perNode)}; CPU an attempt: berth ${(berthCpuMs / n).toFixed(0)} ms, dockerd+containerd ${nodeCpuMs.map((c) => (c / n).toFixed(0)).join(' + ')} ms; the machine ${(machineBusy * 100).toFixed(0)}% busy`,
    );
    return p;
  } finally {
    await berth(['clean', '--backend', 'swarm', ...sb.globalArgs('warn')], { env, allowFail: true, timeoutMs: 600_000 }).catch(() => undefined);
    await s.availability(worker, 'active');
    await fs.rm(path.join(sb.dir, 'results'), { recursive: true, force: true }).catch(() => undefined);
  }
}

export async function swarmScaleWorkload(run: BenchRun, attempts: number, slots: number, rounds: number, log: (m: string) => void): Promise<SwarmScaleSamples> {
  const s = new TestSwarm(`bench-scale-${run.id}`, { nodes: [{}, {}], images: [IMAGE, 'berth/egress-proxy:local'] });
  await s.up();
  log(`swarm of ${s.nodes.length} dockerds up in ${s.startMs} ms`);
  const out: SwarmScaleSamples = { attempts, slots, swarmUpMs: s.startMs, rounds: [] };
  try {
    for (let i = 0; i < rounds; i++) {
      // the order alternates by round (the machine warms, other work comes and goes)
      const order: (1 | 2)[] = i % 2 === 0 ? [1, 2] : [2, 1];
      const got: Partial<Record<1 | 2, SwarmPhase>> = {};
      for (const nodes of order) got[nodes] = await phase(s, run, `sc${i}n${nodes}`, nodes, attempts, slots, log);
      out.rounds.push({ one: got[1] as SwarmPhase, two: got[2] as SwarmPhase });
    }
    return out;
  } finally {
    await s.down();
    const left = await s.traces();
    if (left.length) log(`warning: the bench swarm left ${left.join(', ')}`);
  }
}

function hours(ratePerS: number): string {
  const h = SWARM_FLEET / ratePerS / 3600;
  return h >= 1 ? `${h.toFixed(1)} h` : `${(h * 60).toFixed(0)} min`;
}

export function swarmScaleRows(w: SwarmScaleSamples, rows: Row[]): void {
  const two = w.rounds.map((r) => rate(r.two));
  const one = w.rounds.map((r) => rate(r.one));
  const twoSteady = w.rounds.map((r) => rate(r.two, r.two.steadyMs));
  const oneSteady = w.rounds.map((r) => rate(r.one, r.one.steadyMs));
  const s2 = summarize(two);
  const s1 = summarize(one);
  const cell = (xs: number[]) => {
    const s = summarize(xs);
    return xs.length > 1 ? `${s.median.toFixed(2)}/s (${s.min.toFixed(2)}–${s.max.toFixed(2)})` : `${s.median.toFixed(2)}/s`;
  };
  const nodesUsed = w.rounds.map((r) => Object.keys(r.two.perNode).length);
  // where the CPU went, an attempt (medians over rounds): berth's command, the nodes' engines; and how busy the machine was
  const med = (xs: number[]) => summarize(xs).median;
  const cpu = (ps: SwarmPhase[]) =>
    `CPU an attempt: berth ${med(ps.map((p) => p.berthCpuMs / p.attempts)).toFixed(0)} ms, the nodes' dockerd+containerd ${med(
      ps.map((p) => p.nodeCpuMs.reduce((a, b) => a + b, 0) / p.attempts),
    ).toFixed(0)} ms; the machine ${(med(ps.map((p) => p.machineBusy)) * 100).toFixed(0)}% busy`;
  // scaling: the two-node rate over the one-node rate, paired by round
  const scaling = pairedRatio(two, one);
  rows.push({
    id: 'swarm-100k',
    workload: `--backend swarm: ${SWARM_FLEET.toLocaleString('en')} short attempts (\`true\`, network none) extrapolated from ${w.attempts} a round (${w.rounds.length} round${w.rounds.length > 1 ? 's' : ''}), \`reconcile --once --wait\`, ${w.slots} slots a node; rate of the whole command (steady part apart)`,
    berth: `2 nodes: ${cell(two)} → ${SWARM_FLEET.toLocaleString('en')} in ${hours(s2.median)} (steady ${cell(twoSteady)}; runs on ${nodesUsed.join('/')} nodes; ${cpu(w.rounds.map((r) => r.two))})`,
    reference: '1 node (the worker drained), same sample; the ratio is the per-node scaling, 2 nodes over 1 (both on this machine)',
    refValue: `${cell(one)} → ${hours(s1.median)} (steady ${cell(oneSteady)}; ${cpu(w.rounds.map((r) => r.one))})`,
    ratio: scaling,
    target: `100,000 ≤ ${SWARM_FLEET_HOURS} h on 2 nodes; 2 nodes > 1`,
    verdict: verdictOf(SWARM_FLEET / s2.median / 3600 <= SWARM_FLEET_HOURS && scaling.median > 1 && nodesUsed.every((n) => n === 2)),
  });
}

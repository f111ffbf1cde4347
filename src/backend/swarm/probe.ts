/**
 * What a swarm node enforces, seen from inside a task on it: a replicated job pinned to the
 * node that reports `NoNewPrivs` and its cgroup paths (all `/` in a private cgroup namespace),
 * read back through the manager's service logs. A node that enforces both through its daemon
 * (`dockerd --no-new-privileges --default-cgroupns-mode private`) gives every task they are
 * not asked for per service (the engine's API 1.41 cannot ask for them per service).
 */
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { LABELS, SWARM } from '../../constants';
import type { ServiceSummary, SwarmEngine, TaskSummary } from '../../engine/swarm/types';
import { pidAlive } from '../../util/pid';

export interface NodeHardening {
  noNewPrivileges: boolean;
  privateCgroupns: boolean;
  /** Why the probe could not tell (it did not run, or said nothing readable). */
  error?: string;
}

const SCRIPT =
  'const fs=require("fs");const s=fs.readFileSync("/proc/self/status","utf8");' +
  'console.log("BERTH-PROBE "+JSON.stringify({nnp:(/NoNewPrivs:\\s*(\\d)/.exec(s)||[])[1],cgroup:fs.readFileSync("/proc/self/cgroup","utf8")}))';

const FINAL = new Set(['complete', 'failed', 'rejected', 'shutdown', 'orphaned', 'remove']);

/** Reads the probe's line: NoNewPrivs 1, and every cgroup path `/`. */
export function parseProbe(output: string): NodeHardening {
  const line = output.split('\n').find((l) => l.startsWith('BERTH-PROBE '));
  if (!line) return { noNewPrivileges: false, privateCgroupns: false, error: 'the probe printed no report' };
  const v = JSON.parse(line.slice('BERTH-PROBE '.length)) as { nnp?: string; cgroup?: string };
  const paths = (v.cgroup ?? '')
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(':').slice(2).join(':'));
  return { noNewPrivileges: v.nnp === '1', privateCgroupns: paths.length > 0 && paths.every((p) => p === '/') };
}

export async function probeNode(swarm: SwarmEngine, nodeId: string, image: string, signal?: AbortSignal, now: () => number = Date.now): Promise<NodeHardening> {
  const name = `berth-probe-${nodeId.slice(0, 12)}-${randomBytes(3).toString('hex')}`;
  const labels = { [LABELS.managed]: 'true', [SWARM.probeLabel]: nodeId, [SWARM.probeOwnerLabel]: `${hostname()}/${process.pid}` };
  const id = await swarm.services.create({
    name,
    labels,
    containerLabels: labels,
    image,
    cmd: ['/usr/bin/node', '-e', SCRIPT],
    env: [],
    workingDir: '/',
    nodeId,
    networks: [],
    mounts: [],
    secrets: [],
    capDrop: ['ALL'],
    capAdd: [],
    init: false,
    readonlyRootfs: true,
    pidsLimit: 64,
  });
  try {
    const deadline = now() + SWARM.probeTimeoutMs;
    let task: TaskSummary | undefined;
    while (!task) {
      if (signal?.aborted) throw new Error('probe aborted');
      task = (await swarm.tasks.list({ services: [id] })).find((t) => FINAL.has(t.state));
      if (task) break;
      if (now() > deadline)
        return { noNewPrivileges: false, privateCgroupns: false, error: `its probe task did not end within ${SWARM.probeTimeoutMs / 1000} s` };
      await new Promise((r) => setTimeout(r, 200));
    }
    if (task.state !== 'complete') {
      return {
        noNewPrivileges: false,
        privateCgroupns: false,
        error: `its probe task ended ${task.state}${task.error ? `: ${task.error}` : ''} (image ${image})`,
      };
    }
    const chunks: Buffer[] = [];
    for await (const c of await swarm.services.logs(id, { follow: false })) chunks.push(Buffer.from(c as Buffer));
    return parseProbe(Buffer.concat(chunks).toString('utf8'));
  } finally {
    await swarm.services.remove(id).catch(() => undefined);
  }
}

/**
 * Was this probe's service left behind by a berth that is gone? Its owner is a process of this
 * host that no longer runs, or it is older than twice the time a probe may take (a probe under
 * way removes its own service within SWARM.probeTimeoutMs, on whatever host its berth runs).
 */
export function abandonedProbe(s: ServiceSummary, now = Date.now()): boolean {
  const owner = s.labels[SWARM.probeOwnerLabel] ?? '';
  const cut = owner.lastIndexOf('/');
  const pid = Number(owner.slice(cut + 1));
  if (cut > 0 && owner.slice(0, cut) === hostname() && Number.isInteger(pid) && pid > 0 && !pidAlive(pid)) return true;
  const born = Date.parse(s.createdAt);
  return !Number.isNaN(born) && now - born > 2 * SWARM.probeTimeoutMs;
}

/** Removes the probe services killed berths left (found by their labels); how many went. */
export async function sweepProbes(swarm: SwarmEngine, now = Date.now()): Promise<number> {
  const left = (await swarm.services.list([`${LABELS.managed}=true`, SWARM.probeLabel])).filter((s) => abandonedProbe(s, now));
  let n = 0;
  for (const s of left) if (await swarm.services.remove(s.id)) n++;
  return n;
}

/**
 * Which swarm nodes may run berth's attempts, and which one a new run goes to. A node qualifies
 * when it is ready and active, names the engine berth reaches it through (SWARM.engineLabel), and
 * enforces the daemon hardening (probe.ts, once per node per berth process). berth places runs
 * itself, on the qualifying node with the fewest of this instance's runs (then by id): swarm is
 * never used as a queue. When none qualifies, the attempt is refused with every node's reason.
 */
import Dockerode from 'dockerode';
import { REASONS, SWARM } from '../../constants';
import { createDockerEngine } from '../../engine/docker';
import { BackendRefusedError } from '../../engine/errors';
import type { NodeSummary, SwarmEngine } from '../../engine/swarm/types';
import type { Engine } from '../../engine/types';
import { probeNode, sweepProbes, type NodeHardening } from './probe';

export interface NodeHandle {
  node: NodeSummary;
  /** The node's own engine (berth's calls, under the same deadlines). */
  engine: Engine;
  /** The same engine's raw client, for the archive read of results. */
  docker: Dockerode;
}

/** A dockerode client for an engine address (`unix:///path`, `tcp://host:port`). */
export function dockerAt(address: string): Dockerode {
  if (address.startsWith('unix://')) return new Dockerode({ socketPath: address.slice('unix://'.length) });
  const u = new URL(address);
  return new Dockerode({ host: u.hostname, port: Number(u.port || 2375), protocol: u.protocol === 'https:' ? 'https' : 'http' });
}

export function nodeName(n: NodeSummary): string {
  return `${n.hostname || 'node'} (${n.id.slice(0, 12)})`;
}

/**
 * A run's id: its container name and its node (`<name>@<node id>`). Every run of an attempt has
 * the same container name; a run left on a node that was lost is told from the next one by it.
 */
export function runId(name: string, nodeId: string): string {
  return `${name}@${nodeId}`;
}

export function parseRunId(id: string): { name: string; node?: string } {
  const i = id.lastIndexOf('@');
  return i < 0 ? { name: id } : { name: id.slice(0, i), node: id.slice(i + 1) };
}

export class NodePool {
  private readonly probes = new Map<string, Promise<NodeHardening>>();
  private readonly handles = new Map<string, NodeHandle>();
  /** Node id → when this berth first saw it not ready (ms). */
  private readonly downSince = new Map<string, number>();
  /** The last list of nodes and when it was asked for. */
  private recent: { at: number; list: Promise<NodeSummary[]> } | undefined;
  /** When probe services left by killed berths were last looked for (ms; 0: not yet). */
  private swept = 0;

  constructor(
    private readonly swarm: SwarmEngine,
    /** berth's egress proxy image (it has node): the hardening probe runs it, and a sidecar's tcp probe (reach.ts). */
    readonly probeImage: string,
    private readonly timeoutMs?: number,
    /** The clock a node's time down (Failed/Lost after the grace) and the caches' ages are read from. */
    private readonly now: () => number = Date.now,
  ) {}

  /** The node's engine, by the address its label names. */
  handle(node: NodeSummary): NodeHandle | undefined {
    const address = node.labels[SWARM.engineLabel];
    if (!address) return undefined;
    const known = this.handles.get(node.id);
    if (known && known.node.labels[SWARM.engineLabel] === address) return { ...known, node };
    const docker = dockerAt(address);
    const h = { node, docker, engine: createDockerEngine(docker, this.timeoutMs !== undefined ? { timeoutMs: this.timeoutMs } : {}) };
    this.handles.set(node.id, h);
    return h;
  }

  /** Every node whose engine berth knows, ready or not (for lists and clean-up). */
  async reachable(): Promise<NodeHandle[]> {
    return (await this.all()).flatMap((n) => this.handle(n) ?? []);
  }

  /** The swarm's nodes, noting since when each one is not ready (one list serves the calls of SWARM.nodesFreshMs). */
  async all(): Promise<NodeSummary[]> {
    const now = this.now();
    if (!this.recent || now - this.recent.at > SWARM.nodesFreshMs) {
      const list = this.swarm.nodes.list();
      this.recent = { at: now, list };
      list.catch(() => {
        if (this.recent?.list === list) this.recent = undefined;
      });
    }
    const nodes = await this.recent.list;
    this.note(nodes);
    return nodes;
  }

  /**
   * Notes since when each node listed is not ready (a list of the pool's own, or the event
   * stream's: the stream looks when the manager says a node changed, and its relist once the grace
   * has passed must find the node lost, with no list of the pool's in between).
   */
  note(nodes: readonly NodeSummary[]): void {
    for (const n of nodes) {
      if (n.state === 'ready') this.downSince.delete(n.id);
      else if (!this.downSince.has(n.id)) this.downSince.set(n.id, this.now());
    }
  }

  /** Whether a node has been down (as this berth saw it) for longer than `graceMs`. */
  lost(nodeId: string, graceMs: number): boolean {
    const since = this.downSince.get(nodeId);
    return since !== undefined && this.now() - since > graceMs;
  }

  private hardening(nodeId: string): Promise<NodeHardening> {
    let p = this.probes.get(nodeId);
    if (!p) {
      p = probeNode(this.swarm, nodeId, this.probeImage, undefined, this.now).catch((err: Error) => ({
        noNewPrivileges: false,
        privateCgroupns: false,
        error: `its probe failed: ${err.message}`,
      }));
      // a probe that could not run is asked again next time; a node's answer is kept
      void p.then((h) => h.error && this.probes.delete(nodeId));
      this.probes.set(nodeId, p);
    }
    return p;
  }

  /**
   * Removes the probe services killed berths left behind (probe.ts: sweepProbes): at the first
   * call, then at most once per SWARM.probeTimeoutMs, so a pass that changes nothing stays at a
   * constant number of calls. A sweep that fails is tried again at the next call.
   */
  async sweep(): Promise<void> {
    if (this.swept && this.now() - this.swept < SWARM.probeTimeoutMs) return;
    this.swept = this.now();
    await sweepProbes(this.swarm, this.now()).catch(() => {
      this.swept = 0;
    });
  }

  /** Why a node may not run attempts, or undefined when it may. */
  async refusal(n: NodeSummary): Promise<string | undefined> {
    if (n.state !== 'ready') return `${nodeName(n)} is ${n.state}`;
    if (n.availability !== 'active') return `${nodeName(n)} is ${n.availability}`;
    if (!n.labels[SWARM.engineLabel]) return `${nodeName(n)} has no ${SWARM.engineLabel} label naming its engine (fixtures and results go through it)`;
    const h = await this.hardening(n.id);
    if (h.error) return `${nodeName(n)} could not be checked: ${h.error}`;
    const lacks = [
      ...(h.noNewPrivileges ? [] : ['no-new-privileges (dockerd --no-new-privileges)']),
      ...(h.privateCgroupns ? [] : ['a private cgroup namespace (dockerd --default-cgroupns-mode private)']),
    ];
    return lacks.length ? `${nodeName(n)} does not enforce ${lacks.join(' nor ')}` : undefined;
  }

  /**
   * The node for a new run: the qualifying one with the fewest runs now (`load`: node id → runs),
   * then by id. Refuses (BackendRefusedError, NodeRefused) with every node's reason when none qualifies.
   */
  /**
   * `load` is read once the nodes are known, and `claim` told of the pick at once (no await
   * between them): choices made at the same time see each other's claims.
   */
  async choose(attempt: string, load: ReadonlyMap<string, number> | (() => ReadonlyMap<string, number>), claim?: (h: NodeHandle) => void): Promise<NodeHandle> {
    const nodes = await this.all();
    const verdicts = await Promise.all(nodes.map(async (n) => ({ n, why: await this.refusal(n) })));
    const ok = verdicts.filter((v) => v.why === undefined).map((v) => v.n);
    const now = typeof load === 'function' ? load() : load;
    ok.sort((a, b) => (now.get(a.id) ?? 0) - (now.get(b.id) ?? 0) || a.id.localeCompare(b.id));
    const pick = ok[0];
    const h = pick && this.handle(pick);
    if (!h) {
      const why = verdicts.map((v) => v.why).filter((w): w is string => w !== undefined);
      throw new BackendRefusedError(REASONS.nodeRefused, `no swarm node may run attempt ${attempt}: ${why.join('; ') || 'the swarm has no nodes'}`);
    }
    claim?.(h);
    return h;
  }
}

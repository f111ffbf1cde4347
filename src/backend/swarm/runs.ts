/**
 * The runs of attempts on a swarm, behind the executor's ContainerClient: what the executor does
 * to a container is done to a run, so the executor, the planner and everything after them do not
 * know which backend runs.
 *
 * A run, by the container name the desired state gives it:
 *  - create: the node is the one holding the attempt's volumes (required: volumeNode), else the
 *    one its egress proxy or a sidecar of the same run is on, else berth chooses (nodes.ts);
 *    through that node's own engine berth makes the run's two node-local volumes (the
 *    workspace, mounted at the working folder, and the results, at /results; none for the egress
 *    proxy and sidecars) and a prepared container holding them and the attempt's volumes and
 *    naming its network (SWARM.netLabel), never started (with spec.user, the results volume's
 *    root made that user's, as the results folder is on one engine): the run is `created`. For `none`, the
 *    run's own internal overlay is made through the manager at the same time as its volumes.
 *    No host folder is ever bound on a node. A sandbox (spec.sandbox: its entrypoint is berth's
 *    helper) has a third volume of its own at EXEC.helperDir, into which the helper is copied
 *    before the start (the task's container is made by its node only then), mounted read-only
 *    in the task.
 *  - putArchive: the fixture streams into the prepared container (so into the workspace volume),
 *    in bounded memory (archive.ts);
 *    files for /run/secrets become swarm secrets instead (content-hashed names, the run's labels),
 *    never written on the node's disk.
 *  - start: the run's service: a replicated job (one completion, restart never) pinned to that
 *    node, endpoint mode dnsrr, no published port, the two volumes and the attempt's mounted,
 *    the secrets attached, the prepared container's settings (entrypoint, command, environment, user,
 *    limits, capabilities), its networks (networks.ts: the attempt's overlays, or for `none` the
 *    internal overlay of the run's own) and upstream DNS; it returns once the task has its
 *    container on the node (the node's `create` event says so, before the node starts it).
 *  - list/inspect: the service and its task (polled: tasks emit no events) as a container:
 *    running until the task ends, then exited with the task's exit code. The results folder is
 *    shown bound at /results, as it is where berth runs once collect() brought it home. A
 *    running task's networks are where its node's engine says its container sits.
 *  - collect: the results volume's files into the results folder (the node engine's archive API).
 *  - getArchive: a path read out of the prepared container (the workspace for the export),
 *    through the node's engine: the same volumes the task wrote, there until the run is removed.
 *  - stop: the task's container, through the node's engine (TERM, grace, KILL).
 *  - exec: a command in the task's container, through the node's engine (a sidecar's `ready:
 *    {command}`); probeTcp: a port tried from the task's container's network namespace by a
 *    short-lived container on its node (a sidecar's `ready: {tcp}`: reach.ts).
 *  - remove: the service (its task's container goes with it), the secrets, the prepared container
 *    and the volumes.
 * Why through each node's engine and not the manager alone: the archive API moves fixtures and
 * results byte for byte, of any size, before the task starts and after it ends; through the
 * manager alone, fixtures would be 500 KB configs and results a tar stream read back through
 * service logs, which are line-oriented and gone with the service (docs/SWARM.md).
 */
import type { NodeImages } from './images';
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { pack } from 'tar-stream';
import { COMPONENTS, DEFAULTS, EXEC, LABELS, REASONS, SWARM } from '../../constants';
import { BackendRefusedError, isConflict, isNotFound } from '../../engine/errors';
import { matchesLabels } from '../../engine/label-filter';
import type { ServiceSummary, SwarmEngine, TaskSummary } from '../../engine/swarm/types';
import type {
  CollectLeftOut,
  ContainerClient,
  ContainerCreateSpec,
  ContainerDetails,
  ContainerSummary,
  EngineEvent,
  ExecOptions,
  ExecSession,
  Labels,
  LocalStorage,
  MountSummary,
  NetworkSummary,
  Reached,
  RemoteRuns,
  RunDiskUse,
  VolumeClient,
  VolumeSummary,
} from '../../engine/types';
import { parseRunNet, privateNetwork, taskNetworks, type RunNet } from './networks';
import { nodeName, parseRunId, runId, type NodeHandle, type NodePool } from './nodes';
import { splitSecrets } from './archive';
import { probeTcpFrom } from './reach';
import { extractResults } from './results';

const FINAL = new Set(['complete', 'failed', 'rejected', 'shutdown', 'orphaned', 'remove']);
const notFound = (what: string) => Object.assign(new Error(`no such run: ${what}`), { statusCode: 404 });

const wsVolume = (run: string) => `${run}-ws`;
const resultsVolume = (run: string) => `${run}-results`;
/** A sandbox's third volume: berth's helper, its main process (EXEC.helperPath), mounted at EXEC.helperDir. */
const helperVolume = (run: string) => `${run}-berth`;
/** Whether a create's entrypoint is berth's helper (a sandbox's: spec.sandbox), which its run's helper volume holds. */
const runsHelper = (entrypoint: readonly string[] | null | undefined) => entrypoint?.[0] === EXEC.helperPath;

/** The labels of a run's own helpers (volumes, secrets): the run's owner labels and which run. */
function helperLabels(labels: Labels, run: string): Labels {
  // the component and a grader's grade too: a half-made grader lists as the grader it was to be
  const keep = [LABELS.managed, LABELS.instance, LABELS.attempt, LABELS.run, LABELS.specHash, LABELS.component, LABELS.grade];
  return { ...Object.fromEntries(keep.filter((k) => labels[k] !== undefined).map((k) => [k, labels[k] as string])), [SWARM.runLabel]: run };
}

/** The task that tells the run's state: the newest one. */
function latest(tasks: TaskSummary[]): TaskSummary | undefined {
  return [...tasks].sort((a, b) => a.createdAt.localeCompare(b.createdAt)).at(-1);
}

/** A run of which only helpers exist (volumes made, the prepared container not yet): a created run to remove. */
function halfMade(id: string, run: string, labels: Labels): ContainerSummary {
  const { [SWARM.runLabel]: _r, ...own } = labels;
  return {
    id,
    name: run,
    labels: { ...own, [LABELS.component]: own[LABELS.component] ?? COMPONENTS.main },
    image: '',
    imageId: '',
    state: 'created',
    status: 'half-made (provisioning was interrupted before its container was made)',
    networkMode: 'none',
    networks: ['none'],
    mounts: [],
    created: 0,
  };
}

/** The attempt's volumes a container holds (spec.volumes), without the run's own (two, or a sandbox's three). */
function attemptVolumes(mounts: readonly MountSummary[], run: string): MountSummary[] {
  const own = new Set([wsVolume(run), resultsVolume(run), helperVolume(run)]);
  return mounts.filter((m) => m.type === 'volume' && m.name !== undefined && !own.has(m.name));
}

/** A tar of one folder entry, `folder` (absolute) owned by uid:gid, mode 0755. */
async function ownedFolder(folder: string, uid: number, gid: number): Promise<Buffer> {
  const p = pack();
  p.entry({ name: `${folder.replace(/^\/+/, '')}/`, type: 'directory', mode: 0o755, uid, gid });
  p.finalize();
  const chunks: Buffer[] = [];
  for await (const c of p) chunks.push(c as Buffer);
  return Buffer.concat(chunks);
}

/** The network mode a run's task has, as the single engine names it. */
function networkModeOf(net: RunNet | undefined): string {
  return !net || net.private ? 'none' : net.network;
}

export class SwarmRuns implements ContainerClient, RemoteRuns {
  /** Puts a run's image on its node before the run is prepared there (images.ts); none: the node must hold it. */
  images: NodeImages | undefined;
  /**
   * Runs this berth placed whose service is not made yet (run name -> node id): a run counts
   * toward its node's load from its create, not from its start, so runs created at once spread
   * over the nodes instead of all going to the one that had the fewest before any of them.
   */
  private readonly placing = new Map<string, string>();

  constructor(
    private readonly swarm: SwarmEngine,
    private readonly pool: NodePool,
    /** The records of attempts' volumes, on the manager's engine (volumes.ts). */
    private readonly records?: VolumeClient,
    /** The clock a start's deadline is read from. */
    private readonly now: () => number = Date.now,
  ) {}

  /**
   * A network a run's task is to be on as well (networks.connect before its start; a service's
   * networks are fixed when it is made). Recorded durably, with the run's labels, as a swarm
   * object the run's start reads and its removal removes (a secret: the same list the start
   * makes for the run's secrets, and removed with them; it holds only the network's name, which
   * is no secret, and is never attached to the service): a berth killed between the connect and
   * the start leaves the next one a run it starts on all its networks.
   */
  async attach(network: string, id: string): Promise<void> {
    const h = await this.locate(id);
    if (!h) throw notFound(id);
    const { name } = parseRunId(id);
    const own = runId(name, h.node.id);
    const labels = (await h.engine.containers.inspect(name)).labels;
    const marker = `b-${createHash('sha256').update(own).digest('hex').slice(0, 16)}-n-${createHash('sha256').update(network).digest('hex').slice(0, 16)}`;
    await this.swarm.secrets.create(marker, Buffer.from(network), { ...helperLabels(labels, own), [SWARM.attachLabel]: network }).catch((err: unknown) => {
      if (!isConflict(err)) throw err;
    });
  }

  /** A service's networks by name (a run's own `none` network as `none`), from the manager's networks. */
  private namedNetworks(s: ServiceSummary, nets: ReadonlyMap<string, NetworkSummary>): string[] {
    if (!s.networks.length) return ['bridge']; // a service with no network: the node's default bridge
    return s.networks
      .map((id) => {
        const n = nets.get(id);
        if (!n) return id;
        return n.name === privateNetwork(s.name) && n.internal && n.labels[SWARM.runLabel] === s.name ? 'none' : n.name;
      })
      .sort();
  }

  private async networksById(): Promise<Map<string, NetworkSummary>> {
    const all = await this.swarm.networks.list([]);
    return new Map(all.flatMap((n) => [[n.id, n] as const, [n.name, n] as const]));
  }

  /** The node holding a run's prepared container (by its id's node, or found by name), or undefined. */
  private async locate(id: string): Promise<NodeHandle | undefined> {
    const { name, node } = parseRunId(id);
    const nodes = await this.pool.reachable();
    if (node) return nodes.find((h) => h.node.id === node);
    const found = await Promise.all(
      nodes.map((h) =>
        h.engine.containers.inspect(name).then(
          (c) => c.labels[SWARM.runLabel] === name,
          () => false,
        ),
      ),
    );
    return nodes[found.indexOf(true)];
  }

  /** The run's service: by name, and on the id's node when the id names one. */
  private async service(id: string): Promise<ServiceSummary | undefined> {
    const { name, node } = parseRunId(id);
    const s = await this.swarm.services.inspect(name).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    return s && (!node || s.nodeId === node) ? s : undefined;
  }

  /** The run's node has been down past the grace (SWARM.lostGraceMs): its task is lost with it. */
  private isLost(s: ServiceSummary): boolean {
    return s.nodeId !== undefined && this.pool.lost(s.nodeId, SWARM.lostGraceMs);
  }

  private summary(
    s: ServiceSummary,
    t: TaskSummary | undefined,
    nets: ReadonlyMap<string, NetworkSummary>,
    nodes: readonly NodeHandle[] = [],
  ): ContainerSummary {
    const ended = t !== undefined && FINAL.has(t.state);
    const node = t?.nodeId || s.nodeId || '';
    const resultsDir = s.labels[SWARM.resultsLabel];
    return {
      id: s.nodeId ? runId(s.name, s.nodeId) : s.name,
      name: s.name,
      labels: s.labels,
      image: s.image,
      imageId: s.image,
      state: ended ? 'exited' : 'running',
      status: t ? `task ${t.state}${t.nodeId ? ` on ${t.nodeId.slice(0, 12)}` : ''}` : 'no task yet',
      networkMode: networkModeOf(parseRunNet(s.labels[SWARM.netLabel])),
      networks: this.namedNetworks(s, nets),
      mounts: [
        ...(resultsDir ? [{ type: 'bind', source: resultsDir, destination: DEFAULTS.resultsMount, rw: true }] : []),
        // the attempt's volumes, as the service mounts them (inspect reads the task's container)
        ...attemptVolumes(
          (s.mounts ?? []).map((m) => ({ type: 'volume', source: m.source, name: m.source, destination: m.target, rw: !m.readOnly })),
          s.name,
        ),
      ],
      created: Math.floor(Date.parse(s.createdAt) / 1000),
      placement: {
        service: s.id,
        ...(t ? { task: t.id, taskState: t.state } : {}),
        node,
        nodeName: nodes.find((h) => h.node.id === node)?.node.hostname ?? '',
      },
    };
  }

  async list(labelFilters: string[]): Promise<ContainerSummary[]> {
    const [services, nodes] = await Promise.all([this.swarm.services.list(labelFilters), this.pool.reachable(), this.pool.sweep()]);
    const runs = services.filter((s) => s.labels[SWARM.resultsLabel] !== undefined);
    const [tasks, nets] = await Promise.all([runs.length ? this.swarm.tasks.list({ services: runs.map((s) => s.id) }) : [], this.networksById()]);
    const out = runs.map((s) => {
      const c = this.summary(s, latest(tasks.filter((t) => t.serviceId === s.id)), nets, nodes);
      // a run whose node is lost has ended, for berth: its finish finds it gone (Lost)
      return this.isLost(s) ? { ...c, state: 'exited', status: `node ${s.nodeId?.slice(0, 12)} lost` } : c;
    });
    const started = new Set(out.map((c) => c.id));
    const [prepared, helpers] = await Promise.all([
      Promise.all(nodes.map((h) => h.engine.containers.list([...labelFilters, SWARM.runLabel]).catch(() => []))),
      Promise.all(nodes.map((h) => h.engine.volumes.list([...labelFilters, SWARM.runLabel]).catch(() => []))),
    ]);
    for (const [i, list] of prepared.entries()) {
      for (const c of list) {
        const h = nodes[i];
        const id = h ? runId(c.name, h.node.id) : c.name;
        if (started.has(id)) continue;
        started.add(id);
        const results = c.labels[SWARM.resultsLabel]
          ? [{ type: 'bind', source: c.labels[SWARM.resultsLabel] as string, destination: DEFAULTS.resultsMount, rw: true }]
          : [];
        out.push({ ...c, id, state: 'created', mounts: [...results, ...attemptVolumes(c.mounts, c.name)] });
      }
    }
    // A run a killed berth left half-made (its volumes, or secrets, but no prepared container, no
    // service): listed as a created run, so the planner removes it (and makes the run again, on
    // whichever node it then chooses), GC and clean find it; remove() takes what there is.
    for (const [i, list] of helpers.entries()) {
      const h = nodes[i];
      for (const v of list) {
        const run = v.labels[SWARM.runLabel];
        const id = h && run ? runId(run, h.node.id) : undefined;
        if (!id || !run || started.has(id)) continue;
        started.add(id);
        out.push(halfMade(id, run, v.labels));
      }
    }
    // A run's own `none` overlay whose removal failed after the rest of its run was gone (or
    // that a berth killed in the run's create left alone): it carries the run's labels, so it is listed as a created run of its own (no node) and goes
    // the same way, by the one ownership rule on those labels.
    const named = new Set(out.map((c) => c.name));
    for (const n of new Set(nets.values())) {
      const run = n.labels[SWARM.runLabel];
      if (!run || named.has(run) || n.name !== privateNetwork(run) || !matchesLabels(n.labels, labelFilters)) continue;
      named.add(run);
      out.push({ ...halfMade(run, run, n.labels), status: `its own none network ${n.name} is left (the rest of the run is gone)` });
    }
    return out;
  }

  async create(spec: ContainerCreateSpec): Promise<string> {
    try {
      return await this.prepare(spec);
    } catch (err) {
      // a conflict is another's run: what it placed stays counted
      if (!isConflict(err)) this.placing.delete(spec.name);
      throw err;
    }
  }

  private async prepare(spec: ContainerCreateSpec): Promise<string> {
    const run = spec.name;
    const component = spec.labels[LABELS.component];
    // the egress proxy and a user's sidecar: a run of its own with no workspace and no results
    const side = component === COMPONENTS.proxy || component === COMPONENTS.sidecar;
    // a sandbox's main process is berth's helper, copied in before the start (plan/ops.ts): a
    // task's container is made by its node at the start, so the helper goes into a volume of the
    // run's own, which the prepared container holds at EXEC.helperDir and the task mounts there
    const helper = !side && runsHelper(spec.entrypoint);
    if (spec.entrypoint && !helper) throw new Error(`run ${run}: the swarm backend runs no entrypoint but berth's helper (${spec.entrypoint.join(' ')})`);
    const resultsBind = spec.host.binds.find((b) => b.endsWith(`:${DEFAULTS.resultsMount}:rw`));
    const resultsDir = side ? '' : resultsBind?.slice(0, -`:${DEFAULTS.resultsMount}:rw`.length);
    if (resultsDir === undefined || (!side && !resultsDir) || spec.host.binds.length !== (side ? 0 : 1)) {
      throw new Error(`run ${run}: the swarm backend binds no host folder (binds ${spec.host.binds.join(', ')})`);
    }
    const net: RunNet =
      spec.host.networkMode === 'none'
        ? { network: privateNetwork(run), aliases: [], dns: [...DEFAULTS.internalDns], private: true }
        : { network: spec.host.networkMode, aliases: spec.aliases ?? [], dns: [...(spec.host.dns ?? [])], private: false };
    // whether the run exists and where it would go, at once (the choice makes nothing); a run
    // that exists is a conflict whatever the choice says
    const [existing, located, chosen] = await Promise.all([
      this.service(run),
      this.locate(run),
      this.node(spec, run, net).then(
        (h) => ({ h }),
        (err: unknown) => ({ err }),
      ),
    ]);
    if (existing || located) {
      // counted where it is, until its start (or not at all once started)
      if (located && !existing) this.placing.set(run, located.node.id);
      else this.placing.delete(run);
      throw Object.assign(new Error(`run ${run} exists`), { statusCode: 409 });
    }
    if ('err' in chosen) throw chosen.err;
    const h = chosen.h;
    // the attempt's volumes are on this node (node() went where they are); one whose record was
    // made by a berth killed before the volume is made here now, with the record's labels
    for (const m of spec.host.mounts) {
      const rec = await this.records?.inspect(m.source);
      if (!rec || rec.labels[SWARM.volumeNodeLabel] !== h.node.id)
        throw new Error(`run ${run}: its volume ${m.source} is not recorded on node ${nodeName(h.node)}`);
      await h.engine.volumes.create({ name: m.source, labels: rec.labels });
    }
    const own = helperLabels(spec.labels, run);
    await Promise.all([
      ...(side ? [] : [h.engine.volumes.create({ name: wsVolume(run), labels: own }), h.engine.volumes.create({ name: resultsVolume(run), labels: own })]),
      ...(helper ? [h.engine.volumes.create({ name: helperVolume(run), labels: own })] : []),
      // the run's own `none`: an internal overlay nobody else is on, made with the run's other
      // helpers (a berth killed from here on leaves a run that lists as created, overlay and
      // all, and is removed whole: list, remove)
      ...(net.private ? [this.privateNet(net.network, own)] : []),
    ]);
    // the node holds the run's image before anything is made of it there (a node never fails a task for a missing image)
    await this.images?.ensure(h, spec.image);
    const { aliases: _aliases, ...rest } = spec;
    const { dns: _dns, ...host } = spec.host;
    await h.engine.containers.create({
      ...rest,
      labels: { ...spec.labels, [SWARM.runLabel]: run, [SWARM.resultsLabel]: resultsDir, [SWARM.netLabel]: JSON.stringify(net) },
      host: {
        ...host,
        // the prepared container never starts: its networks are the service's (SWARM.netLabel)
        networkMode: 'none',
        binds: [],
        mounts: side
          ? []
          : [
              { type: 'volume', source: wsVolume(run), target: spec.workingDir, readOnly: false },
              { type: 'volume', source: resultsVolume(run), target: DEFAULTS.resultsMount, readOnly: false },
              ...(helper ? [{ type: 'volume' as const, source: helperVolume(run), target: EXEC.helperDir, readOnly: false }] : []),
              ...spec.host.mounts,
            ],
      },
    });
    // the results volume's root is the run's user's, as its results folder is on one engine
    // (a fresh volume's root is root's: a run, or a grader, with spec.user could not write it).
    // Through the archive API at `/`, which an engine refuses for a read-only root filesystem:
    // such a run's results volume stays root's (docs/SWARM.md)
    const owner = side || spec.host.readonlyRootfs ? undefined : /^(\d+):(\d+)$/.exec(spec.user ?? '');
    if (owner && (owner[1] !== '0' || owner[2] !== '0'))
      await h.engine.containers.putArchive(run, '/', await ownedFolder(DEFAULTS.resultsMount, Number(owner[1]), Number(owner[2])));
    return runId(run, h.node.id);
  }

  /**
   * The node a new run goes to: where the attempt's volumes are (required: volumeNode); else,
   * for an attempt's run or sidecar on its network, where its egress proxy or a sidecar of the
   * same run already runs (one node for them all: overlay traffic between nodes is not
   * encrypted); otherwise berth chooses (nodes.ts).
   */
  private async node(spec: ContainerCreateSpec, run: string, net: RunNet): Promise<NodeHandle> {
    const l = spec.labels;
    const component = l[LABELS.component];
    // a run goes where the volumes it mounts are (a grader mounts none: it goes anywhere); its
    // egress proxy and sidecars where all the attempt's are (its run will be there)
    const own = component === COMPONENTS.main || component === COMPONENTS.grader;
    const held = await this.volumeNode(l, own ? spec.host.mounts.map((m) => m.source) : undefined);
    if (held) return held;
    if (!net.private && (component === COMPONENTS.main || component === COMPONENTS.sidecar) && l[LABELS.instance] && l[LABELS.attempt] && l[LABELS.run]) {
      const beside = (
        await this.swarm.services.list([`${LABELS.instance}=${l[LABELS.instance]}`, `${LABELS.attempt}=${l[LABELS.attempt]}`, `${LABELS.run}=${l[LABELS.run]}`])
      ).filter((s) => s.nodeId && s.name !== run && (s.labels[LABELS.component] === COMPONENTS.proxy || s.labels[LABELS.component] === COMPONENTS.sidecar));
      const p = beside.find((s) => s.labels[LABELS.component] === COMPONENTS.proxy) ?? beside[0];
      if (p?.nodeId) {
        const h = (await this.pool.reachable()).find((n) => n.node.id === p.nodeId);
        if (!h || h.node.state !== 'ready')
          throw new Error(`run ${run}: the node of its ${p.labels[LABELS.component]} ${p.name} (${p.nodeId.slice(0, 12)}) is not ready`);
        return h;
      }
    }
    // a run with results (a main run, a grader) counts toward its node's load from here on
    const counted = component === COMPONENTS.main || component === COMPONENTS.grader ? run : undefined;
    return this.choose(l[LABELS.attempt] ?? run, counted);
  }

  /**
   * The node berth chooses for something new of an attempt: the qualifying one with the fewest
   * runs (services with results, and the runs this berth placed whose service is not made yet).
   * `run`: recorded as placed there, until its start makes its service or it is removed.
   */
  private async choose(attempt: string, run?: string): Promise<NodeHandle> {
    const services = await this.swarm.services.list([`${LABELS.managed}=true`, SWARM.resultsLabel]);
    const made = new Set(services.map((s) => s.name));
    const load = () => {
      const m = new Map<string, number>();
      for (const s of services) if (s.nodeId) m.set(s.nodeId, (m.get(s.nodeId) ?? 0) + 1);
      for (const [name, node] of this.placing) if (!made.has(name) && name !== run) m.set(node, (m.get(node) ?? 0) + 1);
      return m;
    };
    return this.pool.choose(attempt, load, (h) => run && this.placing.set(run, h.node.id));
  }

  /** The node an attempt's new volume goes to: where its other volumes are, or the one berth chooses. */
  async placeVolume(labels: Labels): Promise<NodeHandle> {
    return (await this.volumeNode(labels)) ?? this.choose(labels[LABELS.attempt] ?? '?');
  }

  /**
   * The node that holds the attempt's volumes (those named, or all of its spec's), which its runs
   * must go to, or undefined when it has none. A run elsewhere would find them new and empty (a
   * silent change of the data the attempt reads), so when that node may not run it (down,
   * drained, refused) or has left the swarm, the run is refused (Blocked, NodeRefused) naming the
   * node, and waits for it; berth looks again later, as for any Blocked attempt.
   */
  private async volumeNode(l: Labels, names?: string[]): Promise<NodeHandle | undefined> {
    const instance = l[LABELS.instance];
    const attempt = l[LABELS.attempt];
    if (!this.records || !instance || !attempt || (names && names.length === 0)) return undefined;
    const filters = [`${LABELS.instance}=${instance}`, `${LABELS.attempt}=${attempt}`, `${LABELS.component}=${COMPONENTS.volume}`];
    if (l[LABELS.specHash]) filters.push(`${LABELS.specHash}=${l[LABELS.specHash]}`);
    const held = (await this.records.list(filters)).filter((v: VolumeSummary) => v.labels[SWARM.volumeNodeLabel] && (!names || names.includes(v.name)));
    const ids = [...new Set(held.map((v) => v.labels[SWARM.volumeNodeLabel] as string))].sort();
    if (!ids.length) return undefined;
    const vols = held
      .map((v) => v.labels[LABELS.volume] ?? v.name)
      .sort()
      .join(', ');
    const keeps = `attempt ${attempt} keeps its volumes (${vols})`;
    const only = 'its runs go only there (anywhere else its volumes would be new and empty), so it waits for that node';
    if (ids.length > 1)
      throw new BackendRefusedError(
        REASONS.nodeRefused,
        `${keeps} on more than one swarm node (${ids.map((i) => i.slice(0, 12)).join(', ')}); no run can see them all`,
      );
    const id = ids[0] as string;
    const n = (await this.pool.all()).find((x) => x.id === id);
    if (!n)
      throw new BackendRefusedError(
        REASONS.nodeRefused,
        `${keeps} on swarm node ${id.slice(0, 12)}, which has left the swarm (their data went with it); ${only}`,
      );
    const why = await this.pool.refusal(n);
    const h = why === undefined ? this.pool.handle(n) : undefined;
    if (!h) throw new BackendRefusedError(REASONS.nodeRefused, `${keeps} on swarm node ${why ?? nodeName(n)}; ${only}`);
    return h;
  }

  async putArchive(id: string, path: string, tar: Buffer | Readable): Promise<void> {
    const h = await this.locate(id);
    if (!h) throw notFound(id);
    const { name: run } = parseRunId(id);
    const secretDir = `${DEFAULTS.secretsDir.replace(/^\//, '')}/`;
    // the fixture streams on into the node's engine; the secrets' files are kept aside (archive.ts)
    const secrets = await splitSecrets(tar, path === '/' ? secretDir : undefined, (rest) => h.engine.containers.putArchive(run, path, rest));
    const labels = secrets.length ? (await h.engine.containers.inspect(run)).labels : {};
    for (const s of secrets) {
      const name = `b-${createHash('sha256').update(id).digest('hex').slice(0, 16)}-${createHash('sha256').update(s.file).update('\0').update(s.body).digest('hex').slice(0, 16)}`;
      const meta = `${s.file}:${Number(s.header.uid ?? 0)}:${Number(s.header.gid ?? 0)}:${Number(s.header.mode ?? 0o400)}`;
      await this.swarm.secrets.create(name, s.body, { ...helperLabels(labels, runId(run, h.node.id)), [SWARM.secretFileLabel]: meta }).catch((err: unknown) => {
        if (!isConflict(err)) throw err;
      });
    }
  }

  /** The run's own `none` overlay (internal, not attachable, the run's labels); one already made is kept. */
  private async privateNet(network: string, labels: Labels): Promise<void> {
    await this.swarm.networks.create({ name: network, labels, internal: true, driver: 'overlay', attachable: false }).catch((err: unknown) => {
      if (!isConflict(err)) throw err;
    });
  }

  async start(id: string): Promise<void> {
    const { name } = parseRunId(id);
    try {
      await this.launch(id, name);
    } finally {
      // its service counts it from here on (or it did not start: then it is not counted)
      this.placing.delete(name);
    }
  }

  private async launch(id: string, name: string): Promise<void> {
    const h = await this.locate(id);
    if (!h) {
      if (await this.service(id)) return; // started already: start is idempotent
      throw notFound(id);
    }
    const abort = new AbortController();
    try {
      // the node's `create` of the task's container, which started() waits for: the stream is
      // open before the service is made, so it is never missed
      const creates = h.engine.events.stream([`${SWARM.taskLabel}=${name}`], { signal: abort.signal }).catch(() => undefined);
      const settle = <T>(p: Promise<T>) =>
        p.then(
          (v) => ({ v }),
          (err: unknown) => ({ err }),
        );
      const [started, inspected, listed, events] = await Promise.all([
        this.service(id),
        settle(h.engine.containers.inspect(name)),
        settle(this.swarm.secrets.list([`${SWARM.runLabel}=${runId(name, h.node.id)}`])),
        creates,
      ]);
      if (started) return; // started already: start is idempotent
      if ('err' in inspected) throw inspected.err;
      if ('err' in listed) throw listed.err;
      const c = inspected.v;
      // the networks recorded by attach(), and the run's real secrets
      const attached = listed.v.flatMap((x) => x.labels[SWARM.attachLabel] ?? []);
      const secrets = listed.v.filter((x) => x.labels[SWARM.attachLabel] === undefined);
      const { [SWARM.runLabel]: _r, [SWARM.resultsLabel]: resultsDir = '', ...labels } = c.labels;
      // a prepared container of an older berth names no network: its task lands on the node's
      // bridge, which its attestation refuses (networks are exact)
      const net = parseRunNet(c.labels[SWARM.netLabel]);
      const extra = [...new Set(attached)].filter((n) => n !== net?.network).sort();
      const auth = await this.images?.credentialFor(c.config.image);
      const make = () =>
        this.swarm.services
          .create({
            ...(auth ? { auth } : {}),
            name,
            labels: { ...labels, [SWARM.resultsLabel]: resultsDir },
            containerLabels: { ...labels, [SWARM.taskLabel]: name },
            image: c.config.image,
            // what the prepared container would run: its entrypoint (the image's, or a sandbox's helper) with its command as the arguments
            ...(c.config.entrypoint?.length ? { entrypoint: c.config.entrypoint } : {}),
            cmd: c.config.cmd,
            env: c.config.env,
            workingDir: c.config.workingDir,
            ...(c.config.user ? { user: c.config.user } : {}),
            nodeId: h.node.id,
            networks: [
              ...(net ? [{ target: net.network, ...(net.aliases.length ? { aliases: net.aliases } : {}) }] : []),
              ...extra.map((target) => ({ target })),
            ],
            ...(net?.dns.length ? { dns: net.dns } : {}),
            mounts: [
              // the run's own two, filled (and owned) as the prepared container left them: its
              // create copied the image's content in already, and a second copy into a volume
              // still empty would hand its root back to the image's owner (create: spec.user)
              ...(resultsDir
                ? [
                    { source: wsVolume(name), target: c.config.workingDir, readOnly: false, noCopy: true },
                    { source: resultsVolume(name), target: DEFAULTS.resultsMount, readOnly: false, noCopy: true },
                  ]
                : []),
              // a sandbox's helper, put into its volume before the start (create): read-only to the task, so nothing in it replaces berth's process
              ...(c.mounts.some((m) => m.type === 'volume' && m.name === helperVolume(name))
                ? [{ source: helperVolume(name), target: EXEC.helperDir, readOnly: true, noCopy: true }]
                : []),
              // the attempt's volumes, on this node (create made sure)
              ...attemptVolumes(c.mounts, name).map((m) => ({ source: m.name as string, target: m.destination, readOnly: !m.rw })),
            ],
            secrets: secrets.map((s) => ({ id: s.id, name: s.name, file: (s.labels[SWARM.secretFileLabel] ?? '').split(':')[0] ?? '' })),
            capDrop: c.host.capDrop,
            capAdd: c.host.capAdd,
            init: c.host.init,
            readonlyRootfs: c.host.readonlyRootfs,
            ...(c.host.pidsLimit > 0 ? { pidsLimit: c.host.pidsLimit } : {}),
            ...(c.host.nanoCpus ? { nanoCpus: c.host.nanoCpus } : {}),
            ...(c.host.memory ? { memory: c.host.memory } : {}),
            stopGraceSeconds: DEFAULTS.stopGraceSeconds,
            ...(c.host.logConfig ? { logDriver: { name: c.host.logConfig.type, options: c.host.logConfig.config } } : {}),
          })
          .catch((err: unknown) => {
            if (!isConflict(err)) throw err;
            return name;
          });
      const service = await make().catch(async (err: unknown) => {
        // the run's own `none` is made with the run (create); a run an older berth prepared has
        // none yet (it made it at the start): judged by the manager's networks, not the error's text
        if (
          !net?.private ||
          (await this.swarm.networks.inspect(net.network).then(
            () => true,
            (e: unknown) => !isNotFound(e),
          ))
        )
          throw err;
        await this.privateNet(net.network, helperLabels(c.labels, name));
        return make();
      });
      await this.started(service, h, events, c.host.memory, c.host.memorySwap);
    } finally {
      abort.abort();
    }
  }

  /**
   * Waits (bounded) until the run's task's container has started on its node (or ended), so what
   * is attested right after the start is that container, running; sets its swap limit, which a
   * service cannot ask for (API 1.41 has no MemorySwap: the node's default is twice the memory),
   * to what the spec asks. Both are known from the node's events (`creates`, opened before the
   * service was made, so none is missed): its `create` (the swap limit is set then, before the
   * node starts it), then its `start` (or `die`). The task is looked at too, every
   * SWARM.taskPollMs while they have not come (tasks emit no events): a task that ends (refused,
   * no such image, its container failed to start) ends the wait, and so does one the manager
   * says is running (a node whose events did not come).
   */
  private async started(service: string, h: NodeHandle, creates: AsyncIterable<EngineEvent> | undefined, memory: number, memorySwap: number): Promise<void> {
    const until = this.now() + SWARM.taskStartMs;
    const limit = (id: string): Promise<void> =>
      memory > 0
        ? h.docker
            .getContainer(id)
            .update({ Memory: memory, MemorySwap: memorySwap > 0 ? memorySwap : memory })
            .then(
              () => undefined,
              () => undefined,
            )
        : Promise.resolve();
    const ours = (ev: EngineEvent) =>
      ev.type === 'container' && ev.id !== '' && (ev.attributes[SWARM.serviceIdLabel] === service || ev.attributes[SWARM.serviceNameLabel] === service);
    let made: { id: string; limited: Promise<void> } | undefined;
    let up = false;
    let wake: () => void = () => undefined;
    if (creates) {
      void (async () => {
        for await (const ev of creates) {
          if (!ours(ev)) continue;
          if (ev.action === 'create') made ??= { id: ev.id, limited: limit(ev.id) };
          else if (ev.id === made?.id && (ev.action === 'start' || ev.action === 'die')) {
            up = true;
            break;
          }
        }
      })()
        .catch(() => undefined)
        .finally(() => wake());
    }
    while (!up) {
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, SWARM.taskPollMs);
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
      if (up) break;
      const t = latest(await this.swarm.tasks.list({ services: [service] }));
      if (t?.containerId) made ??= { id: t.containerId, limited: limit(t.containerId) };
      if (t?.state === 'running') break;
      if ((t && FINAL.has(t.state)) || this.now() > until) break; // what it shows is attested, and refused
    }
    await made?.limited;
  }

  async inspect(idOrName: string): Promise<ContainerDetails> {
    const s = await this.service(idOrName);
    if (s && this.isLost(s)) throw notFound(`${idOrName} (its node ${s.nodeId?.slice(0, 12)} is lost)`);
    const h = await this.locate(idOrName);
    const { name } = parseRunId(idOrName);
    if (!s) {
      if (!h) throw notFound(idOrName);
      const c = await h.engine.containers.inspect(name);
      return { ...c, id: runId(name, h.node.id), state: 'created', runState: { ...c.runState, status: 'created', running: false } };
    }
    const t = latest(await this.swarm.tasks.list({ services: [s.id] }));
    const node = t?.nodeId ? (await this.pool.reachable()).find((n) => n.node.id === t.nodeId) : h;
    // the task's container, as the manager names it; or, in the moment before the manager hears
    // of it (a start that has just returned: its node's events said), as its node lists it
    const innerId =
      t?.containerId ||
      (node?.node.state === 'ready' && t && !FINAL.has(t.state)
        ? (await node.engine.containers.list([`${SWARM.serviceIdLabel}=${s.id}`, `${SWARM.taskLabel}=${s.name}`]).catch(() => []))[0]?.id
        : undefined);
    const inner = innerId && node ? await node.engine.containers.inspect(innerId).catch(() => undefined) : undefined;
    // the node's engine knows a container ended before the manager hears of it (a stop just done)
    const innerEnded = inner !== undefined && inner.runState.status === 'exited';
    const ended = (t !== undefined && FINAL.has(t.state)) || innerEnded;
    const base = inner ?? (h ? await h.engine.containers.inspect(name) : undefined);
    if (!base) throw notFound(idOrName);
    const nets = new Map<string, NetworkSummary>();
    for (const n of s.networks)
      await this.swarm.networks.inspect(n).then(
        (x) => nets.set(n, x),
        () => undefined,
      );
    const summary = this.summary(s, t, nets);
    // where the task's container really sits, as its node says (ingress and docker_gwbridge too)
    const networks = inner?.runState.running && node ? await taskNetworks(node, inner, s.name) : summary.networks;
    // the attempt's volumes where they really are mounted: in the task's container, as its node says
    const mounts = [...summary.mounts.filter((m) => m.type !== 'volume'), ...attemptVolumes((inner ?? base).mounts, name)];
    const listed = { ...summary, networks, mounts, ...(ended ? { state: 'exited' } : {}) };
    const hardened = inner ? (await this.pool.refusal(node!.node)) === undefined : false;
    return {
      ...base,
      ...listed,
      runState: {
        status: listed.state,
        running: !ended,
        oomKilled: inner?.runState.oomKilled ?? false,
        exitCode: ended ? (innerEnded ? inner.runState.exitCode : (t?.exitCode ?? 255)) : 0,
        error: t?.error ?? '',
        startedAt: inner?.runState.startedAt ?? '',
        finishedAt: ended ? (inner?.runState.finishedAt ?? t?.timestamp ?? '') : '',
        pid: 0,
      },
      config: { ...base.config, labels: base.labels },
      host: {
        ...base.host,
        binds: listed.mounts.filter((m) => m.type === 'bind').map((m) => `${m.source}:${m.destination}:rw`),
        networkMode: listed.networkMode,
        // enforced by the node's daemon, as its probe found from inside a task (nodes.ts)
        securityOpt: hardened ? [...new Set([...base.host.securityOpt, 'no-new-privileges:true', 'no-new-privileges'])] : base.host.securityOpt,
        cgroupnsMode: hardened ? 'private' : base.host.cgroupnsMode,
      },
      restartCount: 0,
    };
  }

  /**
   * A running run's disk use, counted by its node's engine (the node's folders are not on this
   * host): its task container's writable layer with its workspace volume, its results volume,
   * and the attempt's volumes it mounts. One count of a node's engine (GET /system/df, which
   * walks every layer and volume there) serves every run on that node for SWARM.diskUseMaxAgeMs.
   */
  async diskUse(id: string): Promise<RunDiskUse | undefined> {
    const task = await this.taskContainer(id).catch((err: unknown) => {
      if (isNotFound(err)) return undefined;
      throw err;
    });
    const h = task?.node;
    if (!task || !h?.engine.local) return undefined;
    const { name } = parseRunId(id);
    const inner = await h.engine.containers.inspect(task.container);
    const df = await this.nodeDiskUsage(h);
    const vol = (v: string) => df.volumes.get(v) ?? 0;
    const own = attemptVolumes(inner.mounts, name);
    return {
      layer: (df.layers.get(inner.id) ?? 0) + vol(wsVolume(name)),
      results: vol(resultsVolume(name)),
      volumes: own.reduce((n, m) => n + vol(m.name as string), 0),
      byMountPath: Object.fromEntries(own.map((m) => [m.destination, vol(m.name as string)])),
      countedBy: `node ${nodeName(h.node)}'s engine`,
    };
  }

  private readonly nodeCounts = new Map<string, { at: number; count: ReturnType<LocalStorage['diskUsage']> }>();

  private nodeDiskUsage(h: NodeHandle): ReturnType<LocalStorage['diskUsage']> {
    const kept = this.nodeCounts.get(h.node.id);
    if (kept && this.now() - kept.at < SWARM.diskUseMaxAgeMs) return kept.count;
    const local = h.engine.local as LocalStorage;
    const count = local.diskUsage();
    this.nodeCounts.set(h.node.id, { at: this.now(), count });
    count.catch(() => this.nodeCounts.delete(h.node.id));
    return count;
  }

  async stop(id: string, graceSeconds: number): Promise<void> {
    const s = await this.service(id);
    if (!s) return;
    const t = latest(await this.swarm.tasks.list({ services: [s.id] }));
    if (!t || FINAL.has(t.state)) return;
    const node = (await this.pool.reachable()).find((n) => n.node.id === t.nodeId);
    if (t.containerId && node) await node.engine.containers.stop(t.containerId, graceSeconds);
    else await this.swarm.services.remove(s.id); // not started yet: nothing to stop but the job
  }

  /**
   * The running task's container of a run, by the id its node's engine knows it by, and that
   * node: as the manager names it, or (the moment after a start, before the manager hears of it)
   * as its node lists it. A run not running (not started, ended, its node lost) is 404.
   */
  private async taskContainer(id: string): Promise<{ node: NodeHandle; container: string }> {
    const s = await this.service(id);
    if (!s || this.isLost(s)) throw notFound(id);
    const t = latest(await this.swarm.tasks.list({ services: [s.id] }));
    const nodeId = t?.nodeId || s.nodeId;
    const node = (await this.pool.reachable()).find((n) => n.node.id === nodeId);
    if (!t || FINAL.has(t.state) || !node) throw notFound(`${id} (its task is not running${node ? '' : ' on a node berth reaches'})`);
    const container = t.containerId || (await node.engine.containers.list([`${SWARM.serviceIdLabel}=${s.id}`, `${SWARM.taskLabel}=${s.name}`]))[0]?.id;
    if (!container) throw notFound(`${id} (its task has no container yet)`);
    return { node, container };
  }

  /** The run's task's container, through its node's engine (`berth exec`, `berth cp`, the API). */
  async reach(id: string): Promise<Reached> {
    const { node, container } = await this.taskContainer(id);
    return { engine: node.engine, id: container, where: `node ${nodeName(node.node)}'s engine (${node.engine.address ?? '?'})` };
  }

  /** A command in the run's task's container, through its node's engine (Engine.reach does the same for `berth exec`). */
  async execStart(id: string, o: ExecOptions): Promise<ExecSession> {
    const { node, container } = await this.taskContainer(id);
    return node.engine.containers.execStart(container, o);
  }

  /** Runs `cmd` in the run's task's container, through its node's engine (a sidecar's `ready: {command}`). */
  async exec(id: string, cmd: string[], ms: number): Promise<number> {
    const { node, container } = await this.taskContainer(id);
    return node.engine.containers.exec(container, cmd, ms);
  }

  /**
   * Tries `host:port` from the run's task's container's network namespace, on its node (reach.ts):
   * a sidecar's `ready: {tcp}` on an overlay, whose addresses berth cannot reach from where it runs.
   */
  async probeTcp(id: string, host: string, port: number, ms: number, everyMs: number): Promise<string> {
    const { node, container } = await this.taskContainer(id);
    const { name } = parseRunId(id);
    const labels = (await this.swarm.services.inspect(name)).labels;
    const keep = [LABELS.instance, LABELS.attempt, LABELS.run];
    const own = { ...Object.fromEntries(keep.filter((k) => labels[k] !== undefined).map((k) => [k, labels[k] as string])), [SWARM.tcpProbeLabel]: name };
    return probeTcpFrom(node.docker, container, this.pool.probeImage, { host, port, ms, everyMs }, own);
  }

  async remove(id: string): Promise<boolean> {
    const s = await this.service(id);
    const { name } = parseRunId(id);
    this.placing.delete(name);
    const tasks = s ? await this.swarm.tasks.list({ services: [s.id] }) : [];
    let any = s ? await this.swarm.services.remove(s.id) : false;
    // the task's container: the node removes it in its own time, and it holds the run's volumes
    // and secrets until then; it is the run's, so it goes now, through its node's engine
    const nodes = tasks.length ? await this.pool.reachable() : [];
    for (const t of tasks) {
      const n = nodes.find((x) => x.node.id === t.nodeId);
      if (t.containerId && n && n.node.state === 'ready') any = (await n.engine.containers.remove(t.containerId)) || any;
    }
    // the run's own `none` network (a manager's network: it goes even while the node is down)
    const own = await this.swarm.networks.inspect(privateNetwork(name)).catch(() => undefined);
    if (own && own.labels[SWARM.runLabel] === name && own.labels[LABELS.managed] === 'true')
      any = (await this.removeWhenFree(() => this.swarm.networks.remove(own.id))) || any;
    const h = await this.locate(id);
    const state = h ? (await this.pool.all()).find((n) => n.id === h.node.id)?.state : undefined;
    if (h && state !== 'ready') {
      // a node that is down keeps the run's prepared container and volumes until it is back:
      // they are listed then (a created run of an earlier run number) and removed
      return true;
    }
    for (const sec of h ? await this.swarm.secrets.list([`${SWARM.runLabel}=${runId(name, h.node.id)}`]) : [])
      any = (await this.removeWhenFree(() => this.swarm.secrets.remove(sec.id))) || any;
    if (h) {
      // a task's container the service's removal has not taken with it (its node was down then)
      for (const c of await h.engine.containers.list([`${SWARM.taskLabel}=${name}`])) any = (await h.engine.containers.remove(c.id)) || any;
      // a sidecar's tcp probe a berth killed between its create and its start left (reach.ts; one
      // started removes itself)
      if (!s || s.labels[LABELS.component] === COMPONENTS.sidecar)
        for (const c of await h.engine.containers.list([`${SWARM.tcpProbeLabel}=${name}`])) any = (await h.engine.containers.remove(c.id)) || any;
      any = (await h.engine.containers.remove(name)) || any;
      for (const v of [wsVolume(name), resultsVolume(name), helperVolume(name)]) any = (await this.removeWhenFree(() => h.engine.volumes.remove(v))) || any;
    }
    return any;
  }

  /** A secret or volume is in use until the task's container is gone (the node removes it soon after the service). */
  private async removeWhenFree(remove: () => Promise<boolean>): Promise<boolean> {
    for (let i = 0; ; i++) {
      try {
        return await remove();
      } catch (err) {
        if (i >= 100 || isNotFound(err)) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
  }

  async logs(id: string, opts: { follow: boolean; tail?: number }): Promise<Readable> {
    const s = await this.service(id);
    if (!s || this.isLost(s)) throw notFound(id);
    return this.swarm.services.logs(s.id, opts);
  }

  /**
   * A tar of `path` read out of the run through its node's engine (the archive API: nothing runs
   * anywhere), entries named `<basename of path>/...`. It is read from the run's prepared
   * container, which holds the run's workspace volume at the working folder and its results
   * volume at /results, the very volumes its task's container wrote, and which stays on the node
   * until berth removes the run (the task's container is the node's, which may prune it in its
   * own time). A run whose node berth cannot reach, or a path that is not there, is 404.
   */
  async getArchive(id: string, path: string): Promise<Readable> {
    const h = await this.locate(id);
    if (!h) throw notFound(id);
    return h.engine.containers.getArchive(parseRunId(id).name, path);
  }

  async collect(id: string, into: string, caps: { maxBytes: number; maxFiles: number }, listMax?: number): Promise<CollectLeftOut> {
    const h = await this.locate(id);
    if (!h) return { entries: 0, bytes: 0, listed: [] };
    const tar = (await h.docker.getContainer(parseRunId(id).name).getArchive({ path: DEFAULTS.resultsMount })) as unknown as Readable;
    return extractResults(tar, DEFAULTS.resultsMount.replace(/^\//, ''), into, caps, listMax);
  }
}

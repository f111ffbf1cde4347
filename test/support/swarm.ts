/**
 * A real Docker Swarm for tests, made of engines of its own: each node is one more dockerd in a
 * network namespace of its own (own data root, exec root, pid file and socket), the namespaces
 * joined by veths to a bridge in one more "hub" namespace (10.78.0.0/24), the first node
 * `swarm init`s and the others join it. The shared engine at /var/run/docker.sock is never a
 * node and never `swarm init`ed; it only hands its test images over (`docker save | load`: no
 * registry). Everything is ended by process id and removed by path: processes, containerd shims,
 * mounts, data roots, sockets, namespaces (their veths go with them).
 *
 * Nodes start hardened (`--no-new-privileges --default-cgroupns-mode private`) unless told not
 * to: an unhardened node is what the refusal test needs.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { promises as fs, openSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { SWARM } from '../../src/constants';
import { TEST_RUN } from './engine';
import { processTrees, releaseContainerd } from './procs';

const run = promisify(execFile);

/** The daemon flags a node berth trusts runs with (docs: the operator sets them). */
export const HARDENING_FLAGS = ['--no-new-privileges', '--default-cgroupns-mode', 'private'];

export interface NodeOptions {
  /** Started with HARDENING_FLAGS (default true). */
  hardened?: boolean;
}

function short(s: string, n: number): string {
  return createHash('sha256').update(s).digest('hex').slice(0, n);
}

export class SwarmNode {
  readonly root: string;
  readonly socket: string;
  readonly netns: string;
  readonly docker: Dockerode;
  /** The node's id in the swarm, once it is a member. */
  id = '';
  /** When its engine was last stopped or killed (ms since the epoch): the manager's record of the node down is newer. */
  stoppedAt = 0;
  private proc: ChildProcess | undefined;

  constructor(
    readonly swarmTag: string,
    readonly index: number,
    /** The address on the swarm's link (10.78.0.<index+1>). */
    readonly ip: string,
    readonly hardened: boolean,
  ) {
    this.root = `/tmp/bsw-${swarmTag}-${index}`;
    this.netns = `bsw-${swarmTag}-${index}`;
    this.socket = path.join(this.root, 'd.sock');
    this.docker = new Dockerode({ socketPath: this.socket });
  }

  get address(): string {
    return `unix://${this.socket}`;
  }

  get pid(): number | undefined {
    return this.proc?.pid;
  }

  /** Whether the dockerd it started is still running (not stopped, killed, nor exited). */
  get running(): boolean {
    const p = this.proc;
    return p !== undefined && p.exitCode === null && p.signalCode === null;
  }

  /** How errors name it: its index and, once a member, the start of its swarm id. */
  get name(): string {
    return `swarm node ${this.index}${this.id ? ` (${this.id.slice(0, 12)})` : ''}`;
  }

  /** The namespace and its veth to the hub's bridge (the hub end is named `<hub veth prefix><index>`). */
  async link(hub: string, vethPrefix: string): Promise<void> {
    const outer = `${vethPrefix}h${this.index}`;
    const inner = `${vethPrefix}n${this.index}`;
    await run('ip', ['netns', 'add', this.netns]);
    await run('ip', ['link', 'add', outer, 'netns', hub, 'type', 'veth', 'peer', 'name', inner, 'netns', this.netns]);
    await run('nsenter', [`--net=/var/run/netns/${hub}`, 'sh', '-c', `ip link set ${outer} master br0 && ip link set ${outer} up`]);
    await run('nsenter', [
      `--net=/var/run/netns/${this.netns}`,
      'sh',
      '-c',
      `ip addr add ${this.ip}/24 dev ${inner} && ip link set ${inner} up && ip link set lo up`,
    ]);
  }

  async start(): Promise<void> {
    await fs.mkdir(path.join(this.root, 'data'), { recursive: true });
    // after kill(): the containerd of the killed daemon may still be ending, or linger as a zombie (procs.ts)
    await releaseContainerd(path.join(this.root, 'x', 'containerd', 'containerd.pid'), path.join(this.root, 'x', 'containerd', 'containerd.toml'));
    const log = openSync(path.join(this.root, 'dockerd.log'), 'a');
    const argv = [
      `--net=/var/run/netns/${this.netns}`,
      'dockerd',
      `--host=unix://${this.socket}`,
      `--data-root=${path.join(this.root, 'data')}`,
      `--exec-root=${path.join(this.root, 'x')}`,
      `--pidfile=${path.join(this.root, 'd.pid')}`,
      `--bip=10.${92 + this.index}.0.1/24`,
      ...(this.hardened ? HARDENING_FLAGS : []),
    ];
    // nsenter, not `ip netns exec` (which remounts /sys and hides the cgroup mounts dockerd needs);
    // with only --net it execs dockerd itself: the child's pid is dockerd's.
    this.proc = spawn('nsenter', argv, { stdio: ['ignore', log, log] });
    const proc = this.proc;
    const exited = new Promise<never>((_, reject) =>
      proc.once('exit', (code) => {
        void fs.readFile(path.join(this.root, 'dockerd.log'), 'utf8').then(
          (text) => reject(new Error(`swarm node ${this.index} dockerd exited ${code}; its log ends:\n${text.split('\n').slice(-8).join('\n')}`)),
          () => reject(new Error(`swarm node ${this.index} dockerd exited ${code}; see ${this.root}/dockerd.log`)),
        );
      }),
    );
    exited.catch(() => undefined);
    const ready = (async () => {
      for (let i = 0; i < 600; i++) {
        try {
          await this.docker.ping();
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      throw new Error(`swarm node ${this.index} dockerd did not answer in 30 s; see ${this.root}/dockerd.log`);
    })();
    await Promise.race([ready, exited]);
  }

  /** Stops the daemon it started: SIGTERM by pid, SIGKILL after `graceMs`. */
  async stop(graceMs = 15_000): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    this.stoppedAt = Date.now();
    p.kill('SIGTERM');
    const t = setTimeout(() => p.kill('SIGKILL'), graceMs);
    await gone;
    clearTimeout(t);
    this.proc = undefined;
  }

  /** Kills the daemon (SIGKILL by pid): the node's machine is gone, as the swarm sees it. TestSwarm.startAgain brings it back. */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null || p.signalCode !== null) return;
    const gone = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    this.stoppedAt = Date.now();
    p.kill('SIGKILL');
    await gone;
    this.proc = undefined;
  }

  /** The processes under this node's containerd (shims and what runs under them). */
  async shimTrees(): Promise<number[]> {
    const marker = path.join(this.root, 'x', 'containerd', 'containerd.sock');
    return processTrees((p) => p.args.includes(marker) && (p.args.includes('containerd-shim') || p.args.includes('containerd ')));
  }

  async destroy(): Promise<void> {
    await this.stop();
    for (const pid of await this.shimTrees()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    const mounts = (await fs.readFile('/proc/self/mounts', 'utf8')).split('\n').map((l) => l.split(' ')[1] ?? '');
    for (const m of mounts.filter((m) => m.startsWith(`${this.root}/`)).reverse()) await run('umount', ['-l', m]).catch(() => undefined);
    await fs.rm(this.root, { recursive: true, force: true }).catch(() => undefined);
    await run('ip', ['netns', 'delete', this.netns]).catch(() => undefined);
  }
}

/** What keeps a node from serving the tests (TestSwarm.problems): its engine or its membership, or its availability. */
export interface NodeProblem {
  node: SwarmNode;
  kind: 'engine' | 'availability';
  what: string;
}

/** A node as the manager lists it (the fields the fixture reads). */
interface ListedNode {
  ID: string;
  Spec: { Availability: string };
  Status: { State: string; Message?: string };
}

export interface SwarmOptions {
  /** One entry per node; the first is the manager, the others join as workers. */
  nodes: NodeOptions[];
  /** Images copied from the shared engine into every node. */
  images: string[];
}

/** A swarm of engines of its own; `up()` makes it, `down()` removes every trace. */
export class TestSwarm {
  readonly tag: string;
  readonly hub: string;
  readonly nodes: SwarmNode[];
  private readonly vethPrefix: string;
  /** How long up() took, in ms. */
  startMs = 0;

  constructor(
    name: string,
    private readonly opts: SwarmOptions,
  ) {
    this.tag = short(`${TEST_RUN}-${name}`, 8);
    this.hub = `bsw-${this.tag}-hub`;
    this.vethPrefix = `bs${this.tag.slice(0, 6)}`;
    this.nodes = opts.nodes.map((n, i) => new SwarmNode(this.tag, i, `10.78.0.${i + 1}`, n.hardened ?? true));
  }

  get manager(): SwarmNode {
    return this.nodes[0] as SwarmNode;
  }

  get workers(): SwarmNode[] {
    return this.nodes.slice(1);
  }

  async up(): Promise<void> {
    const t0 = Date.now();
    try {
      await run('ip', ['netns', 'add', this.hub]);
      await run('nsenter', [`--net=/var/run/netns/${this.hub}`, 'sh', '-c', 'ip link add br0 type bridge && ip link set br0 up && ip link set lo up']);
      for (const n of this.nodes) await n.link(this.hub, this.vethPrefix);
      // the image archive is made while the daemons start
      const archive = this.saveImages();
      archive.catch(() => undefined); // awaited below; a failure is reported there
      await Promise.all(this.nodes.map((n) => n.start()));
      const m = this.manager;
      await m.docker.swarmInit({
        ListenAddr: `${m.ip}:2377`,
        AdvertiseAddr: m.ip,
        // a lost node is noticed in seconds, not the default 5 s heartbeat times its misses
        Spec: { Dispatcher: { HeartbeatPeriod: 1_000_000_000 }, Orchestration: { TaskHistoryRetentionLimit: 2 } },
      } as never);
      const info = (await m.docker.swarmInspect()) as { JoinTokens: { Worker: string } };
      await Promise.all(
        this.workers.map((w) =>
          w.docker.swarmJoin({ ListenAddr: `${w.ip}:2377`, AdvertiseAddr: w.ip, RemoteAddrs: [`${m.ip}:2377`], JoinToken: info.JoinTokens.Worker } as never),
        ),
      );
      for (const n of this.nodes) n.id = ((await n.docker.info()) as { Swarm: { NodeID: string } }).Swarm.NodeID;
      // where berth reaches each node's own engine (the operator's label; docs/SWARM.md)
      for (const n of this.nodes) await this.updateNode(n, (spec) => ({ ...spec, Labels: { ...(spec.Labels as object), [SWARM.engineLabel]: n.address } }));
      const file = await archive;
      await Promise.all(this.nodes.map((n) => run('docker', ['-H', n.address, 'load', '-q', '-i', file])));
      await fs.rm(file, { force: true });
      await this.waitReady();
    } catch (err) {
      const e = err as Error;
      await this.down().catch(() => undefined);
      throw new Error(`the test swarm could not start (${this.nodes.length} nodes): ${e.message}`, { cause: err });
    }
    this.startMs = Date.now() - t0;
  }

  /** Changes a node's spec through the manager (labels, availability). */
  async updateNode(n: SwarmNode, f: (spec: Record<string, unknown>) => Record<string, unknown>): Promise<void> {
    const node = this.manager.docker.getNode(n.id);
    const info = (await node.inspect()) as { Version: { Index: number }; Spec: Record<string, unknown> };
    await node.update({ version: info.Version.Index, ...f(info.Spec) } as never);
  }

  /** Sets a node's availability (`drain`: no task is placed there). */
  availability(n: SwarmNode, a: 'active' | 'drain'): Promise<void> {
    return this.updateNode(n, (spec) => ({ ...spec, Availability: a }));
  }

  private async saveImages(): Promise<string> {
    const file = `/tmp/bsw-${this.tag}-images.tar`;
    await run('docker', ['-H', 'unix:///var/run/docker.sock', 'save', '-o', file, ...this.opts.images], { maxBuffer: 1 << 20 });
    return file;
  }

  /**
   * What keeps each node from serving the tests, empty when nothing does: its engine not running or
   * not answering, its engine not an active member of the swarm (a restarted engine is `pending` until
   * the manager has registered its new session), the manager not having it `ready`; with
   * `availability`, a node left drained.
   */
  async problems(opts: { availability?: boolean } = {}): Promise<NodeProblem[]> {
    const out: NodeProblem[] = [];
    let listed: ListedNode[];
    try {
      listed = (await this.manager.docker.listNodes()) as ListedNode[];
    } catch (err) {
      listed = [];
      out.push({ node: this.manager, kind: 'engine', what: `${this.manager.name}: the manager does not list the nodes (${(err as Error).message})` });
    }
    for (const n of this.nodes) {
      if (!n.running) {
        out.push({ node: n, kind: 'engine', what: `${n.name}: its engine is not running` });
        continue;
      }
      let info: { Swarm: { NodeID: string; LocalNodeState: string; Error?: string } };
      try {
        info = (await n.docker.info()) as typeof info;
      } catch (err) {
        out.push({ node: n, kind: 'engine', what: `${n.name}: its engine does not answer (${(err as Error).message})` });
        continue;
      }
      const local = info.Swarm;
      if (local.LocalNodeState !== 'active' || local.NodeID !== n.id) {
        out.push({ node: n, kind: 'engine', what: `${n.name}: its engine is ${local.LocalNodeState} in the swarm${local.Error ? ` (${local.Error})` : ''}` });
      }
      if (listed.length === 0) continue;
      const seen = listed.find((x) => x.ID === n.id);
      if (!seen) {
        out.push({ node: n, kind: 'engine', what: `${n.name}: not in the manager's node list` });
        continue;
      }
      if (seen.Status.State !== 'ready') {
        out.push({
          node: n,
          kind: 'engine',
          what: `${n.name}: the manager has it ${seen.Status.State}${seen.Status.Message ? ` (${seen.Status.Message})` : ''}`,
        });
      }
      if (opts.availability && seen.Spec.Availability !== 'active') {
        out.push({ node: n, kind: 'availability', what: `${n.name}: left ${seen.Spec.Availability}` });
      }
    }
    return out;
  }

  /** What keeps the nodes from serving the tests (their availability included) once their engines are settled, waiting up to `timeoutMs` for those. */
  readyOrProblems(timeoutMs: number): Promise<NodeProblem[]> {
    return this.settle(timeoutMs, { availability: true });
  }

  /**
   * Polls the engines and the manager's node list (every 100 ms) until no node has a problem of its
   * engine, or `timeoutMs` passed, or an engine is not running (no wait brings that back); returns
   * what is left.
   */
  private async settle(timeoutMs: number, opts: { availability?: boolean } = {}): Promise<NodeProblem[]> {
    for (const end = Date.now() + timeoutMs; ; await new Promise((r) => setTimeout(r, 100))) {
      const left = await this.problems(opts);
      if (!left.some((p) => p.kind === 'engine') || this.nodes.some((n) => !n.running) || Date.now() >= end) return left;
    }
  }

  /**
   * Every node's engine answering and an active member, and the manager having every node ready
   * (polled, up to `timeoutMs`, default 60 s; at once when an engine is not running). A node that
   * is not by then fails the call loudly, naming it and its state; with `repair` (not while the
   * swarm is made), its engine is first started again (repair()), so the next test file finds the
   * swarm whole, and the error says whether it is.
   */
  async waitReady(opts: { timeoutMs?: number; repair?: boolean } = {}): Promise<void> {
    const t0 = Date.now();
    const problems = await this.settle(opts.timeoutMs ?? 60_000);
    if (problems.length === 0) return;
    const said = `the test swarm was not ready after ${((Date.now() - t0) / 1000).toFixed(1)} s: ${problems.map((p) => p.what).join('; ')}`;
    if (!opts.repair) throw new Error(said);
    const left = await this.repair(problems).catch((err: unknown) => [`starting them again failed: ${(err as Error).message}`]);
    throw new Error(
      `${said}; ${left.length === 0 ? 'ready again after its engine was started again' : `still not after its engine was started again: ${left.join('; ')}`}`,
    );
  }

  /**
   * Mends what problems() found: a drained node is made active again; a node whose engine is not
   * running, does not answer, is not an active member, or is not ready as the manager sees it, has
   * its engine stopped (if it runs) and started again the way startAgain() does. Returns what is
   * still wrong after that (empty: whole again).
   */
  async repair(problems: NodeProblem[]): Promise<string[]> {
    for (const p of problems) if (p.kind === 'availability') await this.availability(p.node, 'active');
    const sick = this.nodes.filter((n) => problems.some((p) => p.kind === 'engine' && p.node === n));
    const failed: string[] = [];
    // workers first: the manager (if it is sick too) is the one that records them down
    for (const n of [...sick].reverse()) {
      await n.stop();
      await this.startAgain(n, { wait: false }).catch((err: unknown) => failed.push((err as Error).message));
    }
    // a drain is looked at again only when it was one of the problems (a test may hold a node drained while it waits)
    const availability = problems.some((p) => p.kind === 'availability');
    return [...failed, ...(await this.settle(60_000, { availability })).map((p) => p.what)];
  }

  /**
   * Starts a node's engine again after kill() or stop() and waits until the swarm is ready
   * (waitReady, repairing). A worker is started only once the manager has recorded it down: its
   * heartbeat's expiry, three periods (HeartbeatPeriod 1 s, plus swarmkit's jitter of up to half a
   * period each) after its last beat, so 1.5 to 4.5 s after its engine ended. Started sooner, its
   * new session can register just as the old one's heartbeat expires; swarmkit's dispatcher puts
   * both the registration's `ready` and the expiry's `down` through one batch of node updates, and
   * when the `down` lands last the manager keeps the node down for good while its new session goes
   * on beating (nothing writes its state again until it registers anew): every later swarm test
   * file then fails against a worker that is in fact back (seen twice in 143 rounds of a kill and a
   * start again after 0.7 to 4 s). A node whose engine still runs is only waited for. Whatever
   * fails (the record, the start, the wait) fails the call, naming it, after waitReady's repair
   * had its go at bringing the node back.
   */
  async startAgain(n: SwarmNode, opts: { wait?: boolean } = {}): Promise<void> {
    const failed: string[] = [];
    const note = (err: unknown) => void failed.push((err as Error).message);
    if (!n.running) {
      if (n !== this.manager) await this.recordedDown(n, 30_000).catch(note);
      // an engine that fails to start is started again by waitReady's repair, and the call fails naming both
      await n.start().catch(note);
    }
    if (opts.wait ?? true) await this.waitReady({ repair: true }).catch(note);
    if (failed.length > 0) throw new Error(failed.join('; then '));
  }

  /** Resolves once the manager has recorded `n` down (or disconnected) after its engine was stopped or killed; polled every 100 ms. */
  private async recordedDown(n: SwarmNode, timeoutMs: number): Promise<void> {
    let seen = '';
    for (const end = Date.now() + timeoutMs; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) {
      const node = (await this.manager.docker.getNode(n.id).inspect()) as ListedNode & { UpdatedAt: string };
      seen = `${node.Status.State}, updated ${node.UpdatedAt}`;
      if ((node.Status.State === 'down' || node.Status.State === 'disconnected') && Date.parse(node.UpdatedAt) >= n.stoppedAt) return;
    }
    throw new Error(`${n.name}: the manager had not recorded it down ${timeoutMs / 1000} s after its engine ended (it has it ${seen}); started again anyway`);
  }

  /** Ends every node's processes and removes their folders, namespaces and links. */
  async down(): Promise<void> {
    // workers first: a manager that goes first leaves them retrying it
    for (const n of [...this.workers].reverse()) await n.destroy();
    await this.manager.destroy();
    await run('ip', ['netns', 'delete', this.hub]).catch(() => undefined);
    await fs.rm(`/tmp/bsw-${this.tag}-images.tar`, { force: true });
  }

  /** What is left on the host of this swarm (namespaces, folders, processes): empty after down(). */
  async traces(): Promise<string[]> {
    const out: string[] = [];
    const ns = (await run('ip', ['netns', 'list'])).stdout;
    for (const n of [this.hub, ...this.nodes.map((x) => x.netns)]) if (ns.split('\n').some((l) => l.split(' ')[0] === n)) out.push(`netns ${n}`);
    for (const n of this.nodes) {
      if (
        await fs.access(n.root).then(
          () => true,
          () => false,
        )
      )
        out.push(`folder ${n.root}`);
      for (const pid of await n.shimTrees()) out.push(`process ${pid}`);
      if (
        n.pid !== undefined &&
        (await fs.access(`/proc/${n.pid}`).then(
          () => true,
          () => false,
        ))
      )
        out.push(`dockerd ${n.pid}`);
    }
    return out;
  }
}

let shared: Promise<TestSwarm> | undefined;
let sharedSwarm: TestSwarm | undefined;
/** What the shared swarm had wrong when a test file asked for it (mended then): reported by the root hooks. */
const mended: string[] = [];

/**
 * The two-node swarm (a manager and a worker, both hardened, with both test images) the swarm
 * tests share: started by the first that asks, ended by the root hooks (test/hooks.ts). It
 * rejects loudly when it cannot start: the swarm tests never skip. Each later ask (each swarm test
 * file's `before`) first makes sure that every node is back and ready (up to 20 s) and active, so
 * one test that left a node down or drained does not fail every file after it: what was wrong is
 * mended (TestSwarm.repair) and kept for the root hooks, which fail the run naming it
 * (sharedSwarmMended); a node that cannot be mended fails the file that asked, naming it and its state.
 */
export async function twoNodeSwarm(): Promise<TestSwarm> {
  let fresh = false;
  shared ??= (async () => {
    fresh = true;
    const s = new TestSwarm('two', { nodes: [{}, {}], images: ['berth/busybox:local', 'berth/egress-proxy:local'] });
    sharedSwarm = s;
    await s.up();
    return s;
  })();
  const s = await shared;
  if (fresh) return s;
  const problems = await s.readyOrProblems(20_000);
  if (problems.length === 0) return s;
  const said = problems.map((p) => p.what).join('; ');
  const left = await s.repair(problems);
  if (left.length > 0) throw new Error(`the shared test swarm is not ready: ${said}; still not after its engines were started again: ${left.join('; ')}`);
  mended.push(said);
  return s;
}

/** What the shared swarm had wrong when a test file began (a test before it left it so), mended then; taken once. */
export function sharedSwarmMended(): string[] {
  return mended.splice(0);
}

/** Ends the shared swarm if one was started; returns what it left behind (nothing, normally). */
export async function endSharedSwarm(): Promise<string[]> {
  const s = sharedSwarm;
  if (!s) return [];
  shared = undefined;
  sharedSwarm = undefined;
  await s.down();
  return s.traces();
}

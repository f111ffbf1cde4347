/**
 * The swarm's events, as the controller and `--wait` follow them (a wake-up only: they re-read
 * the state; level-triggered). Tasks emit no events (moby#37403), and the manager's own stream
 * carries only the containers of the tasks that run on the manager itself. So the stream is the
 * manager's (this instance's labels: its networks, volumes, its own tasks' containers) merged
 * with each node's: every node that names its engine (SWARM.engineLabel) and is not the manager
 * is followed for the `die` of this instance's tasks' containers.
 *
 * - A task container's event carries the run's id (`<run>@<node>`, as the backend lists it), so a
 *   follower that waits for the lists to show an exit (the manager hears of a task's end after
 *   its node) matches it to the run.
 * - A node's stream that breaks (the node went away) is connected again with back-off (DEFAULTS.streamRetryMs: 250 ms
 *   doubling to 10 s); once connected again, a `relist` event (RELIST_EVENT) says that what
 *   ended meanwhile was not reported. The manager's `node` events (a node joined, left, changed
 *   state or labels) update the nodes followed, and wake a node's follower out of its back-off;
 *   a node seen down gets a relist once its runs may count as lost (SWARM.lostGraceMs).
 * - The merged stream ends (or fails) when the manager's does: the follower relists and
 *   connects again, as for one engine. A node's failure never ends it.
 */
import { DEFAULTS, SWARM } from '../../constants';
import type { SwarmEngine } from '../../engine/swarm/types';
import { RELIST_EVENT, type EngineEvent, type EventClient } from '../../engine/types';
import { runId, type NodeHandle, type NodePool } from './nodes';

/** Container actions on a node that tell a run may have ended (nothing else happens there without berth asking). */
const ENDS = new Set(['die', 'oom', 'kill']);

/** The event with the run's id when it is about a run's task container on `node`. */
function asRun(ev: EngineEvent, node: string): EngineEvent {
  const task = ev.attributes[SWARM.taskLabel];
  return ev.type === 'container' && task && node ? { ...ev, id: runId(task, node) } : ev;
}

function relist(origin: string, now: () => number): EngineEvent {
  return { type: RELIST_EVENT, action: RELIST_EVENT, id: origin, attributes: {}, timeNano: BigInt(now()) * 1_000_000n, origin };
}

/** Resolves after `ms`, at an abort, or when `kick` is called (whichever is first). */
function pause(ms: number, signal: AbortSignal, onKick: (kick: () => void) => void): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(t);
      signal.removeEventListener('abort', done);
      onKick(() => undefined);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
    onKick(done);
  });
}

/** One node's engine followed for this instance's task containers' ends, reconnected with back-off. */
class NodeFollower {
  private readonly abort = new AbortController();
  private kick: () => void = () => undefined;

  constructor(
    readonly h: NodeHandle,
    private readonly labelFilters: string[],
    private readonly push: (ev: EngineEvent) => void,
    parent: AbortSignal,
    private readonly now: () => number,
  ) {
    parent.addEventListener('abort', () => this.abort.abort(), { once: true });
    void this.loop();
  }

  /** Out of the back-off now (the node is back, as the manager says). */
  wake(): void {
    this.kick();
  }

  stop(): void {
    this.abort.abort();
  }

  private async loop(): Promise<void> {
    const signal = this.abort.signal;
    const node = this.h.node.id;
    let delay: number = DEFAULTS.streamRetryMs.first;
    let broken = false;
    while (!signal.aborted) {
      try {
        const events = await this.h.engine.events.stream([...this.labelFilters, SWARM.taskLabel], { signal });
        // connected again after a break: what ended meanwhile was not reported
        if (broken) this.push(relist(node, this.now));
        broken = false;
        delay = DEFAULTS.streamRetryMs.first;
        for await (const ev of events) {
          if (ev.type === 'container' && ENDS.has(ev.action)) this.push({ ...asRun(ev, node), origin: node });
        }
      } catch {
        // the node's engine is away (or never answered): tried again below
      }
      if (signal.aborted) return;
      broken = true;
      await pause(delay, signal, (k) => (this.kick = k));
      delay = Math.min(delay * 2, DEFAULTS.streamRetryMs.max);
    }
  }
}

export class SwarmEvents implements EventClient {
  constructor(
    /** The manager's own engine events. */
    private readonly manager: EventClient,
    private readonly swarm: SwarmEngine,
    private readonly pool: NodePool,
    /** The clock a relist event's time is read from. */
    private readonly now: () => number = Date.now,
  ) {}

  /** The manager's image events: its images are the ones the swarm backend's preflight looks at (index.ts). */
  images(opts: { since?: number; signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>> {
    return this.manager.images(opts);
  }

  /**
   * No event log to look a run's late OOM kill up in: a task's container is on its node, whose
   * events reach berth merged into the stream (late-oom.ts then keeps the inspect's answer).
   */
  first(): Promise<EngineEvent | undefined> {
    return Promise.resolve(undefined);
  }

  async stream(labelFilters: string[], opts: { since?: number; signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>> {
    const abort = new AbortController();
    const outer = opts.signal;
    if (outer?.aborted) abort.abort();
    outer?.addEventListener('abort', () => abort.abort(), { once: true });
    const signal = abort.signal;
    let inner: AsyncIterable<EngineEvent>;
    let self: string;
    try {
      [inner, self] = await Promise.all([this.manager.stream(labelFilters, { ...opts, signal }), this.swarm.manager().then((m) => m.nodeId)]);
    } catch (err) {
      abort.abort();
      throw err;
    }

    const ready: EngineEvent[] = [];
    let wake: (() => void) | undefined;
    let ended: { error?: unknown } | undefined;
    const push = (ev: EngineEvent) => {
      ready.push(ev);
      wake?.();
    };
    const finish = (e: { error?: unknown }) => {
      ended ??= e;
      wake?.();
    };
    // a stream destroyed by the abort may never end its reader (readline waits for an `end`)
    signal.addEventListener('abort', () => finish({}), { once: true });
    void (async () => {
      try {
        for await (const ev of inner) push(asRun(ev, self));
        finish({});
      } catch (err) {
        finish({ error: err });
      }
    })();

    // the nodes followed: every one that names its engine, but the manager (its events are above)
    const followers = new Map<string, NodeFollower>();
    const lostChecks = new Set<NodeJS.Timeout>();
    const refresh = async () => {
      const nodes = await this.swarm.nodes.list();
      this.pool.note(nodes);
      const want = new Map<string, NodeHandle>();
      for (const n of nodes) {
        const h = n.id === self ? undefined : this.pool.handle(n);
        if (h) want.set(`${n.id} ${n.labels[SWARM.engineLabel]}`, h);
      }
      for (const [k, f] of followers) {
        if (!want.has(k)) {
          f.stop();
          followers.delete(k);
        }
      }
      for (const [k, h] of want) {
        const known = followers.get(k);
        if (known) {
          if (h.node.state === 'ready') known.wake();
        } else if (!signal.aborted) followers.set(k, new NodeFollower(h, labelFilters, push, signal, this.now));
        if (h.node.state !== 'ready' && !signal.aborted) {
          // its runs count as lost once the grace has passed: look then
          const t = setTimeout(() => (lostChecks.delete(t), push(relist(h.node.id, this.now))), SWARM.lostGraceMs + 1_000);
          lostChecks.add(t);
        }
      }
    };
    void this.watchNodes(signal, refresh);

    return (async function* () {
      try {
        for (;;) {
          while (ready.length > 0) yield ready.shift() as EngineEvent;
          if (ended) {
            if (ended.error !== undefined) throw ended.error;
            return;
          }
          await new Promise<void>((r) => (wake = r));
          wake = undefined;
        }
      } finally {
        abort.abort();
        for (const t of lostChecks) clearTimeout(t);
        for (const f of followers.values()) f.stop();
      }
    })();
  }

  /**
   * The manager's node events, each (a short while after, batched) a new look at the node list;
   * the first look once the watch is connected. A watch that breaks is connected again with
   * back-off; a look that fails waits for the next event.
   */
  private async watchNodes(signal: AbortSignal, refresh: () => Promise<void>): Promise<void> {
    let delay: number = DEFAULTS.streamRetryMs.first;
    let timer: NodeJS.Timeout | undefined;
    const look = () => {
      clearTimeout(timer);
      timer = setTimeout(() => void refresh().catch(() => undefined), 100);
    };
    signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
    while (!signal.aborted) {
      try {
        const events = await this.swarm.nodes.events({ signal });
        delay = DEFAULTS.streamRetryMs.first;
        await refresh().catch(() => undefined);
        for await (const _ev of events) look();
      } catch {
        // the manager's own stream fails too, and ends the whole
      }
      if (signal.aborted) return;
      await pause(delay, signal, () => undefined);
      delay = Math.min(delay * 2, DEFAULTS.streamRetryMs.max);
    }
  }
}

/**
 * A real engine whose container lists lag its `die` events by `ms`, as dockerd's do on a loaded
 * machine or for a container on a network of its own (by seconds): a container whose `die` the
 * event stream passed on is listed `running` for `ms` after it. Inspect, and everything else, is
 * the engine's own. For tests of completion detection that must not lean on the lists.
 */
import type { ContainerClient, Engine, EngineEvent } from '../../src/engine/types';

export interface LaggingEngine {
  engine: Engine;
  /** When the stream passed on each container's `die` (ms since the epoch), by container id. */
  diedAt: ReadonlyMap<string, number>;
}

export function listsLagging(engine: Engine, ms: number): LaggingEngine {
  const diedAt = new Map<string, number>();
  const inner = engine.containers;
  const list: ContainerClient['list'] = async (filters) =>
    (await inner.list(filters)).map((c) => {
      const t = diedAt.get(c.id);
      return t !== undefined && Date.now() - t < ms && c.state === 'exited' ? { ...c, state: 'running', status: 'Up (the lists lag)' } : c;
    });
  const containers = new Proxy(inner, {
    get(target, prop, receiver) {
      if (prop === 'list') return list;
      const v: unknown = Reflect.get(target, prop, receiver);
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v;
    },
  });
  const tap = async function* (src: AsyncIterable<EngineEvent>): AsyncIterable<EngineEvent> {
    for await (const ev of src) {
      if (ev.type === 'container' && ev.action === 'die' && !diedAt.has(ev.id)) diedAt.set(ev.id, Date.now());
      yield ev;
    }
  };
  return {
    engine: {
      ...engine,
      containers,
      events: {
        stream: async (filters, opts) => tap(await engine.events.stream(filters, opts)),
        images: (opts) => engine.events.images(opts),
        first: (id, actions, opts) => engine.events.first(id, actions, opts),
      },
    },
    diedAt,
  };
}

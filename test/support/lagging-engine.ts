/**
 * A real engine whose container lists lag its `die` events, as dockerd's do on a loaded machine
 * or for a container on a network of its own (by seconds): a container whose `die` the event
 * stream passed on is listed `running` until `catchUp()`. Inspect, and everything else, is the
 * engine's own. For tests of completion detection that must not lean on the lists: what berth
 * records before catchUp() it cannot have read from them, whatever the machine's load.
 */
import type { ContainerClient, Engine, EngineEvent } from '../../src/engine/types';

export interface LaggingEngine {
  engine: Engine;
  /** When the stream passed on each container's `die` (ms since the epoch), by container id. */
  diedAt: ReadonlyMap<string, number>;
  /** How many lists showed an exited container as running. */
  readonly hidden: number;
  /** The lists show every exit from now on. */
  catchUp(): void;
}

export function listsLagging(engine: Engine): LaggingEngine {
  const diedAt = new Map<string, number>();
  let lagging = true;
  let hidden = 0;
  const inner = engine.containers;
  const list: ContainerClient['list'] = async (filters) =>
    (await inner.list(filters)).map((c) => {
      if (!lagging || !diedAt.has(c.id) || c.state !== 'exited') return c;
      hidden++;
      return { ...c, state: 'running', status: 'Up (the lists lag)' };
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
    get hidden() {
      return hidden;
    },
    catchUp: () => {
      lagging = false;
    },
  };
}

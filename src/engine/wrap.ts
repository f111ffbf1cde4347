/**
 * Decorators over an Engine: call counting/timing (for "engine calls per pass" and metrics),
 * and a read-only engine that refuses every mutating call (what `berth plan` runs against,
 * so that "plan changes nothing" is enforced, not promised).
 */
import { MutationRefusedError } from './errors';
import type { Engine } from './types';

type Kind = 'containers' | 'networks' | 'volumes' | 'images' | 'events' | 'engine';
const KINDS = ['containers', 'networks', 'volumes', 'images', 'events'] as const;
/** The engine's own calls (not of one resource kind): counted and timed as kind `engine`. */
const ENGINE_OPS = ['ping', 'version', 'boot', 'isolation'] as const;

/** Methods that change the engine. */
export const MUTATING: ReadonlySet<string> = new Set(['create', 'putArchive', 'start', 'stop', 'remove', 'connect', 'exec', 'execStart', 'build']);

export type CallListener = (call: { kind: Kind; op: string; ms: number; error?: unknown }) => void;

function wrapClient<T extends object>(client: T, around: (op: string, call: () => Promise<unknown>) => Promise<unknown>): T {
  return new Proxy(client, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver) as unknown;
      if (typeof value !== 'function' || typeof prop !== 'string') return value;
      return (...args: unknown[]) => around(prop, () => (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
    },
  });
}

function mapClients(engine: Engine, f: <T extends object>(kind: Kind, client: T) => T): Engine {
  const out: Engine = { ...engine };
  for (const kind of KINDS) (out as unknown as Record<Kind, object>)[kind] = f(kind, engine[kind]);
  // ping, version and boot (the pass's look at which start of the engine this is) are calls too
  const own = f('engine', engine);
  for (const op of ENGINE_OPS) (out as unknown as Record<string, unknown>)[op] = own[op];
  // the capabilities: the engine's storage counted as its own calls, runs elsewhere as containers'
  return {
    ...out,
    local: engine.local ? f('engine', engine.local) : null,
    remote: engine.remote ? f('containers', engine.remote) : null,
    // builds count as image calls (`images.build`)
    builds: engine.builds ? f('images', engine.builds) : null,
    // not a call: passed on as it is (the spread above misses a class's methods)
    abandon: engine.abandon.bind(engine),
    ...(engine.useCredentials ? { useCredentials: engine.useCredentials.bind(engine) } : {}),
    // what it reaches is another engine (a swarm node's) or this one as it is: its calls are that engine's own
    reach: engine.reach.bind(engine),
  };
}

export function instrumentEngine(engine: Engine, listener: CallListener): Engine {
  return mapClients(engine, (kind, client) =>
    wrapClient(client, async (op, call) => {
      const t0 = performance.now();
      try {
        const res = await call();
        listener({ kind, op, ms: performance.now() - t0 });
        return res;
      } catch (error) {
        listener({ kind, op, ms: performance.now() - t0, error });
        throw error;
      }
    }),
  );
}

export function readOnlyEngine(engine: Engine): Engine {
  return mapClients(engine, (kind, client) =>
    wrapClient(client, (op, call) => {
      if (MUTATING.has(op)) return Promise.reject(new MutationRefusedError(`${kind}.${op}`));
      return call();
    }),
  );
}

/** Counts engine calls by `kind.op`; `mutating` counts only the calls that change the engine. */
export class CallCounter {
  readonly byOp = new Map<string, number>();
  total = 0;
  mutating = 0;

  readonly listener: CallListener = ({ kind, op }) => {
    const key = `${kind}.${op}`;
    this.byOp.set(key, (this.byOp.get(key) ?? 0) + 1);
    this.total++;
    if (MUTATING.has(op)) this.mutating++;
  };

  reset(): void {
    this.byOp.clear();
    this.total = 0;
    this.mutating = 0;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries([...this.byOp.entries()].sort(([a], [b]) => a.localeCompare(b)));
  }
}

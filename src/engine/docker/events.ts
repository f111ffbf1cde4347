/** EventClient over dockerode: the engine's event stream as an async iterable of parsed events. */
import type Dockerode from 'dockerode';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { EngineEvent, EventClient } from '../types';
import type { BoundedCalls } from './deadline';

interface RawEvent {
  Type?: string;
  Action?: string;
  Actor?: { ID?: string; Attributes?: Record<string, string> };
  timeNano?: number;
  time?: number;
}

export function parseEvent(line: string): EngineEvent | undefined {
  let raw: RawEvent;
  try {
    raw = JSON.parse(line) as RawEvent;
  } catch {
    return undefined;
  }
  if (!raw.Type || !raw.Action) return undefined;
  // timeNano exceeds 2^53; recover it from `time` when JSON.parse rounded it.
  const nano = raw.time !== undefined ? BigInt(raw.time) * 1_000_000_000n : BigInt(Math.round(raw.timeNano ?? 0));
  return {
    type: raw.Type,
    // "exec_start: sh -c ..." and "health_status: healthy" carry details after a colon.
    action: raw.Action.split(':')[0] ?? raw.Action,
    id: raw.Actor?.ID ?? '',
    attributes: raw.Actor?.Attributes ?? {},
    timeNano: nano,
  };
}

/**
 * How many container events a client remembers from the streams it follows. The engine keeps only
 * its last 256 events for a later query (`since`), and an OOM kill alone sends about a hundred
 * `oom` events: under a few OOM kills at once, an event a run's end looks for (execute/late-oom.ts)
 * has left the engine's log before the look, although the controller's own stream saw it go by.
 */
const REMEMBERED_EVENTS = 4_096;

export class DockerEvents implements EventClient {
  /** The last container event of each id and action seen on any stream of this client, oldest first. */
  private readonly seen = new Map<string, EngineEvent>();

  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  private remember(ev: EngineEvent): void {
    if (ev.type !== 'container' || !ev.id) return;
    const key = `${ev.id} ${ev.action}`;
    this.seen.delete(key); // re-inserted: the newest last
    this.seen.set(key, ev);
    if (this.seen.size > REMEMBERED_EVENTS) this.seen.delete(this.seen.keys().next().value as string);
  }

  /** Bounded until the engine answers; `opts.signal` ends the stream. */
  stream(labelFilters: string[], opts: { since?: number; signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>> {
    return this.filtered({ label: labelFilters }, opts);
  }

  /** Image events, whatever the image's labels (a pull, a load, a tag). */
  images(opts: { since?: number; signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>> {
    return this.filtered({ type: ['image'] }, opts);
  }

  /** One bounded query of the engine's event log (`until` makes the engine end the stream then). */
  async first(id: string, actions: string[], opts: { since: number; until: number; signal?: AbortSignal }): Promise<EngineEvent | undefined> {
    // one a followed stream already saw (it may have left the engine's log since): no query
    for (const action of actions) {
      const ev = this.seen.get(`${id} ${action}`);
      const s = ev ? Number(ev.timeNano) / 1e9 : NaN;
      if (ev && s >= Math.floor(opts.since) && s <= opts.until) return ev;
    }
    const stop = new AbortController();
    const signal = opts.signal ? AbortSignal.any([opts.signal, stop.signal]) : stop.signal;
    const events = await this.filtered({ type: ['container'], container: [id], event: actions }, { since: opts.since, until: opts.until, signal });
    try {
      for await (const ev of events) if (ev.id === id && actions.includes(ev.action)) return ev;
      return undefined;
    } finally {
      stop.abort();
    }
  }

  /** The same with any of the engine's event filters (`type`, `event`, `label`, ...). */
  async filtered(filters: Record<string, string[]>, opts: { since?: number; until?: number; signal?: AbortSignal }): Promise<AsyncIterable<EngineEvent>> {
    const raw = (await this.calls.run(
      'events.stream',
      () =>
        this.docker.getEvents({
          filters,
          ...(opts.since !== undefined ? { since: seconds(opts.since) } : {}),
          ...(opts.until !== undefined ? { until: seconds(opts.until) } : {}),
        } as never) as unknown as Promise<Readable>,
      { stream: true, ...(opts.signal ? { signal: opts.signal } : {}) },
    )) as unknown as Readable;
    // The iterator is made now: readline drops the lines it reads before one exists, and the
    // engine sends the events since `since` (and any new one) before the caller's first next().
    const lines = createInterface({ input: raw, crlfDelay: Infinity })[Symbol.asyncIterator]();
    const remember = (ev: EngineEvent): void => this.remember(ev);
    return (async function* () {
      try {
        for await (const line of { [Symbol.asyncIterator]: () => lines }) {
          const ev = parseEvent(line);
          if (!ev) continue;
          remember(ev);
          yield ev;
        }
      } finally {
        raw.destroy();
      }
    })();
  }
}

/** Seconds as the engine's `since`/`until` take them: whole seconds, or `S.NNNNNNNNN`. */
function seconds(t: number): string {
  if (Number.isInteger(t)) return String(t);
  const whole = Math.floor(t);
  return `${whole}.${String(Math.round((t - whole) * 1e9)).padStart(9, '0')}`;
}

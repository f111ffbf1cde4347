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

export class DockerEvents implements EventClient {
  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

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
    return (async function* () {
      try {
        for await (const line of { [Symbol.asyncIterator]: () => lines }) {
          const ev = parseEvent(line);
          if (ev) yield ev;
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

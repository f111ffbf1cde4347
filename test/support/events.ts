/**
 * The engine's container events for one instance: what tests count (starts, creates, dies).
 * dockerd replays only its last 256 events to a `since` query, so on a busy engine (two lanes, a
 * machine shared with other runs) a test's early events can be gone by the time it asks. So the
 * shared engine's events of this test run are recorded as they come, from the first
 * requireEngine() on (test/support/engine.ts), and a query is answered from that record, with the
 * engine's own replay of the last seconds merged in (events still on their way when it asks).
 */
import type Dockerode from 'dockerode';
import { LABELS } from '../../src/constants';
import { docker, TEST_RUN } from './engine';

export interface PastEvent {
  attempt: string;
  /** The container's component label (main, grader, ...). */
  component: string;
  /** ms since the epoch */
  time: number;
}

interface RawEvent {
  Action: string;
  Actor: { ID: string; Attributes: Record<string, string> };
  timeNano: number;
}

const recorded: RawEvent[] = [];
let recordingSince: number | undefined;
let recording: Promise<void> | undefined;

/** Starts recording the shared engine's container events of this test run (once; the stream lives until the process ends). */
export function recordEvents(): Promise<void> {
  recording ??= (async () => {
    const stream = (await docker.getEvents({
      filters: { type: ['container'], label: [`${LABELS.managed}=true`] },
    } as never)) as unknown as NodeJS.ReadableStream & { destroy?: () => void };
    recordingSince = Date.now();
    let rest = '';
    stream.on('data', (chunk: Buffer) => {
      const lines = (rest + String(chunk)).split('\n');
      rest = lines.pop() ?? '';
      for (const l of lines) {
        if (!l) continue;
        const e = JSON.parse(l) as RawEvent;
        if (e.Actor.Attributes[LABELS.instance]?.startsWith(`${TEST_RUN}-`)) recorded.push(e);
      }
    });
    stream.on('error', () => undefined);
    // never holds the process open
    (stream as unknown as { socket?: { unref?: () => void } }).socket?.unref?.();
  })();
  return recording;
}

/** The engine's replay of `action` events of `instance` from `since` (seconds) until now. */
async function replay(instance: string, since: number, action: string, engine: Dockerode): Promise<RawEvent[]> {
  const stream = (await engine.getEvents({
    since,
    until: (Date.now() / 1000).toFixed(3),
    filters: { type: ['container'], event: [action], label: [`${LABELS.instance}=${instance}`] },
  } as never)) as unknown as NodeJS.ReadableStream;
  let text = '';
  for await (const chunk of stream) text += String(chunk);
  return text
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as RawEvent);
}

/** Container events `action` of `instance` from `since` (seconds) until now, on the shared engine or `engine` (a test swarm's node). */
export async function containerEvents(instance: string, since: number, action: string, engine: Dockerode = docker): Promise<PastEvent[]> {
  let events: RawEvent[];
  if (engine !== docker || recordingSince === undefined || since * 1000 < recordingSince) {
    events = await replay(instance, since, action, engine);
  } else {
    // the record, and the engine's replay of the last seconds (events on their way when asked)
    const tail = await replay(instance, Math.max(since, Math.floor(Date.now() / 1000) - 5), action, engine);
    const seen = new Map<string, RawEvent>();
    for (const e of [...recorded, ...tail]) {
      if (e.Action !== action || e.Actor.Attributes[LABELS.instance] !== instance || e.timeNano < since * 1e9) continue;
      seen.set(`${e.Actor.ID} ${e.Action} ${e.timeNano}`, e);
    }
    events = [...seen.values()].sort((a, b) => a.timeNano - b.timeNano);
  }
  return events.map((e) => ({
    attempt: e.Actor.Attributes[LABELS.attempt] ?? '',
    component: e.Actor.Attributes[LABELS.component] ?? '',
    time: e.timeNano / 1e6,
  }));
}

/** How many `action` events each attempt of `instance` had since `since`. */
export async function countByAttempt(instance: string, since: number, action: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const e of await containerEvents(instance, since, action)) out.set(e.attempt, (out.get(e.attempt) ?? 0) + 1);
  return out;
}

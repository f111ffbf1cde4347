/** The engine's past events for one instance: what tests count (starts, creates, dies). */
import type Dockerode from 'dockerode';
import { LABELS } from '../../src/constants';
import { docker } from './engine';

export interface PastEvent {
  attempt: string;
  /** The container's component label (main, grader, ...). */
  component: string;
  /** ms since the epoch */
  time: number;
}

/** Container events `action` of `instance` from `since` (seconds) until now, on the shared engine or `engine` (a test swarm's node). */
export async function containerEvents(instance: string, since: number, action: string, engine: Dockerode = docker): Promise<PastEvent[]> {
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
    .map((l) => JSON.parse(l) as { Actor: { Attributes: Record<string, string> }; timeNano: number })
    .map((e) => ({ attempt: e.Actor.Attributes[LABELS.attempt] ?? '', component: e.Actor.Attributes[LABELS.component] ?? '', time: e.timeNano / 1e6 }));
}

/** How many `action` events each attempt of `instance` had since `since`. */
export async function countByAttempt(instance: string, since: number, action: string): Promise<Map<string, number>> {
  const out = new Map<string, number>();
  for (const e of await containerEvents(instance, since, action)) out.set(e.attempt, (out.get(e.attempt) ?? 0) + 1);
  return out;
}

/**
 * The attempt an exec or a copy reaches into: its status record says its current run is
 * Running (else it is refused, its phase named), and its run folder is where the record goes.
 * Whether its container still runs is asked of the engine only after the `begin` line is written
 * (enter): a harvest reads the record after the container has stopped, so an exec or a copy it
 * did not count finds the container stopped and is refused.
 */
import type { Engine, Reached } from '../engine/types';
import { isNotFound } from '../engine/errors';
import { runRedaction, sourcesFor, type RunRedaction } from '../harvest/redaction';
import type { SecretRef } from '../spec/types';
import type { StatusStore } from '../status/store';
import type { AttemptStatus, Touched } from '../status/types';
import { appendLine, readTouched, recordOf, type BeginLine } from './record';

export interface Target {
  name: string;
  rec: AttemptStatus;
  /** The run's container id as the record holds it (on a swarm, the run's). */
  containerId: string;
  /** Where its record goes. */
  where: { base: string; runDir: string };
  redaction: RunRedaction;
  engine: Engine;
}

export type Refusal = { refused: string; why: 'not-found' | 'not-running' };

export interface FindOptions {
  store: StatusStore;
  engine: Engine;
  resultsRoot: string | undefined;
  env: NodeJS.ProcessEnv;
  name: string;
  /** The attempt's spec, when known: its secrets are redacted when the record does not name them. */
  spec?: { hash: string; secrets: readonly SecretRef[] };
}

/** Why `rec` is not a run to reach into, in words; undefined when it is one. */
export function notRunning(name: string, rec: AttemptStatus | undefined): Refusal | undefined {
  if (!rec) return { refused: `attempt ${name} not found (no status record in this state folder and instance)`, why: 'not-found' };
  if (rec.phase !== 'Running' || rec.ended || !rec.containerId || !rec.resultsDir) {
    const why = rec.ended
      ? `its run ${rec.run} has ended (${rec.ended.phase}) and is being harvested`
      : `it is ${rec.phase}${rec.reason ? ` (${rec.reason})` : ''}`;
    return { refused: `attempt ${name}: ${why}, not Running: only a Running attempt takes exec and cp`, why: 'not-running' };
  }
  return undefined;
}

export async function findTarget(o: FindOptions): Promise<Target | Refusal> {
  const rec = await o.store.get(o.name);
  const no = notRunning(o.name, rec);
  if (no || !rec) return no as Refusal;
  return {
    name: o.name,
    rec,
    containerId: rec.containerId as string,
    where: recordOf(o.resultsRoot, rec.resultsDir as string),
    redaction: await runRedaction(sourcesFor(rec, o.spec), o.env),
    engine: o.engine,
  };
}

/**
 * Writes the `begin` line (synced), then finds the running container: the reached container, or
 * why not (the `end` line then says it was refused: it does not count).
 */
export async function enter(t: Target, begin: BeginLine): Promise<Reached | Refusal> {
  await appendLine(t.where, t.redaction.redactor.redactJson(begin), true);
  let reached: Reached;
  try {
    reached = await t.engine.reach(t.containerId);
    const st = await reached.engine.containers.inspect(reached.id);
    if (st.runState.running) return reached;
  } catch (err) {
    if (!isNotFound(err)) throw err;
  }
  const refusal: Refusal = { refused: `attempt ${t.name}: its container is not running (run ${t.rec.run})`, why: 'not-running' };
  await appendLine(t.where, {
    id: begin.id,
    at: new Date().toISOString(),
    event: 'end',
    kind: begin.kind,
    exitCode: 1,
    durationMs: 0,
    refused: refusal.refused,
  });
  return refusal;
}

/** `statuses` with each running run's touches counted from its run folder (touchedOf); the others as they are. */
export async function withLiveTouched(statuses: ReadonlyMap<string, AttemptStatus>, resultsRoot: string | undefined): Promise<Map<string, AttemptStatus>> {
  const out = new Map(statuses);
  for (const [name, rec] of statuses) {
    if (rec.touched || (rec.phase !== 'Running' && !rec.ended)) continue;
    const touched = await touchedOf(rec, resultsRoot);
    if (touched) out.set(name, { ...rec, touched });
  }
  return out;
}

/** What a record shows of its run's touches: its own count once harvested, else (running) its run folder's record. */
export async function touchedOf(rec: AttemptStatus | undefined, resultsRoot: string | undefined): Promise<Touched | undefined> {
  if (!rec) return undefined;
  if (rec.touched) return rec.touched;
  const live = rec.phase === 'Running' || rec.ended !== undefined;
  if (!live || !rec.resultsDir) return undefined;
  return readTouched(recordOf(resultsRoot, rec.resultsDir)).catch(() => undefined);
}

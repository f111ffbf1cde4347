/**
 * `berth events`: what happened to attempts, derived from what berth already records in their
 * status records (pure): each run's start and end (the engine's StartedAt and FinishedAt), the
 * record's creation, the last attestation, a retry, a collection, a rerun request, a delete, each
 * grade's verdict (Graded, Regraded for a grade after the first of its run, GradeFailed).
 */
import { EVENT_REASONS, REASONS } from '../constants';
import type { RemovedImage } from '../controller/image-gc';
import { gradeOutcome } from '../sets/grade-text';
import { showBytes } from '../util/bytes';
import type { AttemptStatus } from '../status/types';

export interface AttemptEvent {
  at: string;
  type: 'Normal' | 'Warning';
  reason: string;
  attempt: string;
  message: string;
  /** The object when it is not an attempt (`image/<ref>`: image GC's ImageRemoved; `attempt` is then ''). */
  object?: string;
}

const WARN_PHASES = new Set(['Failed', 'TimedOut', 'Blocked', 'Invalid']);

/** An event and when it sorts: a run's start and end keep their order even when the engine stamps a very short run's start after its finish. */
type Keyed = AttemptEvent & { key: number };

function keyedEventsOf(rec: AttemptStatus): Keyed[] {
  const out: Keyed[] = [];
  let floor = -Infinity;
  let inRuns = false;
  const add = (at: string | undefined, type: AttemptEvent['type'], reason: string, message: string) => {
    if (!at) return;
    const t = Date.parse(at);
    const key = inRuns ? Math.max(t, floor) : t;
    if (inRuns) floor = key;
    out.push({ at, type, reason, attempt: rec.name, message, key });
  };
  add(rec.createdAt, 'Normal', 'Created', `attempt recorded${rec.source ? ` from ${rec.source}` : ''}`);
  // A run whose outcome is recorded (`ended`) while its harvest is under way ends as that outcome:
  // the record still reads Running (Harvesting) until the harvest is done, and its Finished
  // event must read as it will after, so that a run has one Finished event (`events -w` too).
  const now = rec.ended?.run === rec.run ? rec.ended : undefined;
  const runs = [
    ...rec.history,
    {
      run: rec.run,
      phase: now?.phase ?? rec.phase,
      reason: now ? now.reason : rec.reason,
      message: now ? now.message : rec.message,
      exitCode: rec.exitCode,
      startedAt: rec.startedAt,
      finishedAt: rec.finishedAt,
    },
  ];
  let prev: (typeof runs)[number] | undefined;
  inRuns = true;
  for (const r of runs) {
    const retry = prev && prev.phase === 'Failed' && r.run > prev.run;
    add(r.startedAt, 'Normal', retry ? 'Retried' : 'Started', `run ${r.run} started${retry ? ` (run ${prev?.run} ${prev?.reason ?? 'failed'})` : ''}`);
    if (r.finishedAt) {
      const bad = WARN_PHASES.has(r.phase);
      const detail = [r.reason, r.exitCode !== undefined ? `exit ${r.exitCode}` : undefined].filter(Boolean).join(', ');
      add(
        r.finishedAt,
        bad ? 'Warning' : 'Normal',
        bad ? 'Died' : 'Finished',
        `run ${r.run} ${r.phase}${detail ? ` (${detail})` : ''}${bad && r.message ? `: ${r.message}` : ''}`,
      );
    }
    prev = r;
  }
  inRuns = false;
  // spec.grade: each grade's verdict (a grade after the first of its run is a regrade), or why it could not give one
  for (const g of rec.grades ?? []) {
    const at = g.finishedAt;
    if (!at || g.state === 'grading') continue;
    const verdict = gradeOutcome(g);
    if (g.state !== 'graded') add(at, 'Warning', REASONS.gradeFailed, `run ${g.run} grade-${g.k} ${verdict}`);
    else if (g.k > 1) add(at, g.passed ? 'Normal' : 'Warning', 'Regraded', `run ${g.run} regraded by grade-${g.k}: ${verdict}`);
    else add(at, g.passed ? 'Normal' : 'Warning', 'Graded', `run ${g.run} graded by grade-${g.k}: ${verdict}`);
  }
  const att = rec.lastAttestation;
  if (att)
    add(
      att.at,
      att.ok ? 'Normal' : 'Warning',
      att.ok ? 'Attested' : 'Drifted',
      att.ok
        ? `run ${rec.run} attested (${att.depth})`
        : `run ${rec.run} failed attestation: ${att.checks
            .filter((c) => !c.ok)
            .map((c) => c.detail)
            .join('; ')}`,
    );
  add(rec.collectedAt, 'Normal', 'Removed', `run ${rec.run}'s resources removed; results stay`);
  add(rec.rerunRequested?.at, 'Normal', 'RerunRequested', `berth rerun asked for a new run after run ${rec.rerunRequested?.run}`);
  add(rec.deleted?.at, 'Normal', REASONS.deleted, 'berth delete removed its resources; not run again until its spec changes or berth rerun');
  if ((rec.phase === 'Blocked' || rec.phase === 'Invalid') && !rec.finishedAt) add(rec.updatedAt, 'Warning', rec.phase, rec.message ?? rec.reason ?? '');
  return out;
}

export function eventsOf(rec: AttemptStatus): AttemptEvent[] {
  return keyedEventsOf(rec).map(({ key: _key, ...e }) => e);
}

/** Every attempt's events, oldest first (ties by attempt name, then as recorded). */
export function allEvents(recs: Iterable<AttemptStatus>): AttemptEvent[] {
  const all = [...recs].flatMap(keyedEventsOf);
  return all
    .map((e, i) => ({ e, i }))
    .sort((a, b) => a.e.key - b.e.key || (a.e.attempt < b.e.attempt ? -1 : a.e.attempt > b.e.attempt ? 1 : a.i - b.i))
    .map(({ e: { key: _key, ...e } }) => e);
}

/** Image GC's removals (`<state>/<instance>/image-gc.json`) as events. */
export function imageRemovedEvents(removed: readonly RemovedImage[]): AttemptEvent[] {
  return removed.map((r) => ({
    at: r.at,
    type: 'Normal' as const,
    reason: EVENT_REASONS.imageRemoved,
    attempt: '',
    object: `image/${r.ref}`,
    message: `removed ${r.ref} (${r.id.slice(7, 19)}, ${r.how} by berth, ${showBytes(r.size)}): ${r.why}`,
  }));
}

/** Attempt events and image events, in time order (stable: the attempts' own order kept). */
export function withImageEvents(events: AttemptEvent[], images: AttemptEvent[]): AttemptEvent[] {
  if (!images.length) return events;
  const out: AttemptEvent[] = [];
  let i = 0;
  for (const e of events) {
    while (i < images.length && (images[i] as AttemptEvent).at < e.at) out.push(images[i++] as AttemptEvent);
    out.push(e);
  }
  return [...out, ...images.slice(i)];
}

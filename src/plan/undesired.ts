/**
 * What comes before anything else of an attempt (pure): a harvest that is due (the run ended,
 * its harvest not done), and the attempts with no valid spec: an invalid or duplicated one
 * recorded Invalid and left, one whose file cannot be read left, one with no spec stopped,
 * finished Deleted and removed; and one `berth delete` marked.
 */
import { COMPONENTS, FINISHED_PHASES, LABELS, REASONS, RUNNING_STATES } from '../constants';
import type { ObservedAttempt } from '../observe/types';
import { formatIssue } from '../spec/issue';
import type { AttemptStatus, SpecIssue } from '../status/types';
import type { PlanInput } from './input';
import { finishOp, hasAny, isMain, recordOp, removeOps, stopOp, stopSidecars } from './ops';
import type { AttemptAction, Operation } from './types';

/** How long an attempt whose harvest failed waits before berth tries the harvest again. */
export const HARVEST_RETRY_MS = 5_000;

/**
 * A run that ended (its outcome is recorded as `ended`) and whose harvest is not done: it failed,
 * or berth stopped during it. The harvest comes before anything else of the attempt (a retry, a
 * replacement, a removal): the next plan decides those on the final phase. A failed harvest is
 * tried again once HARVEST_RETRY_MS have passed.
 */
export function planHarvest(inp: PlanInput, base: { attempt: string; status?: AttemptStatus }, rec: AttemptStatus, obs: ObservedAttempt): AttemptAction {
  const ofRun = obs.containers.filter((c) => c.labels[LABELS.run] === String(rec.run));
  const main = obs.containers.find((c) => c.id === rec.containerId) ?? ofRun.find(isMain);
  const sidecars = ofRun
    .filter((c) => !isMain(c) && c.labels[LABELS.sidecar])
    .map((c) => ({
      alias: c.labels[LABELS.sidecar] as string,
      role: c.labels[LABELS.component] === COMPONENTS.proxy ? ('egress-proxy' as const) : ('sidecar' as const),
      id: c.id,
    }));
  if (rec.reason === REASONS.harvestFailed) {
    const again = Date.parse(rec.updatedAt) + HARVEST_RETRY_MS - inp.now;
    if (again > 0) return { ...base, kind: 'block', summary: `the harvest of run ${rec.run} failed: ${rec.message ?? ''}`, ops: [], requeueAfterMs: again };
  }
  const cause = rec.reason === REASONS.harvestFailed ? 'the harvest failed; trying again' : 'the run ended and its harvest was not done';
  return {
    ...base,
    kind: 'finish',
    summary: `${cause}: run ${rec.run} ended ${rec.ended?.phase ?? ''}`,
    requeueAfterMs: 0,
    ops: [
      ...stopSidecars(ofRun, 'the attempt finished'),
      {
        type: 'harvest',
        resource: `attempt:${rec.name}`,
        ...(main ? { id: main.id } : {}),
        ...(rec.resultsDir ? { resultsDir: rec.resultsDir } : {}),
        ...(sidecars.length ? { sidecars } : {}),
        cause,
      },
    ],
  };
}

function sameIssues(a: readonly SpecIssue[] | undefined, b: readonly SpecIssue[]): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b);
}

/** Whether a spec file (relative to the specs folder) lies in a file or folder that could not be read. */
function unreadable(inp: PlanInput, source: string): boolean {
  if (inp.unreadableFiles.has(source)) return true;
  for (const dir of inp.unreadableFolders) if (source.startsWith(`${dir}/`)) return true;
  return false;
}

export function planUndesired(inp: PlanInput, name: string, rec: AttemptStatus | undefined, obs: ObservedAttempt): AttemptAction | undefined {
  const base = { attempt: name, ...(rec ? { status: rec } : {}) };
  if (rec?.ended) return planHarvest(inp, base, rec, obs);
  if (inp.protectedNames.has(name)) {
    const errors = inp.invalid.get(name) ?? [];
    const first = errors[0];
    const msg = first ? `${formatIssue(first)}${errors.length > 1 ? ` (and ${errors.length - 1} more)` : ''}` : 'the spec is invalid';
    if (!rec || (rec.phase === 'Invalid' && !sameIssues(rec.specErrors, errors))) {
      const reason = errors.some((e) => e.code === 'duplicate-name') ? REASONS.duplicateName : REASONS.invalidSpec;
      return {
        ...base,
        kind: 'invalid',
        summary: msg,
        ops: [
          recordOp(name, 'spec invalid', {
            phase: 'Invalid',
            reason,
            message: msg,
            specErrors: [...errors],
            run: rec?.run ?? 0,
            specHash: rec?.specHash ?? '',
          }),
        ],
      };
    }
    return { ...base, kind: 'leave', summary: `spec invalid, left as it is: ${msg}`, ops: [] };
  }
  const sources = new Set([...obs.containers, ...obs.networks, ...obs.volumes].map((r) => r.labels[LABELS.source] ?? ''));
  if ((rec?.source && unreadable(inp, rec.source)) || [...sources].some((s) => unreadable(inp, s))) {
    return { ...base, kind: 'leave', summary: 'its spec file cannot be read; left as it is', ops: [] };
  }
  if (inp.specs.length === 0 && inp.protectedNames.size === 0 && !inp.allowEmpty) {
    return { ...base, kind: 'leave', summary: 'the specs source yields no attempts; left as it is (--allow-empty lets reconcile remove it)', ops: [] };
  }
  if (!hasAny(obs))
    return rec ? { ...base, kind: 'forget', summary: 'no spec', ops: [{ type: 'forget', resource: `attempt:${name}`, cause: 'no spec' }] } : undefined;
  const ops: Operation[] = [];
  const main = obs.containers.find(isMain);
  if (main && (!rec || !FINISHED_PHASES.has(rec.phase))) {
    if (RUNNING_STATES.has(main.state)) ops.push(stopOp(main, 'no spec'));
    ops.push(
      finishOp(`container:${main.name}`, 'no spec', {
        id: main.id,
        resultsDir: rec?.resultsDir,
        outcome: { phase: 'Failed', reason: REASONS.deleted, message: 'the spec was deleted' },
      }),
    );
  }
  ops.push(...removeOps(obs, 'no spec'));
  ops.push({ type: 'forget', resource: `attempt:${name}`, cause: 'no spec' });
  return { ...base, kind: 'collect', summary: 'no spec', ops };
}

/**
 * An attempt `berth delete` marked (for its current spec hash): its run is stopped and ends
 * Failed (Deleted), every resource goes, the record and the results stay; nothing more is planned
 * for it until its spec changes or `berth rerun` clears the mark.
 */
export function planDeleted(base: { attempt: string; status?: AttemptStatus }, rec: AttemptStatus, obs: ObservedAttempt): AttemptAction {
  const name = rec.name;
  const cause = 'deleted (berth delete)';
  const ops: Operation[] = [];
  const main = obs.containers.find(isMain);
  const finished = FINISHED_PHASES.has(rec.phase);
  if (main && !finished) {
    if (RUNNING_STATES.has(main.state)) ops.push(stopOp(main, cause));
    ops.push(
      finishOp(`container:${main.name}`, cause, {
        id: main.id,
        resultsDir: rec.resultsDir,
        outcome: { phase: 'Failed', reason: REASONS.deleted, message: 'berth delete stopped the run' },
      }),
    );
  } else if (!finished) {
    ops.push(recordOp(name, cause, { phase: 'Failed', reason: REASONS.deleted, message: 'berth delete removed it before it ran' }));
  }
  ops.push(...removeOps(obs, cause));
  return { ...base, kind: ops.length ? 'collect' : 'leave', summary: `${cause}; not run again until its spec changes or berth rerun`, ops };
}

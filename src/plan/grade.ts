/**
 * spec.grade, planned (pure): after a run has finished (its harvest done, so its exported
 * workspace is written), a grader the attempt cannot touch judges it. Grade `k` of run `n` is
 * begun (`begin-grade`: recorded `grading` before anything is made), its container created fresh,
 * filled with one archive and started; once it has ended, `finish-grade` reads its verdict and the
 * container is removed. A grade of another grade hash (the grader changed) or a `berth regrade`
 * begins grade `k + 1`: earlier grades stay. A berth killed at any point resumes the grade the
 * record names (its container adopted, or made again into the same `grade-<k>`), never a second.
 */
import { buildTag, COMPONENTS, LABELS, REASONS, RUNNING_STATES } from '../constants';
export { gradeApplies, gradePending, latestGrade } from '../sets/grade-state';
import { desiredGrader, type DesiredGrader } from '../desired/grade';
import type { ContainerSummary } from '../engine/types';
import { gradeHash } from '../spec/grade-hash';
import type { LoadedSpec } from '../spec/types';
import { gradeApplies, regradeAsked, runGrades } from '../sets/grade-state';
import type { AttemptStatus, GradeRecord } from '../status/types';
import type { PlanInput } from './input';
import type { SlotWait } from './new-run';
import { recordOp, removeContainerOp, removeOps, stopOp } from './ops';
import { runResultsDir } from './results';
import type { AttemptAction, GradeEnd, OpOutcome, Operation } from './types';
import { askPull, gateImage, runKey, type PullRequest } from './pull-gate';
import { askBuild, gateBuild, type BuildRequest } from './build-gate';
import { buildBases } from './build-from';
import { isImageId, resolveImage } from '../observe/images';

export function isGrader(c: ContainerSummary): boolean {
  return c.labels[LABELS.component] === COMPONENTS.grader;
}

/** What the planner needs of a finished run to plan its grade. */
export interface GradeView {
  inp: PlanInput;
  loaded: LoadedSpec;
  rec: AttemptStatus;
  base: { attempt: string; status?: AttemptStatus };
  /** The grader containers found for the current run (component grader). */
  graders: ContainerSummary[];
  /** Operations that come first whatever follows. */
  pre: Operation[];
  /** A set's score setting, when the attempt is a child of a set with one. */
  score?: { file: string; pass: number };
  /** The plan's pull requests (pull-gate.ts): a grader's image berth may pull is asked for here. */
  pulls?: Map<string, PullRequest>;
  /**
   * A grader holds a running slot, as a run does (and a room of its set): takes one for a grader
   * about to be made (undefined), or says what the grade waits for (new-run.ts takeSlot).
   */
  takeSlot: () => SlotWait | undefined;
  /** The plan's build requests (build-gate.ts): a grader's image built from a Dockerfile is asked for here. */
  builds?: Map<string, BuildRequest>;
}

/**
 * Whether a new grade waits for its grader's image (grade.image, not on the engine, a policy that
 * pulls): pulled first, or its failed pull's back-off waited out (pull-gate.ts). Once the image's
 * pulls are given up (--pull-retries, a finite run) the grade goes on, and its grader's create
 * ends it GradeFailed as any grader that cannot be made.
 */
function gradeImageWait(v: GradeView, k: number): AttemptAction | undefined {
  const { inp, loaded, rec, base, pre } = v;
  const image = loaded.spec.grade?.image;
  const index = inp.snapshot.images;
  // a grader's image built from a Dockerfile is never pulled: gradeBuildWait
  if (!image || !index || !inp.pulls || isImageId(image) || loaded.spec.grade?.build) return undefined;
  const policy = loaded.spec.pullPolicies.grade;
  const held = resolveImage(index, image) !== undefined;
  const key = runKey(`${rec.name}/grade`, k);
  const verdict = gateImage({ ref: image, shown: image, policy, held, of: 'the grader' }, inp.pulls.states.get(image), key, inp.now, inp.pulls);
  if (verdict.type === 'ready' || (verdict.type === 'backoff' && verdict.settled)) return undefined;
  if (verdict.type === 'pull' && v.pulls) askPull(v.pulls, image, rec.name, key);
  return {
    ...base,
    kind: 'wait',
    summary: `grade ${k} of run ${rec.run} waits: ${verdict.message}`,
    ops: pre,
    ...(verdict.type === 'backoff' ? { requeueAfterMs: Math.max(0, verdict.retryAt - inp.now) } : {}),
  };
}

/**
 * Whether a new grade waits for its grader's image built from a Dockerfile (grade.build; the
 * build gate, build-gate.ts): built first (asked for here), or, when its build failed, the grade
 * begun and ended GradeFailed with the build's words (graded again when grade.build's context
 * changes: a new grade hash).
 */
function gradeBuildWait(v: GradeView, k: number, why: string): AttemptAction | undefined {
  const { inp, loaded, rec, base, pre } = v;
  const b = loaded.spec.grade?.build;
  const index = inp.snapshot.images;
  if (!b || !index) return undefined;
  const rerun = rec.regradeRequested?.at ?? rec.rerunRequested?.at;
  const verdict = gateBuild(b, resolveImage(index, buildTag(b.hash)), inp.builds, rerun ? Date.parse(rerun) : undefined, 'grader');
  if (verdict.type === 'ready') return undefined;
  if (verdict.type === 'build') {
    // its FROM images first, pulled by berth (plan/build-from.ts); given up, or not to be pulled: the grade ends GradeFailed saying so
    const bases = buildBases(b, loaded.spec.pullPolicies.grade, "the grader's build", (ref) => resolveImage(index, ref) !== undefined, inp.pulls !== undefined);
    const key = runKey(`${rec.name}/grade`, k);
    const waits: string[] = [];
    let retryAt: number | undefined;
    const failed: string[] = bases.missing.map((m) => m.message);
    for (const g of bases.gated) {
      const pv = gateImage(g, inp.pulls?.states.get(g.ref), key, inp.now, inp.pulls);
      if (pv.type === 'pull') {
        if (v.pulls) askPull(v.pulls, g.ref, rec.name, key, g.platform);
        waits.push(pv.message);
      } else if (pv.type === 'backoff' && pv.settled) failed.push(pv.message);
      else if (pv.type === 'backoff') {
        waits.push(pv.message);
        retryAt = Math.min(retryAt ?? pv.retryAt, pv.retryAt);
      }
    }
    if (failed.length && !waits.length) return failedGradeBuild(v, k, failed.join('; '), why);
    if (waits.length)
      return {
        ...base,
        kind: 'wait',
        summary: `grade ${k} of run ${rec.run} waits: ${waits.join('; ')}`,
        ops: pre,
        ...(retryAt !== undefined ? { requeueAfterMs: Math.max(0, retryAt - inp.now) } : {}),
      };
    const r = loaded.spec.resources;
    if (v.builds)
      askBuild(v.builds, b, rec.name, { diskBytes: r.diskBytes ?? inp.policy.defaultDiskBytes ?? null, memoryBytes: r.memoryBytes, cpus: r.cpus }, undefined);
    return { ...base, kind: 'wait', summary: `grade ${k} of run ${rec.run} waits: ${verdict.message}`, ops: pre };
  }
  return failedGradeBuild(v, k, verdict.message, why);
}

/** A grade whose grader's image cannot be built: begun and ended GradeFailed with `message`. */
function failedGradeBuild(v: GradeView, k: number, message: string, why: string): AttemptAction {
  const { rec, base, pre } = v;
  const verdict = { message };
  const d = grader(v, k);
  return {
    ...base,
    kind: 'grade',
    summary: `grade ${k} of run ${rec.run}: ${verdict.message}`,
    ops: [
      ...pre,
      { type: 'begin-grade', resource: `attempt:${d.attempt}`, grader: d, fresh: true, cause: why },
      finishGradeOp(rec.name, d, verdict.message, { forced: { state: 'failed', reason: REASONS.gradeFailed, message: verdict.message } }),
    ],
    requeueAfterMs: GRADED_LOOK_AGAIN_MS,
  };
}

function grader(v: GradeView, k: number): DesiredGrader {
  const { inp, loaded, rec } = v;
  const g = loaded.spec.grade as NonNullable<LoadedSpec['spec']['grade']>;
  const runResults = rec.resultsDir ?? runResultsDir(inp.resultsRoot, loaded.spec.results, rec.run);
  return desiredGrader(inp.instance, loaded, g, gradeHash(g), rec.run, k, runResults, g.image ?? rec.image?.id ?? loaded.spec.image);
}

/** Grade `d.k` begun (or resumed, not `fresh`), its grader made, filled and started. */
export function gradeOps(d: DesiredGrader, fresh: boolean, cause: string): Operation[] {
  const resource = `container:${d.container.name}`;
  return [
    { type: 'begin-grade', resource: `attempt:${d.attempt}`, grader: d, fresh, cause },
    { type: 'create-grader', resource, grader: d, cause: `grade ${d.k} of run ${d.run}` },
    { type: 'copy-in-grader', resource, grader: d, cause: 'the fixture, the exported changes (less protect), the grade fixture' },
    { type: 'start-grader', resource, grader: d, cause: 'created and filled' },
  ];
}

export function finishGradeOp(
  attempt: string,
  g: Pick<GradeRecord, 'run' | 'k'>,
  cause: string,
  f: { id?: string; forced?: GradeEnd; score?: { file: string; pass: number } },
): Operation {
  return {
    type: 'finish-grade',
    resource: `attempt:${attempt}`,
    run: g.run,
    k: g.k,
    ...(f.id ? { id: f.id } : {}),
    ...(f.forced ? { forced: f.forced } : {}),
    ...(f.score ? { score: f.score } : {}),
    cause,
  };
}

/**
 * Operations that make a grader (`start`, after `before`), when a slot is free; else the grade
 * waits for one (`before` still carried out: what ends an earlier grade, leftovers removed), and
 * is looked at again when a slot frees (waitsForSlot). Nothing is recorded while it waits: the
 * run's record keeps its phase, its grade to come (gradePending) keeps it unsettled.
 */
function withGrader(v: GradeView, summary: string, before: Operation[], start: Operation[]): AttemptAction {
  const full = v.takeSlot();
  if (!full) return { ...v.base, kind: 'grade', summary, ops: [...v.pre, ...before, ...start] };
  return { ...v.base, kind: 'wait', waitsForSlot: true, summary: `${summary}; the grader waits: ${full.cause}`, ops: [...v.pre, ...before] };
}

/**
 * After a grade ends, the attempt is looked at again at once: what follows a finished run (its
 * TTL, a retry) is planned then, and a finite run (`reconcile --once --wait`) does not end before it.
 */
const GRADED_LOOK_AGAIN_MS = 0;

/**
 * The grade of a finished run: begin, resume, finish or end it, or remove graders no grade needs.
 * Undefined when grades need nothing (the planner goes on with the finished run: TTL, nothing).
 */
export function planGrade(v: GradeView): AttemptAction | undefined {
  const { inp, loaded, rec, base, graders, pre, score } = v;
  const name = rec.name;
  const g = loaded.spec.grade;
  const mine = runGrades(rec);
  const last = mine.at(-1);
  const lastK = mine.reduce((m, x) => Math.max(m, x.k), 0);
  const act = (kind: AttemptAction['kind'], summary: string, ops: Operation[], requeueAfterMs?: number): AttemptAction => ({
    ...base,
    kind,
    summary,
    ops: [...pre, ...ops],
    ...(requeueAfterMs !== undefined ? { requeueAfterMs: Math.max(0, requeueAfterMs) } : {}),
  });
  const applies = gradeApplies(loaded, rec);
  const hash = g ? gradeHash(g) : undefined;
  const asked = regradeAsked(rec, lastK);

  if (last?.state === 'grading') {
    const own = graders.find((c) => c.labels[LABELS.grade] === String(last.k));
    const stray = removeOps({ containers: graders.filter((c) => c !== own), networks: [], volumes: [] }, 'not the grade under way');
    if (!g || !applies || last.gradeHash !== hash || asked) {
      // The grade under way judges with a grader the spec no longer asks for: ended, then (if one applies) the next begins.
      const why = !g ? 'spec.grade was removed while the grade was under way' : 'spec.grade changed (or a regrade was asked for) while the grade was under way';
      const end: Operation[] = [
        ...(own && RUNNING_STATES.has(own.state) ? [stopOp(own, why, 5)] : []),
        finishGradeOp(name, last, why, { ...(own ? { id: own.id } : {}), forced: { state: 'failed', reason: REASONS.gradeFailed, message: why } }),
        ...(own ? [removeContainerOp(own, 'its grade ended')] : []),
      ];
      if (!g || !applies) return act('grade', why, [...stray, ...end]);
      return withGrader(v, why, [...stray, ...end], gradeOps(grader(v, lastK + 1), true, `grade ${lastK + 1}: ${why}`));
    }
    const d = grader(v, last.k);
    if (!own) return withGrader(v, `grade ${last.k} of run ${rec.run} was under way and its grader is gone: made again`, stray, gradeOps(d, false, 'resumed'));
    if (own.state === 'created') {
      // Never started (or its start is not known to have been asked): nothing ran; made again from scratch.
      return withGrader(
        v,
        `grade ${last.k}: its grader was created and never started; made again`,
        [...stray, removeContainerOp(own, 'created but never started: the grade was interrupted')],
        gradeOps(d, false, 'resumed'),
      );
    }
    const deadline = last.deadlineAt ? Date.parse(last.deadlineAt) : undefined;
    if (RUNNING_STATES.has(own.state)) {
      if (deadline !== undefined && deadline <= inp.now) {
        const why = `the grader ran past grade.deadlineSeconds ${g.deadlineSeconds ?? ''}`.trim();
        return act(
          'grade',
          why,
          [
            ...stray,
            stopOp(own, why),
            finishGradeOp(name, last, why, { id: own.id, forced: { state: 'timedOut', reason: REASONS.gradeTimedOut, message: why } }),
            removeContainerOp(own, 'its grade ended'),
          ],
          GRADED_LOOK_AGAIN_MS,
        );
      }
      if (!last.startedAt || last.containerId !== own.id) {
        // started, but its start not recorded (berth stopped in between): recorded now
        return act('grade', `grade ${last.k}: its grader runs; its start is recorded`, [
          ...stray,
          { type: 'start-grader', resource: `container:${own.name}`, grader: d, id: own.id, cause: 'found running' },
        ]);
      }
      const requeue = deadline !== undefined ? deadline - inp.now : undefined;
      return stray.length ? act('collect', `grade ${last.k} under way`, stray, requeue) : act('leave', `grade ${last.k} under way`, [], requeue);
    }
    if (own.state === 'exited' || own.state === 'dead') {
      return act(
        'grade',
        `grade ${last.k}: the grader ${own.state}`,
        [...stray, finishGradeOp(name, last, `grader ${own.state}`, { id: own.id, ...(score ? { score } : {}) }), removeContainerOp(own, 'its grade ended')],
        GRADED_LOOK_AGAIN_MS,
      );
    }
    return act(stray.length ? 'collect' : 'leave', `grade ${last.k}: grader ${own.state}`, stray);
  }

  const leftovers = removeOps({ containers: graders, networks: [], volumes: [] }, 'no grade under way');
  if (g && applies && (!last || last.gradeHash !== hash || asked)) {
    const why = !last ? 'the run finished' : last.gradeHash !== hash ? 'spec.grade changed: graded again' : 'a regrade was asked for (berth regrade)';
    const waits = gradeBuildWait(v, lastK + 1, why) ?? gradeImageWait(v, lastK + 1);
    if (waits) return leftovers.length ? { ...waits, ops: [...waits.ops, ...leftovers] } : waits;
    const d = grader(v, lastK + 1);
    return withGrader(v, `grade ${d.k} of run ${rec.run}: ${why}`, leftovers, gradeOps(d, true, why));
  }
  if (rec.regradeRequested && (!g || !applies || rec.regradeRequested.run !== rec.run)) {
    // a regrade nothing can honour (no grade, or not one that judges this run): the mark goes
    return act('collect', 'regrade asked for, but spec.grade does not judge this run', [
      ...leftovers,
      recordOp(name, 'regrade not applicable', { phase: rec.phase, regradeRequested: undefined }),
    ]);
  }
  return leftovers.length ? act('collect', 'grader left over', leftovers) : undefined;
}

/**
 * What follows a grade operation's outcome other than `done` (plan/follow-up.ts hands these
 * here): a grader that cannot be made, filled or started ends the grade GradeFailed (the
 * container made, if any, removed); an engine that did not answer fails the action (the next
 * pass resumes the grade the record names).
 */
export function gradeFollowUp(
  attempt: string,
  op: Extract<Operation, { type: 'create-grader' | 'copy-in-grader' | 'start-grader' }>,
  out: Exclude<OpOutcome, { type: 'done' }>,
  rest: Operation[],
): { ok: boolean; error?: string; ops: Operation[] } {
  const d = op.grader;
  if (out.type === 'conflict') {
    if (out.owner.owned && out.owner.attempt === attempt && op.type === 'create-grader') {
      return { ok: true, ops: [removeContainerOp(out, "an earlier try's grader holds the name"), op, ...rest] };
    }
  }
  if (out.type === 'failed' && out.status === undefined) return { ok: false, error: `${op.type} ${op.resource}: ${out.message}`, ops: [] };
  const message = `the grader could not be ${op.type === 'create-grader' ? 'created' : op.type === 'copy-in-grader' ? 'filled' : 'started'}: ${'message' in out ? out.message : out.type}`;
  const made = 'containerId' in out && out.containerId ? out.containerId : op.type === 'start-grader' ? op.id : undefined;
  return {
    ok: true,
    ops: [
      finishGradeOp(attempt, d, message, { ...(made ? { id: made } : {}), forced: { state: 'failed', reason: REASONS.gradeFailed, message } }),
      ...(made ? [removeContainerOp({ name: d.container.name, id: made }, 'its grade failed')] : []),
    ],
  };
}

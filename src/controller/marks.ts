/**
 * The marks `rerun`, `delete` and `regrade` put on status records (what the pure planner
 * honours: `rerunRequested`, `deleted`, `regradeRequested`), decided the same way whoever writes
 * them: the command itself holding the instance's locks (cli/commands/mark-and-pass.ts), or a
 * running controller carrying out the command's request (controller.ts `carryOut`).
 */
import { FINISHED_PHASES, REASONS } from '../constants';
import { gradeApplies, runGrades } from '../sets/grade-state';
import type { LoadedSpec } from '../spec/types';
import type { AttemptStatus } from '../status/types';
import type { RequestCommand } from '../status/requests';

/** What a mark is decided from: the attempt's name, its record, its spec (if it loaded) and whether its spec is invalid (a name declared that did not load). */
export interface MarkInput {
  name: string;
  rec: AttemptStatus | undefined;
  spec: LoadedSpec | undefined;
  invalid: boolean;
  instance: string;
  /** ISO time of the command. */
  at: string;
  /** `release`: the exit code asked for (default 0). */
  exitCode?: number;
}

/** The record to write, `undefined` to write none (the pass alone does it), or why the attempt is refused. */
export type Mark = (i: MarkInput) => AttemptStatus | undefined | { refused: string };

const rerun: Mark = ({ rec, spec, at }) => {
  if (!spec) return { refused: 'it has no valid spec: there is nothing to run' };
  // a failed build is built again on rerun (docs/CONTRACT.md "Images built from a Dockerfile")
  const buildFailed = rec?.phase === 'Blocked' && rec.reason === REASONS.buildFailed;
  // any other Blocked run never ran: no run number for it; reconcile tries it again by itself
  if (rec?.phase === 'Blocked' && !rec.deleted && !buildFailed)
    return { refused: `it is Blocked (${rec.reason ?? 'not started'}): run ${rec.run} never started, and reconcile tries it again by itself` };
  if (!rec || !(FINISHED_PHASES.has(rec.phase) || rec.deleted || buildFailed))
    return { refused: `it is ${rec?.phase ?? 'Pending'}, not finished: only a finished attempt (or a failed build) is re-run` };
  if (rec.specHash !== spec.hash) return { refused: 'its spec changed since its last run: reconcile replaces it with a new run anyway' };
  const { deleted: _deleted, ...kept } = rec;
  return { ...kept, rerunRequested: { at, run: rec.run } };
};

const del: Mark = ({ name, rec, spec, invalid, instance, at }) => {
  if (!spec) {
    // No spec: reconcile removes it anyway, unless its spec is invalid (then it is protected).
    return invalid ? { refused: 'its spec is invalid: fix it or remove its file, which removes the attempt' } : undefined;
  }
  const base = rec ?? {
    name,
    instance,
    phase: 'Pending' as const,
    specHash: spec.hash,
    source: spec.relFile,
    run: 0,
    retriesUsed: 0,
    createdAt: at,
    history: [],
    updatedAt: at,
  };
  const { rerunRequested: _r, ...kept } = base;
  return { ...kept, deleted: { at, specHash: spec.hash } };
};

const regrade: Mark = ({ rec, spec, at }) => {
  if (!spec) return { refused: 'it has no valid spec: there is no grader to run' };
  if (!spec.spec.grade) return { refused: 'its spec has no grade' };
  if (!rec || !FINISHED_PHASES.has(rec.phase) || rec.specHash !== spec.hash)
    return { refused: `it is ${rec?.phase ?? 'Pending'}, not a finished run of its spec` };
  if (!gradeApplies(spec, rec)) return { refused: `spec.grade does not judge its run (${rec.phase}${rec.reason ? `, ${rec.reason}` : ''})` };
  const after = runGrades(rec).reduce((m, g) => Math.max(m, g.k), 0);
  return { ...rec, regradeRequested: { at, run: rec.run, after } };
};

const release: Mark = ({ name, rec, spec, at, exitCode }) => {
  if (!spec) return { refused: 'it has no valid spec' };
  if (!spec.spec.sandbox) return { refused: 'it is no sandbox (spec.sandbox): its own command ends its run' };
  if (!rec || rec.phase !== 'Running' || rec.ended || rec.specHash !== spec.hash)
    return {
      refused: `attempt ${name} is ${rec?.ended ? `ending (${rec.ended.phase})` : (rec?.phase ?? 'Pending')}, not Running: only a running sandbox is released`,
    };
  const asked = rec.releaseRequested?.run === rec.run ? rec.releaseRequested : undefined;
  // the same release again (a client that asks twice): carried out once
  if (asked && asked.exitCode === (exitCode ?? 0)) return undefined;
  if (asked) return { refused: `its run ${rec.run} is being released already, with exit code ${asked.exitCode}` };
  return { ...rec, releaseRequested: { at, run: rec.run, exitCode: exitCode ?? 0 } };
};

export const MARKS: Readonly<Record<RequestCommand, Mark>> = { rerun, delete: del, regrade, release };

/** `rerun`: a run recorded Running may have ended while nothing reconciled the instance; the command records it first. */
export function needsCatchUp(command: RequestCommand, rec: AttemptStatus): boolean {
  return command === 'rerun' && rec.phase === 'Running' && !rec.deleted;
}

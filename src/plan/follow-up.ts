/**
 * What an operation's outcome means. The executor reports what it met (plan/types.ts
 * `OpOutcome`: facts, never a decision); this pure function says what follows: the operations
 * that replace the rest of the action, run at once, and whether the action failed (the controller
 * then backs off and tries again). Done at once, in the same pass, so one pass still leaves the
 * attempt where the contract says (Blocked, Failed) rather than half way.
 */
import { DEFAULTS, REASONS } from '../constants';
import type { DesiredAttempt } from '../desired/types';
import { gradeFollowUp } from './grade';
import { capsOp, finishOp, isSidecarOp, recordOp, removeContainerOp, stopOp } from './ops';
import type { AttemptAction, OpOutcome, Operation, RunEnd } from './types';

export interface FollowUp {
  /** false: the action failed; `error` says which operation and why. */
  ok: boolean;
  error?: string;
  /** Run next, in place of the action's remaining operations. */
  ops: Operation[];
}

type NotDone = Exclude<OpOutcome, { type: 'done' }>;

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Operations that make a run: one that fails leaves the attempt Pending/CreateFailed. Not
 * `attest-start`: its container is started, and the next pass's planner takes it up as found
 * (adopted, or ended when the engine restarted under it).
 */
const PROVISIONING: ReadonlySet<Operation['type']> = new Set([
  'create-volume',
  'create-network',
  'begin-run',
  'create-container',
  'copy-in',
  'record-copied',
  'start',
]);

function provisioning(op: Operation): boolean {
  return PROVISIONING.has(op.type) || (isSidecarOp(op) && !op.restart);
}

/**
 * Blocked with `reason` (a secret missing, a link in a path): waits BLOCKED_RETRY_MS. A container
 * the action already made (a copy into it met it: the main container, or a sidecar) is removed
 * first: a created container would otherwise have the next pass provision again at once.
 */
function blocked(a: AttemptAction, op: Operation, cause: string, reason: string, message: string, containerId: string | undefined): Operation[] {
  const made = (op.type === 'copy-in' || op.type === 'copy-in-sidecar') && containerId !== undefined;
  return [
    ...(made ? [{ type: 'remove-container' as const, resource: op.resource, id: containerId, cause: `${cause}: the run cannot be filled` }] : []),
    recordOp(a.attempt, cause, { phase: 'Blocked', reason, message }),
  ];
}

/** What holds a name, as the status record says it (the ownership rule's verdict in words). */
function heldBy(a: AttemptAction, c: Extract<NotDone, { type: 'conflict' }>): string {
  const o = c.owner;
  if (c.kind === 'container') {
    const held = `container name ${c.name} is held by container ${c.id.slice(0, 12)}`;
    return o.owned ? `${held} of attempt ${o.attempt}; it is left alone` : `${held} that berth did not create (${o.why}); it is left alone`;
  }
  return o.owned
    ? `${c.kind} name needed by attempt ${a.attempt} is held by a ${c.kind} of attempt ${o.attempt}; it is left alone`
    : `${c.kind} name needed by attempt ${a.attempt} is held by a ${c.kind} berth does not own (${o.why}); it is left alone`;
}

/**
 * A sidecar that cannot serve the running attempt (or never came up before the main container):
 * the main container, if any, is stopped and the run ends Failed, ProxyFailed or SidecarFailed.
 */
function sidecarEnds(a: AttemptAction, d: DesiredAttempt, index: number, message: string, restart: boolean, id?: string): Operation[] {
  const sc = d.sidecars[index];
  const proxy = sc?.role === 'egress-proxy';
  const outcome: RunEnd = { phase: 'Failed', reason: proxy ? REASONS.proxyFailed : REASONS.sidecarFailed, message };
  const main = restart ? a.status?.containerId : undefined;
  return [
    ...(main ? [stopOp({ name: d.container.name, id: main }, message)] : []),
    finishOp(`attempt:${a.attempt}`, message, {
      id: main,
      resultsDir: d.resultsDir,
      outcome,
      sidecars: sc && id ? [{ alias: sc.alias, role: sc.role, id }] : undefined,
      caps: capsOp(d.loaded.spec.harvest),
    }),
  ];
}

function sidecarLabel(d: DesiredAttempt, index: number): string {
  const sc = d.sidecars[index];
  return sc?.role === 'egress-proxy' ? 'egress proxy' : `sidecar ${sc?.alias ?? index}`;
}

/** The container name of the sidecar `alias` of the operation's desired state (its alias when there is none). */
function sidecarName(op: Operation, alias: string): string {
  const d = 'desired' in op ? op.desired : undefined;
  return d?.sidecars.find((sc) => sc.alias === alias)?.name ?? alias;
}

function conflict(a: AttemptAction, op: Operation, c: Extract<NotDone, { type: 'conflict' }>, rest: Operation[]): FollowUp {
  const ours = c.owner.owned && c.owner.attempt === a.attempt;
  if (ours) {
    if (op.type === 'create-container') {
      if (c.unattested !== undefined) {
        // This attempt's, from an earlier try, but not as the spec wants it: removed; made again next time.
        const message = `existing container ${c.name} did not attest and was removed: ${c.unattested}`;
        return {
          ok: false,
          error: `${op.type} ${op.resource}: ${message}`,
          ops: [
            removeContainerOp(c, `an earlier try's container did not attest: ${c.unattested}`),
            recordOp(a.attempt, 'create failed', { phase: 'Pending', reason: REASONS.createFailed, message }),
          ],
        };
      }
      return { ok: true, ops: [{ ...op, use: c.id, cause: "the attempt's own container from an earlier try holds the name" }, ...rest] };
    }
    if (op.type === 'create-sidecar') {
      // An earlier try's sidecar: made again, so it starts afresh.
      return { ok: true, ops: [removeContainerOp(c, "an earlier try's sidecar holds the name"), op, ...rest] };
    }
    return { ok: true, ops: rest };
  }
  const held = heldBy(a, c);
  if (op.type === 'create-sidecar' && op.restart) {
    // The attempt runs: its sidecar cannot come back, so it ends as when a sidecar does not come up.
    return { ok: true, ops: sidecarEnds(a, op.desired, op.index, `${sidecarLabel(op.desired, op.index)} cannot be started again: ${held}`, true) };
  }
  return { ok: true, ops: [recordOp(a.attempt, 'name held', { phase: 'Blocked', reason: REASONS.nameConflict, message: held })] };
}

/** A failure of `op`: a provisioning step leaves the attempt Pending/CreateFailed (a refused start recorded as such). */
function failed(a: AttemptAction, op: Operation, message: string, status: number | undefined, containerId: string | undefined, now: number): FollowUp {
  const error = `${op.type} ${op.resource}: ${message}`;
  if (!provisioning(op)) return { ok: false, error, ops: [] };
  // A start the engine refused (it answered with an error status; not one that never reached it
  // or went unanswered) is recorded for the planner (startFailure; planner.ts).
  const refused =
    op.type === 'start' && status !== undefined
      ? { startFailure: { run: op.desired.run, ...(containerId ? { containerId } : {}), at: iso(now), status, message } }
      : {};
  return { ok: false, error, ops: [recordOp(a.attempt, 'create failed', { phase: 'Pending', reason: REASONS.createFailed, message, ...refused })] };
}

/** Follow-ups of follow-ups an action may take before an outcome counts as a failure (a name fought over). */
export const MAX_FOLLOW_UPS = 4;

/**
 * The operations that follow `op`'s outcome `out` in action `a`, in place of `rest` (the
 * action's operations after `op`), at time `now`; `round`: how many outcomes of this action
 * came before (0 for the first).
 */
export function followUp(a: AttemptAction, op: Operation, out: NotDone, rest: Operation[], now: number, round = 0): FollowUp {
  if (round >= MAX_FOLLOW_UPS) return failed(a, op, `${out.type} again after ${MAX_FOLLOW_UPS} follow-ups`, undefined, undefined, now);
  // spec.grade's grader: what cannot be made, filled or started ends the grade (plan/grade.ts)
  if (op.type === 'create-grader' || op.type === 'copy-in-grader' || op.type === 'start-grader') return gradeFollowUp(a.attempt, op, out, rest);
  switch (out.type) {
    case 'conflict':
      return conflict(a, op, out, rest);
    case 'secret-missing':
      return { ok: true, ops: blocked(a, op, 'secret missing', REASONS.secretMissing, out.message, out.containerId) };
    case 'refused':
      // refused, never weakened (a swarm with no node that enforces what the attempt needs)
      return { ok: true, ops: [recordOp(a.attempt, 'refused by the backend', { phase: 'Blocked', reason: out.reason, message: out.message })] };
    case 'unsafe-path':
      // A path berth would read or write for the attempt holds a link now: nothing is followed; it waits Blocked.
      if (op.type === 'begin-run' || op.type === 'create-container' || op.type === 'copy-in' || op.type === 'create-sidecar' || op.type === 'copy-in-sidecar') {
        return {
          ok: false,
          error: `${op.type} ${op.resource}: ${out.message}`,
          ops: blocked(a, op, 'unsafe path', REASONS.unsafePath, out.message, out.containerId),
        };
      }
      return failed(a, op, out.message, undefined, undefined, now);
    case 'not-ready':
      if (op.type !== 'ready-sidecar') return failed(a, op, out.message, undefined, undefined, now);
      // The main container never starts without its sidecars; a running attempt whose sidecar does not come back ends.
      return { ok: true, ops: sidecarEnds(a, op.desired, op.index, `${sidecarLabel(op.desired, op.index)} ${out.message}`, op.restart ?? false, out.id) };
    case 'attestation-failed':
      return {
        ok: true,
        ops: [
          { type: 'stop', resource: op.resource, id: out.id, graceSeconds: DEFAULTS.stopGraceSeconds, cause: out.cause },
          ...out.sidecars.map((sc) => stopOp({ name: sidecarName(op, sc.alias), id: sc.id }, out.cause, 5)),
          finishOp(op.resource, out.cause, {
            id: out.id,
            sidecars: out.sidecars,
            outcome: { phase: 'Failed', reason: REASONS.attestationFailed, message: out.cause },
            caps: capsOp('desired' in op ? op.desired.loaded.spec.harvest : undefined),
          }),
        ],
      };
    case 'not-found':
      return failed(a, op, out.message, 404, out.containerId, now);
    case 'failed':
      return failed(a, op, out.message, out.status, out.containerId, now);
  }
}

/**
 * Whether an action's end can have changed what the engine's lists show of its attempt (its
 * containers, networks, volumes and their states): the controller lists an attempt again after
 * such an end (controller/informer.ts `actionEnded`), since what the action changed may reach the
 * lists after its events. Operations that only read the engine or write berth's own records
 * change nothing listed; every other operation, and any action that did not go as planned (an
 * outcome other than `done`, a failure: its follow-ups, or a half-done call), counts as a change.
 */
import type { Operation } from './types';

/** Reads the engine (inspect, logs, archives out, exec) or writes only berth's records and files. */
const LIST_NEUTRAL: ReadonlySet<Operation['type']> = new Set(['begin-run', 'record-copied', 'attest-start', 'attest', 'finish', 'harvest', 'record', 'forget']);

export function changesLists(planned: readonly Operation[], ran: readonly Operation[], ok: boolean, outcome: string | undefined): boolean {
  if (!ok || outcome !== undefined) return true;
  return [...planned, ...ran].some((op) => !LIST_NEUTRAL.has(op.type));
}

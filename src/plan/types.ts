/**
 * The plan is data: per attempt, an action made of operations, each with a type, a resource
 * id (`container:<name>`) and the cause it exists for. The executor runs it without deciding.
 */
import type { Phase } from '../constants';
import type { NetworkCreateSpec, VolumeCreateSpec } from '../engine/types';
import type { DesiredAttempt } from '../desired/types';
import type { AttemptStatus } from '../status/types';

interface OpBase {
  resource: string;
  cause: string;
}

/** Final outcome forced by the planner (deadline, attestation, lost); else read from the engine. */
export interface Outcome {
  phase: Phase;
  reason: string;
  message?: string;
}

export type Operation =
  | (OpBase & { type: 'create-volume'; volume: VolumeCreateSpec })
  | (OpBase & { type: 'create-network'; network: NetworkCreateSpec })
  /** Results folder, intent record, create (409 → attest or block), fixture and secrets copied in. */
  | (OpBase & { type: 'create-container'; desired: DesiredAttempt })
  /** Create a sidecar (the egress proxy or a spec sidecar), attach its networks, copy its secrets, start it, wait until it is ready. */
  | (OpBase & { type: 'create-sidecar'; desired: DesiredAttempt; index: number; restart?: boolean })
  /** Start, record Running with the deadline, then attest by inspect. */
  | (OpBase & { type: 'start'; desired: DesiredAttempt })
  /** Inspect and attest; a container that fails is stopped and ends Failed/AttestationFailed. */
  | (OpBase & { type: 'attest'; id: string; desired: DesiredAttempt })
  /** Record a running container found on the engine as this attempt's current run. */
  | (OpBase & { type: 'adopt'; id: string; desired: DesiredAttempt })
  | (OpBase & { type: 'stop'; id: string; graceSeconds: number })
  /** Harvest logs, status and a manifest into the results folder and record the final phase. */
  /** `score`: a file in the run's results folder to read the score from (AttemptSet children with a score). */
  | (OpBase & { type: 'finish'; id?: string; resultsDir?: string; outcome?: Outcome; sidecars?: { alias: string; role: 'egress-proxy' | 'sidecar'; id: string }[]; score?: string })
  /**
   * The harvest of a run whose outcome is recorded (`ended`) but whose harvest is not done (it
   * failed, or berth stopped during it): logs, manifest and status, then the final phase.
   */
  | (OpBase & { type: 'harvest'; id?: string; resultsDir?: string; sidecars?: { alias: string; role: 'egress-proxy' | 'sidecar'; id: string }[] })
  | (OpBase & { type: 'remove-container'; id: string })
  | (OpBase & { type: 'remove-network'; id: string })
  | (OpBase & { type: 'remove-volume'; id: string })
  /** A status change with no engine call. */
  | (OpBase & { type: 'record'; patch: Partial<AttemptStatus> & { phase: Phase } })
  /** Drop the status record of an attempt that has no spec any more. */
  | (OpBase & { type: 'forget' });

export type OpType = Operation['type'];

export type ActionKind =
  | 'provision'
  | 'replace'
  | 'retry'
  | 'adopt'
  | 'attest'
  | 'restart'
  | 'finish'
  | 'stop'
  | 'collect'
  | 'expire'
  | 'wait'
  | 'block'
  | 'invalid'
  /** An AttemptSet child not admitted (failFast, maxFailed): recorded Failed with that reason. */
  | 'skip'
  | 'forget'
  | 'leave';

export interface AttemptAction {
  attempt: string;
  /** The AttemptSet the attempt is a child of. */
  set?: string;
  kind: ActionKind;
  /** One line on why, for `plan` and logs. */
  summary: string;
  ops: Operation[];
  /** The status record as the planner saw it. */
  status?: AttemptStatus;
  /** Desired state of the run the action works toward, when there is one. */
  desired?: DesiredAttempt;
  /** When to look again (deadline, TTL, retry back-off), ms from the plan's time. */
  requeueAfterMs?: number;
}

export interface Plan {
  at: number;
  actions: AttemptAction[];
  /** Attempts already as they should be: name → phase. */
  unchanged: Map<string, Phase>;
  /**
   * The specs source yielded no attempt while the instance has some: 'held' leaves them all as
   * they are; 'allowed' (`--allow-empty`) removes them as any deleted spec.
   */
  emptySource?: 'held' | 'allowed';
}

/**
 * The plan is data: per attempt, an action made of operations, each with a type, a resource
 * id (`container:<name>`) and the cause it exists for. The executor runs it without deciding.
 */
import type { SpecChange } from '../spec/spec-diff';
import type { Phase } from '../constants';
import type { NetworkCreateSpec, VolumeCreateSpec } from '../engine/types';
import type { DesiredAttempt } from '../desired/types';
import type { DesiredGrader } from '../desired/grade';
import type { Ownership } from '../ownership';
import type { HarvestCaps } from '../spec/types';
import type { PinKey } from '../status/pins';
import type { AttemptStatus, EngineBoot } from '../status/types';
import type { PullRequest } from './pull-gate';
import type { BuildRequest } from './build-gate';

interface OpBase {
  resource: string;
  cause: string;
}

/** An operation on the sidecar `index` of `desired`. */
type SidecarOp = OpBase & { desired: DesiredAttempt; index: number; restart?: boolean };

/**
 * How a new run begins, as the planner decides it from the record it saw: the retry budgets it
 * has used already (planner.ts `runCounters`; the executor writes them into the record the run
 * begins), and whether its results folder is already its own (`ownsFolder`: the record gave it to
 * this very run, an interrupted or refused provisioning), so found, not refused, when made again.
 */
export interface RunStart {
  counters: RunCounters;
  ownFolder: boolean;
}

export type RunCounters = Pick<AttemptStatus, 'retriesUsed' | 'infraRetriesUsed'>;

/** How a run ended: forced by the planner (deadline, attestation, lost), else read from the engine (exit-outcome.ts). */
export interface RunEnd {
  phase: Phase;
  reason: string;
  message?: string;
  /** The exit code this end stands for, recorded instead of the container's (a sandbox's release: plan/release.ts). */
  exitCode?: number;
}

export type Operation =
  | (OpBase & { type: 'create-volume'; volume: VolumeCreateSpec })
  | (OpBase & { type: 'create-network'; network: NetworkCreateSpec })
  /**
   * No engine call: the run's results folder made (exclusively, unless `ownFolder`), then the run
   * begun in the record with the planner's counters and its provisioning intent recorded,
   * Pending/Provisioning. Before any engine side effect of the run: a berth killed from here on
   * resumes this run, never starts a second.
   */
  | (OpBase & RunStart & { type: 'begin-run'; desired: DesiredAttempt })
  /**
   * The main container's create (its secrets read and its bind source checked first), its id
   * recorded. `use`: the id of this attempt's own container that holds the name (an earlier
   * try's, which attested): used instead of a create (plan/follow-up.ts decides it after a
   * `conflict`).
   */
  | (OpBase & { type: 'create-container'; desired: DesiredAttempt; use?: string; image?: ImageChoice })
  /**
   * One archive copied into the main container just made (one putArchive): the fixture (and the
   * working folder), or the secrets' files under /run/secrets. Read now, with no link followed.
   */
  | (OpBase & { type: 'copy-in'; desired: DesiredAttempt; archive: 'helper' | 'fixture' | 'secrets' })
  /**
   * No engine call: the copy recorded done (`intent.copied`), with the engine's boot as the plan
   * saw it (at or before the start: plan/exit-outcome.ts) and the warnings of secrets exposed in
   * the environment. From here on a start may be on its way: a berth killed after it only starts.
   */
  | (OpBase & { type: 'record-copied'; desired: DesiredAttempt; boot?: EngineBoot })
  /**
   * A sidecar (the egress proxy or a spec sidecar), one change to the engine per step (plan/ops.ts
   * `sidecarOps`): its create (its secrets read first, for those opted into the environment, and
   * so a missing one blocks before the engine holds anything), each further network connected,
   * its secrets' files copied in, its start, then `ready-sidecar`: waited for until ready (the
   * proxy's `listening` line; a sidecar staying up a moment), inspected and attested. `restart`:
   * made again while the attempt runs (a failure then ends the run, not its provisioning).
   */
  | (SidecarOp & { type: 'create-sidecar' })
  | (SidecarOp & { type: 'connect-sidecar'; network: string })
  | (SidecarOp & { type: 'copy-in-sidecar' })
  | (SidecarOp & { type: 'start-sidecar' })
  | (SidecarOp & { type: 'ready-sidecar' })
  /** The main container's start (its one change to the engine); a refusal is reported with the container it asked for. */
  | (OpBase & { type: 'start'; desired: DesiredAttempt })
  /**
   * The container just started, inspected and attested, and the run recorded Running with the
   * engine's start time, the absolute deadline and the attestation.
   */
  | (OpBase & { type: 'attest-start'; desired: DesiredAttempt })
  /** Inspect and attest, recording the attestation. */
  | (OpBase & { type: 'attest'; id: string; desired: DesiredAttempt })
  /**
   * Record a running container found on the engine as this attempt's current run (begun with
   * `counters` when new to the record), keeping what the record already holds of this very run
   * (`keep`, the planner's AdoptKeep); the rest is the desired state's, from the container's start.
   */
  | (OpBase & { type: 'adopt'; id: string; desired: DesiredAttempt; counters: RunCounters; keep: AdoptKeep })
  | (OpBase & { type: 'stop'; id: string; graceSeconds: number })
  /** Harvest logs, status and a manifest into the results folder and record the final phase. */
  /** `score`: a file in the run's results folder to read the score from (AttemptSet children with a score). */
  /** `caps`: what the results folder keeps (spec.harvest; DEFAULTS when the attempt has no spec any more). */
  | (OpBase & { type: 'finish'; id?: string; resultsDir?: string; outcome?: RunEnd; sidecars?: SidecarRef[]; score?: string; caps?: HarvestCaps })
  /**
   * The harvest of a run whose outcome is recorded (`ended`) but whose harvest is not done (it
   * failed, or berth stopped during it): logs, manifest and status, then the final phase.
   */
  | (OpBase & { type: 'harvest'; id?: string; resultsDir?: string; sidecars?: SidecarRef[]; caps?: HarvestCaps })
  | (OpBase & { type: 'remove-container'; id: string })
  | (OpBase & { type: 'remove-network'; id: string })
  | (OpBase & { type: 'remove-volume'; id: string })
  /** A status change with no engine call; with `counters`, it begins the action's desired run (when new to the record) with them. */
  | (OpBase & { type: 'record'; patch: Partial<AttemptStatus> & { phase: Phase }; counters?: RunCounters })
  /** Drop the status record of an attempt that has no spec any more. */
  | (OpBase & { type: 'forget' })
  /**
   * spec.grade (plan/grade.ts). No engine call: grade `k` of the run recorded `grading` with its
   * hash, and its folder `grade-<k>/results` made (exclusively when `fresh`; a resumed grade's is
   * emptied: what a grader killed with berth left is not read). From here on a berth killed
   * resumes this very grade.
   */
  | (OpBase & { type: 'begin-grade'; grader: DesiredGrader; fresh: boolean })
  /** The grader's create (a fresh container of the grade's image; never the attempt's), its id recorded on the grade. */
  | (OpBase & { type: 'create-grader'; grader: DesiredGrader })
  /** One archive into the grader: spec.fixture, the run's exported changes less `protect`, grade.fixture (pack/grade-archive.ts). */
  | (OpBase & { type: 'copy-in-grader'; grader: DesiredGrader })
  /** The grader's start (`id`: one found running, whose start is recorded only), then its start time and deadline recorded. */
  | (OpBase & { type: 'start-grader'; grader: DesiredGrader; id?: string })
  /**
   * The grade's end: exit code and OOM read from container `id` (unless `forced`), its logs into
   * `grade-<k>/logs.txt`, the score read only from `grade-<k>/results` (`score`: a set's), its
   * `status.json`, and the grade recorded final.
   */
  | (OpBase & { type: 'finish-grade'; run: number; k: number; id?: string; forced?: GradeEnd; score?: { file: string; pass: number } });

/**
 * What an adoption keeps of the record (the planner's rules, ops.ts adoptKeep): the image the
 * record says this very container was made from; and for a run adopted again (same run, same
 * spec hash, begun before), the deadline and the disk limits it started with, so a changed
 * `--default-deadline` or `--default-disk` does not move them.
 */
export interface AdoptKeep {
  image?: AttemptStatus['image'];
  deadline?: Pick<AttemptStatus, 'deadlineAt' | 'deadlineSource'>;
  disk?: Pick<AttemptStatus, 'disk' | 'volumeSizes'>;
}

/** A grade ended by the planner: not judged (GradeFailed, GradeTimedOut). */
export interface GradeEnd {
  state: 'failed' | 'timedOut';
  reason: string;
  message: string;
}

/**
 * An AttemptSet child's image, as the planner chose it: made from `id`, the one its set pinned,
 * or, with `pin`, the one its reference names now, pinned for the set by this create (status/pins.ts;
 * the pin already in force wins, should another action have pinned it meanwhile).
 */
export interface ImageChoice {
  id: string;
  pin?: { set: string; key: PinKey; repoDigests: string[] };
}

/** A sidecar's container, as the finish and harvest operations collect its logs. */
export interface SidecarRef {
  alias: string;
  role: 'egress-proxy' | 'sidecar';
  id: string;
}

/**
 * What an operation met, as the executor reports it: facts, never a decision. `done` goes on
 * with the action; any other outcome stops it, and the planner says what it means
 * (plan/follow-up.ts: the operations that follow it, run at once).
 */
export type OpOutcome =
  /** `made`: the id of the container the operation made (the action's next operations on the same resource use it). */
  | { type: 'done'; made?: string }
  /**
   * A name the operation creates is held (409; for a volume, the engine hands back the one of that
   * name): by what, after the one ownership rule (src/ownership.ts). A container of this attempt
   * comes with what its attestation found wrong, if anything.
   */
  | { type: 'conflict'; kind: 'container' | 'network' | 'volume'; name: string; id: string; owner: Ownership; unattested?: string }
  /** A resource the operation works on is gone (404). */
  | { type: 'not-found'; message: string; containerId?: string }
  /** A secret the operation needs cannot be read (SecretError); `containerId`: the container it was to be copied into. */
  | { type: 'secret-missing'; message: string; containerId?: string }
  /** A path berth would read or write for the attempt holds a link (UnsafePathError): nothing was followed; `containerId` as above. */
  | { type: 'unsafe-path'; message: string; containerId?: string }
  /** The backend refuses what the attempt needs (BackendRefusedError): never weakened. */
  | { type: 'refused'; reason: string; message: string }
  /** A sidecar did not come up (exited, never said it was listening, or failed its attestation). */
  | { type: 'not-ready'; index: number; id: string; message: string }
  /** A running container failed its attestation (recorded); the attempt's sidecars as found. */
  | { type: 'attestation-failed'; id: string; cause: string; sidecars: SidecarRef[] }
  /** Anything else failed: the engine's HTTP status when it answered with one (a start's containerId: the container it asked to start). */
  | { type: 'failed'; message: string; status?: number; containerId?: string };

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
  /** spec.grade: a finished run's grade begun, resumed, finished or ended (plan/grade.ts). */
  | 'grade'
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
  /**
   * How the controller runs it (the planner's lanes, plan/lanes.ts): `ending` ends a run (a stop,
   * a finish, a TTL's removal) and has a lane of its own that never waits behind starts; with
   * `takesSlot` it starts a run, which holds a running slot (and its set's room) until it ends;
   * with `waitsForSlot` it waits for a slot or its set's room, and is looked at again when one
   * may have freed.
   */
  ending?: true;
  takesSlot?: true;
  waitsForSlot?: true;
  /**
   * `plan` only (cli/commands/plan.ts fills it; the planner never does): the fields the new spec
   * changes from the one the attempt's run was made from (spec/spec-diff.ts), or why they are not
   * known (`unknown`: a run begun before berth kept its spec).
   */
  specDiff?: { changes: SpecChange[] } | { unknown: string };
}

export interface Plan {
  at: number;
  actions: AttemptAction[];
  /** Attempts already as they should be: name → phase. */
  unchanged: Map<string, Phase>;
  /**
   * The specs source yielded no attempt while the instance has some: 'held' leaves them all as
   * they are; 'allowed' (`--allow-empty`) removes them as any deleted spec. 'empty': it yielded
   * none and the instance has none either (no record, nothing on the engine): `reconcile --once`
   * and `plan` refuse it (exit 2) unless `--allow-empty`, a controller says so.
   */
  emptySource?: 'held' | 'allowed' | 'empty';
  /** Images an attempt needs that the engine does not hold (preflight), with the attempts that wait for each, sorted. */
  missingImages?: { image: string; attempts: string[] }[];
  /** Pulls the plan asks for (plan/pull-gate.ts), in the order their attempts will be admitted: the puller runs them. */
  pulls?: PullRequest[];
  /** Builds the plan asks for (plan/build-gate.ts), in the order their attempts will be admitted: the builder runs them. */
  builds?: BuildRequest[];
}

/** The operations on a sidecar, in the order plan/ops.ts `sidecarOps` emits them. */
export type SidecarOperation = Extract<Operation, { type: 'create-sidecar' | 'connect-sidecar' | 'copy-in-sidecar' | 'start-sidecar' | 'ready-sidecar' }>;

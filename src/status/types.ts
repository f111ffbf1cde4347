/** The durable status of an attempt, one record per attempt under the state folder. */
import type { Phase } from '../constants';

export interface AttestationCheck {
  name: string;
  ok: boolean;
  detail: string;
}

export interface Attestation {
  at: string;
  /** 'list' (from the label-filtered list, every pass) or 'inspect' (deep). */
  depth: 'list' | 'inspect';
  ok: boolean;
  checks: AttestationCheck[];
}

/** A spec error as a status record keeps it (`file:line:col`, field path, code, message). */
export interface SpecIssue {
  file: string;
  line: number;
  col: number;
  path: string;
  code: string;
  message: string;
}

/**
 * Which start of the engine this is: its default `bridge` network, which the engine makes anew
 * (new id, new creation time) each time it starts. See src/plan/exit-outcome.ts.
 */
export interface EngineBoot {
  /** The bridge network's id. */
  id: string;
  /** Its creation time: when that start of the engine came up, on the engine's clock. */
  at: string;
}

/** The engine refused to start the run's container (it answered with an error status). */
export interface StartFailure {
  run: number;
  containerId?: string;
  at: string;
  /** The engine's HTTP status. */
  status: number;
  /** The engine's message. */
  message: string;
}

/**
 * Which image bytes a container was made from: the reference the spec names, the id the engine
 * used (`sha256:…`, the container's own `Image`), and the image's repo digests
 * (`name@sha256:…`; none for an image built or loaded on the engine, or when the engine no longer
 * holds it). `pinned`: an AttemptSet's child made from the id its set pinned (docs/CONTRACT.md,
 * berth's section), not from the reference as it resolves now.
 */
export interface ImageProvenance {
  ref: string;
  id: string;
  repoDigests: string[];
  pinned?: boolean;
  /**
   * The containerd image store, an image whose id is an index of several platforms: the digest of
   * the manifest of the platform the container ran (its inspect's ImageManifestDescriptor).
   */
  platformManifest?: string;
}

/**
 * A run reached into by hand or by a harness (docs/CONTRACT.md, "Exec, copy and sandboxes"): how
 * many execs and copies its run folder's `execs.jsonl` records, and when the first and the last
 * began. A run with one is `touched`: everything that shows a result says so.
 */
export interface Touched {
  execs: number;
  copies: number;
  first: string;
  last: string;
}

/** One finished (or abandoned) run, kept in the history. */
export interface RunRecord {
  run: number;
  specHash: string;
  phase: Phase;
  reason?: string;
  message?: string;
  exitCode?: number;
  startedAt?: string;
  finishedAt?: string;
  resultsDir?: string;
  /** The image the run's main container was made from. */
  image?: ImageProvenance;
  /** The run had an exec or a copy (`berth exec`, `berth cp`, the API). */
  touched?: Touched;
}

/**
 * One grade of a run (spec.grade): the grader's container made fresh from the fixture and the
 * run's exported changes, its verdict read from `run-<n>/grade-<k>/results` only. Recorded as
 * `grading` before anything of it is made (`begin-grade`: a berth killed from there on resumes
 * this very grade, never begins a second), final once the grader has ended.
 */
export interface GradeRecord {
  /** `grade-<k>` of run `run`: 1, 2, ... per run (a regrade is the next k; earlier grades are kept). */
  k: number;
  run: number;
  /** The grade hash (src/spec/grade-hash.ts) it was made for: a record without a grade of the current hash is graded again. */
  gradeHash: string;
  /** grading: under way; graded: the grader ended and gave a verdict; failed: GradeFailed; timedOut: GradeTimedOut. */
  state: 'grading' | 'graded' | 'failed' | 'timedOut';
  /** failed / timedOut: GradeFailed or GradeTimedOut. */
  reason?: string;
  message?: string;
  /** Absolute host path of the grader's results folder (mounted at /results in it). */
  resultsDir: string;
  /**
   * The image it ran (spec.grade.image, else the id of the image the attempt's run was made from,
   * so a tag moved since does not change what grades it), that image's id and repo digests, when known.
   */
  image: string;
  imageId?: string;
  repoDigests?: string[];
  containerId?: string;
  exitCode?: number;
  oomKilled?: boolean;
  /** With a set's `score`: the score the grader wrote, or why it could not be read (the score is then missing, never 0). */
  score?: number;
  scoreError?: string;
  /** The verdict: with a score, score >= the set's pass; else the grader's exit code 0. Unset unless `graded`. */
  passed?: boolean;
  /** What the grader was given: the exported changes as found (`missing`: the run left none; it saw the fixture only). */
  workspace?: 'exported' | 'truncated' | 'missing';
  /** Changes not given to the grader (protected, unsafe), in words; at most a few. */
  notes?: string[];
  createdAt: string;
  startedAt?: string;
  finishedAt?: string;
  deadlineAt?: string;
}

export interface DiskLimit {
  bytes: number;
  source: 'spec' | 'default';
  enforcedBy: 'measured' | 'engine';
}

/** A volume's own size (spec.volumes[].size) as a run keeps it from its start: enforced by the engine (its `size` option) or measured by berth. */
export interface VolumeSize {
  /** The volume's name in the spec. */
  name: string;
  mountPath: string;
  bytes: number;
  enforcedBy: 'measured' | 'engine';
}

/**
 * What was redacted from what berth wrote for a run (docs/CONTRACT.md, berth's section):
 * `complete` when every secret's value could be read again at the harvest and was long enough to
 * redact; else `notRedacted` says which were not, and why.
 */
export interface Redaction {
  complete: boolean;
  /** The secrets redacted. */
  secrets: string[];
  notRedacted?: { name: string; why: 'unreadable' | 'too-short' | 'too-long' }[];
}

export interface AttemptStatus {
  /** SCHEMA_VERSIONS.statusRecord when written; a record read without one (version 1) is upgraded to it. */
  schemaVersion?: number;
  name: string;
  instance: string;
  phase: Phase;
  reason?: string;
  message?: string;
  /** The spec hash of the current run. */
  specHash: string;
  /** Spec file relative to the specs folder. */
  source?: string;
  /** Specs from git: the commit the current run's spec was read from. */
  revision?: string;
  /** Current run number, 1-based; monotonic for the attempt's name. */
  run: number;
  /** How many runs of the current spec hash have failed and been retried. */
  retriesUsed: number;
  /** How many runs of the current spec hash ended by an infrastructure death and were re-run (`--infra-retries`). */
  infraRetriesUsed?: number;
  /** The engine's start (boot) under which the current run was started or adopted, recorded before its start. */
  engineBoot?: EngineBoot;
  /** The last refused start of the current run's container; cleared when a start succeeds. */
  startFailure?: StartFailure;
  containerId?: string;
  /** The image the current run's main container was made from, recorded with its id at create. */
  image?: ImageProvenance;
  exitCode?: number;
  createdAt: string;
  /**
   * When the current run became eligible to run (berth's clock): the pass that began it, waiting
   * for a slot or provisioning at once (a first run, a changed spec, a retry after its back-off, a
   * rerun). Queue waits count from here (`summary`, the report); records written before it fall
   * back to the later of createdAt and the previous run's end.
   */
  eligibleAt?: string;
  /**
   * When provisioning of the current run began (berth's clock, as createdAt): it ends the run's
   * wait for a slot; the engine's startedAt ends provisioning. Kept after the start (the report's timeline).
   */
  provisionedAt?: string;
  startedAt?: string;
  finishedAt?: string;
  /** Deadline as an absolute time (so it survives restarts of berth). */
  deadlineAt?: string;
  /** Where the current run's deadline came from: the spec's `deadlineSeconds`, or `--default-deadline`. */
  deadlineSource?: 'spec' | 'default';
  /**
   * The current run's disk limit, fixed at its start: bytes, where it came from (`resources.disk`
   * or `--default-disk`), and how it is enforced (`measured`: berth walks what the attempt can
   * write at an interval; `engine`: the engine caps the writable layer, berth measures the rest).
   */
  disk?: DiskLimit;
  /** The current run's sized volumes (spec.volumes[].size), fixed at its start; absent: none. */
  volumeSizes?: VolumeSize[];
  resultsDir?: string;
  /** Set when the finished run's resources were collected (TTL, or replaced). */
  collectedAt?: string;
  /** Recorded before the first side effect of provisioning a run; cleared when it is done. */
  intent?: {
    action: 'provision';
    run: number;
    specHash: string;
    at: string;
    /** Set once the fixture and secrets are in the container: from then on only a start is missing. */
    copied?: boolean;
  };
  lastAttestation?: Attestation;
  /** The controller's last failed reconcile of this attempt and when it tries again (per-key back-off). */
  lastError?: { at: string; message: string; failures: number; nextRetryAt: string };
  /** Why the spec is Invalid: every error of its document, positioned. */
  specErrors?: SpecIssue[];
  /**
   * AttemptSet children whose set has a `score.file`: what the finished run's score file held (a
   * number), or why it could not be read (missing, unreadable, not a number, a link). Pass or
   * fail is decided where it is needed (sets/outcome.ts), not here.
   */
  score?: number;
  /**
   * The score file's own verdict, when it held `true`/`false` or `{"pass": true|false|0|1}`
   * (`score` is then 1 or 0): a pass or a failure whatever the set's `score.pass` says.
   */
  scorePass?: boolean;
  scoreError?: string;
  /**
   * `berth release` (or the API's): sandbox run `run` is to end with `exitCode` (src/plan/release.ts),
   * as its main process ending with that code would; asked at `at`.
   */
  releaseRequested?: { at: string; run: number; exitCode: number };
  /**
   * The current run had an exec or a copy, as its harvest counted `execs.jsonl` (src/touch/record.ts);
   * while it runs, readers count the file itself.
   */
  touched?: Touched;
  /** `berth rerun`: a new run of finished run `run` (same spec) is wanted; the planner starts it. */
  rerunRequested?: { at: string; run: number };
  /**
   * `berth delete`: the attempt's resources are to be removed and it is not run again while its
   * spec keeps this hash (a changed spec, or `berth rerun`, brings it back).
   */
  deleted?: { at: string; specHash: string };
  /**
   * The run has ended with this outcome, read when it ended, and its harvest is not done yet
   * (reason `Harvesting`, or `HarvestFailed` with why): the phase becomes `phase` once the harvest
   * is done. The planner plans the harvest again while this is set.
   */
  ended?: { run: number; phase: Phase; reason: string; message?: string };
  /** spec.grade: the grades of the runs, oldest first (the latest of the current run is the verdict). */
  grades?: GradeRecord[];
  /** `berth regrade`: grade run `run` again, after its grade `after` (0: none yet); the planner begins grade `after + 1`. */
  regradeRequested?: { at: string; run: number; after: number };
  /** Warnings for `describe` (e.g. a secret opted into the environment). */
  warnings?: string[];
  /**
   * Where the current run's secrets come from (never their values), recorded when the run
   * begins: the harvest reads them again from there to redact them (harvest/redaction.ts), in
   * whichever berth process it runs.
   */
  secretSources?: { name: string; fromEnv?: string; fromFile?: string }[];
  /** The current run's redaction, once harvested (runs with secrets only): see `Redaction`. */
  redaction?: Redaction;
  history: RunRecord[];
  updatedAt: string;
}

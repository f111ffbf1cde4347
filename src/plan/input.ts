/** Everything the planner reads: specs, one observed snapshot, the status records, the clock's time. */
import type { RunPolicy } from '../policy';
import type { DiskUsage, Snapshot } from '../observe/types';
import type { LoadedSpec } from '../spec/types';
import type { SetPins } from '../status/pins';
import type { AttemptStatus, SpecIssue } from '../status/types';
import type { DesiredStates } from './desired-for';
import type { BuildInput } from './build-gate';
import type { DiskInput } from './disk-pressure';
import type { PullInput } from './pull-gate';

export interface PlanInput {
  instance: string;
  /** ms since the epoch. */
  now: number;
  /** Absolute results root. */
  resultsRoot: string;
  specs: LoadedSpec[];
  /** Names declared by invalid or duplicated specs: what runs under them is left alone. */
  protectedNames: ReadonlySet<string>;
  /** Why each protected name is invalid: its errors, positioned, for the Invalid status. */
  invalid: ReadonlyMap<string, readonly SpecIssue[]>;
  /** Spec files that could not be read; attempts whose source label names one are left alone. */
  unreadableFiles: ReadonlySet<string>;
  /** Folders under the specs folder that could not be read; attempts whose source lies under one are left alone. */
  unreadableFolders: ReadonlySet<string>;
  /**
   * `--allow-empty`: a source that yields no attempt at all may remove the instance's attempts.
   * Without it such a source removes nothing (Argo CD's allowEmpty).
   */
  allowEmpty?: boolean;
  /**
   * The highest `run-<n>` folder already on disk for an attempt's results folder (not counting
   * the one its own record holds): a new run gets a number above it, so no folder is reused.
   */
  runFloors?: ReadonlyMap<string, number>;
  snapshot: Snapshot;
  statuses: ReadonlyMap<string, AttemptStatus>;
  /** Attempts running at once, at most. */
  maxRunning: number;
  /** How old a deep (inspect) attestation of a running attempt may get before it is redone. */
  attestIntervalMs: number;
  /** The flags' decisions for every run (default deadline and disk, retry budgets and back-off, the egress proxy). */
  policy: RunPolicy;
  /** Plan only these attempts (a controller's batch of keys); the others still count for admission. */
  only?: ReadonlySet<string>;
  /** Slots already taken by runs being provisioned elsewhere, not yet visible on the engine. */
  reservedSlots?: number;
  /** Of those, per AttemptSet: they count against the set's maxParallel too. */
  reservedBySet?: ReadonlyMap<string, number>;
  /**
   * What the running attempts hold on disk, as last measured (observe/disk-usage.ts, the controller's
   * disk meter), by attempt name: the planner ends a run over its recorded limit. Absent: not measured.
   */
  diskUsage?: ReadonlyMap<string, DiskUsage>;
  /** The engine caps a writable layer's size itself (observe/storage.ts): a disk limit is asked of it too (StorageOpt size). */
  diskQuota?: boolean;
  /** The engine caps a local volume's size itself (observe/storage.ts): a volume's `size` is asked of it (its `size` option). */
  volumeQuota?: boolean;
  /** Each AttemptSet's pinned images (status/pins.ts): its children are made from the pinned ids. */
  pins?: ReadonlyMap<string, SetPins>;
  /** The disk readings of this pass and the thresholds (`--disk-pressure-*`): new runs wait while a file system is below them. */
  disk?: DiskInput;
  /**
   * The pulls the puller keeps (plan/pull-gate.ts): an image berth may pull is gated on them, not
   * Blocked/ImageMissing. Absent: nothing is pulled (a plan without a puller, as `berth plan`).
   */
  pulls?: PullInput;
  /**
   * The builds the builder keeps (plan/build-gate.ts): an image built from a Dockerfile is gated on
   * them. Absent: nothing is known of builds (each missing one is asked for; `berth plan` shows them).
   */
  builds?: BuildInput;
  /** The specs' desired states, kept by the owner of their lifetime (the controller, a reconcile's passes): the planner keeps none. */
  desired: DesiredStates;
}

/** Kubernetes Jobs' back-off between failed runs: 10 s doubling, capped at 6 min. */
export function retryBackoffMs(failures: number, baseMs = 10_000): number {
  return Math.min(baseMs * 2 ** Math.max(0, failures - 1), 360_000);
}

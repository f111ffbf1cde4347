/** Observed state: one snapshot of this instance's resources, taken before planning. */
import type { ContainerSummary, NetworkSummary, VolumeSummary } from '../engine/types';
import type { ImageIndex } from './images';

export interface ObservedAttempt {
  name: string;
  /** Sorted by (created, id): a fixed order whatever order the engine lists them in. */
  containers: ContainerSummary[];
  networks: NetworkSummary[];
  volumes: VolumeSummary[];
}

export interface Snapshot {
  /** ms since the epoch when the snapshot was taken. */
  at: number;
  attempts: Map<string, ObservedAttempt>;
  /**
   * Containers that carry this instance's labels but that berth did not create (src/ownership.ts):
   * the labels come from their image, or the status records name them for another attempt. Not
   * ours, never touched. Listed so the planner can report a name they block.
   */
  foreign: ContainerSummary[];
  /** Engine calls the snapshot took. */
  calls: number;
  /**
   * The images the engine holds (one list of them all, which also serves the ownership check's
   * labeled images): the planner's preflight (an attempt whose image is missing is Blocked
   * before anything is made) and a set's pinned image. Undefined: not looked at (no preflight).
   */
  images?: ImageIndex;
  /** The engine's current boot (Engine.boot), when it could say: see plan/exit-outcome.ts. */
  boot?: { id: string; at: string };
}

/** What one running attempt held on disk when last measured (observe/disk-usage.ts). */
export interface DiskUsage {
  /** The main container measured: a measure of an earlier run's container says nothing of this one. */
  containerId: string;
  /** ms since the epoch when the measure ended. */
  at: number;
  /** Bytes as counted (observe/disk-usage.ts), over all that was measured. */
  bytes: number;
  /**
   * Each part: the writable layer, the results folder, the volumes; a part is absent when it was
   * not measured (the engine enforces the layer, or the count was over the limit before it).
   */
  parts: { layer?: number; results?: number; volumes?: number };
  entries: number;
  /** False: the count is a lower bound (a budget stopped it, or a folder could not be read). */
  complete: boolean;
  /** Counted by another than berth (a swarm node's engine: `node X's engine`), which counts no entries. */
  countedBy?: string;
  /** Each sized volume berth measures (spec.volumes[].size, not enforced by the engine), by its spec name: what it holds. */
  sized?: Record<string, number>;
}

/** Desired state: what the engine must hold for one attempt's current run. Pure data. */
import type { ContainerCreateSpec, Labels, NetworkCreateSpec, VolumeCreateSpec } from '../engine/types';
import type { LoadedSpec } from '../spec/types';

export interface DesiredContainer {
  name: string;
  create: ContainerCreateSpec;
}

export interface DesiredAttempt {
  name: string;
  hash: string;
  /** Run number (1-based) the resources are for. */
  run: number;
  loaded: LoadedSpec;
  /** Labels every resource of this attempt carries (component label added per resource). */
  labels: Labels;
  /** Absolute host path of this run's results folder: the only bind mount, at /results. */
  resultsDir: string;
  container: DesiredContainer;
  /** Per-attempt internal network, for network.mode isolated. */
  network: NetworkCreateSpec | null;
  volumes: VolumeCreateSpec[];
  /** Networks the main container must be attached to, exactly (sorted). */
  expectedNetworks: string[];
}

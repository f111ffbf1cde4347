/** Desired state: what the engine must hold for one attempt's current run. Pure data. */
import type { ContainerCreateSpec, Labels, NetworkCreateSpec, VolumeCreateSpec } from '../engine/types';
import type { CredentialSpec, LoadedSpec, SidecarReady } from '../spec/types';

export interface DesiredContainer {
  name: string;
  create: ContainerCreateSpec;
}

/** A container that runs beside the main one: berth's egress proxy or a user's sidecar. */
export interface DesiredSidecar extends DesiredContainer {
  role: 'egress-proxy' | 'sidecar';
  /** Its name on the attempt's network (its DNS alias there). */
  alias: string;
  /** Networks it must be attached to, exactly (sorted); the first is the one it is created on. */
  expectedNetworks: string[];
  /** Names of spec.secrets delivered to it. */
  secrets: string[];
  /** VAR → secret name, opted into its environment. */
  secretEnv: Record<string, string>;
  /**
   * Every credential whose secret the container's configuration holds: the egress proxy's, for
   * the attempt (network.credentials) and its sidecars. Their values are put into its
   * configuration when it is created (the executor reads them), never into this value.
   */
  credentials: CredentialSpec[];
  /** The egress proxy's listeners for sidecars with a way out of their own (empty for any other container). */
  listeners: DesiredListener[];
  /**
   * When it counts as ready: its `listening` line (the proxy contract), its spec's `ready` probe,
   * or (no `ready`) having stayed up a moment.
   */
  ready: 'listening' | 'running' | SidecarReady;
}

/** A port of the egress proxy that serves one sidecar only, with the sidecar's own egress and credentials. */
export interface DesiredListener {
  /** The sidecar's alias. */
  name: string;
  port: number;
  /** What the proxy resolves to tell the sidecar's connections from others': its container name. */
  source: string;
  egress: string[];
  credentials: CredentialSpec[];
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
  /** Per-attempt internal network, for network.mode isolated (and none with sidecars). */
  network: NetworkCreateSpec | null;
  /** Per-attempt egress network (the proxy's way out) when berth makes it; null when there is none or it is external. */
  egressNetwork: NetworkCreateSpec | null;
  /** Proxy first, then the spec's sidecars by name. */
  sidecars: DesiredSidecar[];
  /** Names of spec.secrets delivered to the main container (those no sidecar names). */
  mainSecrets: string[];
  volumes: VolumeCreateSpec[];
  /** Networks the main container must be attached to, exactly (sorted). */
  expectedNetworks: string[];
  /**
   * The run's deadline from its start: the spec's `deadlineSeconds`, else `--default-deadline`
   * (which is no part of the spec hash); null: none. Fixed when the run starts (attest-start).
   */
  deadline: { seconds: number; source: 'spec' | 'default' } | null;
  /**
   * The run's disk limit (writable layer, results and volumes together): the spec's
   * `resources.disk`, else `--default-disk` (no part of the spec hash); null: none. Fixed when
   * the run starts (attest-start records it).
   */
  disk: { bytes: number; source: 'spec' | 'default' } | null;
}

/**
 * What a plan compares with the engine's lists for a run that needs nothing made (a finished one,
 * most of a no-op pass): its containers' names, and which of them hold secrets. The same values
 * the full DesiredAttempt carries (container.name, sidecars' names and secrets, mainSecrets),
 * without building the rest.
 */
export interface DesiredNames {
  container: string;
  /** In the order of DesiredAttempt.sidecars (the proxy first). */
  sidecars: readonly { name: string; secrets: readonly string[]; credentials: readonly CredentialSpec[] }[];
  mainSecrets: readonly string[];
}

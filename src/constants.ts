/**
 * One place for every name users and scripts depend on: label keys, phases, reasons,
 * exit codes and defaults (CONTRACT.md). Nothing else in the code spells these strings.
 */

export const API_VERSION = 'berth.dev/v1';
export const KIND_ATTEMPT = 'Attempt';

/** Version of the normalized form that the spec hash covers; bump when normalization changes. */
export const SPEC_HASH_SCHEMA = 1;

/** Labels on every resource berth creates (reverse-DNS). */
export const LABELS = {
  /** "true" on everything berth manages. */
  managed: 'dev.berth.managed',
  /** The reconciler instance (`--instance`) that owns the resource. */
  instance: 'dev.berth.instance',
  /** The attempt's metadata.name. */
  attempt: 'dev.berth.attempt',
  /** sha256 of the normalized spec the resource was made for. */
  specHash: 'dev.berth.spec-hash',
  /** What the resource is to the attempt: see COMPONENTS. */
  component: 'dev.berth.component',
  /** Which run of the attempt (1 + retries used) made the resource. */
  run: 'dev.berth.run',
  /** The spec file (relative to the specs folder) that declared the attempt. */
  source: 'dev.berth.source',
  /** For sidecars: the sidecar's name in the spec (egress-proxy for berth's proxy). */
  sidecar: 'dev.berth.sidecar',
  /** For volumes: the volume's name in the spec. */
  volume: 'dev.berth.volume',
} as const;

/**
 * Labels of the engine-side instance lock (a volume, see src/status/engine-lock.ts). On purpose
 * neither `dev.berth.managed` nor `dev.berth.instance`: the lock is no attempt's resource, so
 * observe, garbage collection and `clean` never see it (and `clean` never removes the lock it holds).
 * The holder's identity, never a secret.
 */
export const LOCK_LABELS = {
  /** On the lock volume: the instance it locks. */
  lock: 'dev.berth.lock',
  /** On a takeover claim: the instance whose stale lock is being taken over. */
  claim: 'dev.berth.lock-claim',
  token: 'dev.berth.lock.token',
  pid: 'dev.berth.lock.pid',
  hostname: 'dev.berth.lock.hostname',
  bootId: 'dev.berth.lock.boot-id',
  processStart: 'dev.berth.lock.process-start',
  pidNamespace: 'dev.berth.lock.pid-namespace',
  stateDir: 'dev.berth.lock.state-dir',
  command: 'dev.berth.lock.command',
  startedAt: 'dev.berth.lock.started-at',
} as const;

export const COMPONENTS = {
  main: 'main',
  network: 'network',
  egressNetwork: 'egress-network',
  volume: 'volume',
  proxy: 'egress-proxy',
  sidecar: 'sidecar',
} as const;
export type Component = (typeof COMPONENTS)[keyof typeof COMPONENTS];

export const PHASES = [
  'Pending',
  'Running',
  'Succeeded',
  'Failed',
  'TimedOut',
  'Invalid',
  'Blocked',
] as const;
export type Phase = (typeof PHASES)[number];

/** Phases after which an attempt never runs again unless its spec changes or retries allow. */
export const FINISHED_PHASES: ReadonlySet<Phase> = new Set(['Succeeded', 'Failed', 'TimedOut']);

export const REASONS = {
  error: 'Error',
  oomKilled: 'OOMKilled',
  attestationFailed: 'AttestationFailed',
  lost: 'Lost',
  deadlineExceeded: 'DeadlineExceeded',
  nameConflict: 'NameConflict',
  createFailed: 'CreateFailed',
  invalidSpec: 'InvalidSpec',
  duplicateName: 'DuplicateName',
  waitingForSlot: 'WaitingForSlot',
  completed: 'Completed',
} as const;

export const EXIT = {
  ok: 0,
  failed: 1,
  usage: 2,
  attemptsFailed: 3,
  /** `berth plan --detailed-exitcode` only: the plan has changes. */
  changesPending: 4,
} as const;

export const DEFAULTS = {
  specsDir: 'specs',
  stateDir: '.berth',
  instance: 'default',
  workingDir: '/workspace',
  resultsMount: '/results',
  secretsDir: '/run/secrets',
  networkMode: 'none',
  pids: 512,
  retries: 0,
  /** Engine operations in flight at once: measured best on a 2-core box (ENGINE.md: 8 in flight). */
  concurrency: 8,
  /** Grace between TERM and KILL when a deadline passes or an attempt is stopped. */
  stopGraceSeconds: 10,
  /** How often a controller checks that it still holds the instance's locks. */
  lockCheckSeconds: 10,
  /** The egress proxy: image, port, and how long it may take to say it listens. */
  egressProxyImage: 'berth/egress-proxy:local',
  egressProxyPort: 3128,
  egressProxyReadySeconds: 15,
  /** How long a sidecar must stay up after its start to count as ready. */
  sidecarSettleMs: 200,
  /**
   * The upstream DNS server of containers on an attempt's internal network: an address that is
   * never routed (TEST-NET-1, RFC 5737), so nothing answers lookups of outside names. Without
   * it, engines before 23.0.11 / 25.0.4 / 26.0 forward such lookups from the host's namespace
   * when the host's resolver is on loopback (systemd-resolved's 127.0.0.53): a way out of the
   * internal network, through DNS (CVE-2024-29018). Names on the attempt's network (its
   * sidecars, the egress proxy) still resolve: the engine answers those itself.
   */
  internalDns: ['192.0.2.53'] as readonly string[],
  /** YAML input limits. */
  maxSpecFileBytes: 1024 * 1024,
  maxAliasCount: 100,
  maxNestingDepth: 64,
} as const;

/** Deterministic engine names. The instance is part of every name so instances never collide. */
export function containerName(instance: string, attempt: string): string {
  return `berth-${instance}-${attempt}`;
}
export function networkName(instance: string, attempt: string): string {
  return `berth-${instance}-${attempt}`;
}
/** A sidecar's container name; the egress proxy is the sidecar named `egress-proxy`. */
export function sidecarName(instance: string, attempt: string, sidecar: string): string {
  return `berth-${instance}-${attempt}-sc-${sidecar}`;
}
/** The per-attempt egress network (the proxy's side that reaches out). */
export function egressNetworkName(instance: string, attempt: string): string {
  return `berth-${instance}-${attempt}-egress`;
}
export function volumeName(instance: string, attempt: string, volume: string): string {
  return `berth-${instance}-${attempt}-${volume}`;
}
/**
 * The engine-side lock of an instance, a volume. Every other name berth gives starts `berth-`,
 * so no instance or attempt name can make one of them collide with a lock.
 */
export function lockVolumeName(instance: string): string {
  return `berth.lock.${instance}`;
}
/** The claim a taker holds while it replaces the stale lock generation `staleToken`. */
export function lockClaimName(instance: string, staleToken: string): string {
  return `berth.lock-takeover.${instance}.${staleToken}`;
}

/**
 * desiredAttempt: a pure function from a loaded, normalized spec (and the run number and
 * results folder the status record assigns) to the resources the attempt needs, with
 * deterministic names and berth's labels. Secure defaults live here, in one place.
 *
 * network.mode isolated gives the attempt an internal network (no route out). With egress, an
 * egress proxy sidecar is the only container on both that network and an egress network; the
 * main container gets HTTP(S)_PROXY pointing at it. Sidecars run on the internal network,
 * reachable by their names; a sidecar with a way out of its own has its own port of the proxy.
 * network.mode none with sidecars gets the same internal network (the main container on it
 * without a way out: no proxy variables, and the proxy's attempt port allows nothing).
 */
import type { RunPolicy } from '../policy';
import path from 'node:path';
import { COMPONENTS, DEFAULTS, EXEC, LABELS, NAMING, type Component, type Naming } from '../constants';
import type { ContainerCreateSpec, Labels } from '../engine/types';
import { PROXY_ENV } from '../proxy/contract';
import { EGRESS_PROXY_NAME } from '../spec/semantic';
import type { CredentialSpec, LoadedSpec, SidecarSpec } from '../spec/types';
import type { DesiredAttempt, DesiredListener, DesiredNames, DesiredSidecar } from './types';

export interface DesiredContext {
  instance: string;
  /** The flags' decisions for every run (src/policy.ts): default deadline and disk, the egress proxy's image and network. */
  policy: RunPolicy;
  /** How resources are named: the current scheme, unless a run began under an older one (LEGACY_NAMING). */
  naming?: Naming;
  /** The engine caps a writable layer's size (overlay2 on xfs with pquota): the disk limit is asked of it as StorageOpt size. */
  diskQuota?: boolean;
  /** The engine caps a local volume's size (a data root on xfs with pquota): a volume's size is asked of it as its `size` option. */
  volumeQuota?: boolean;
}

/** The run's disk limit: the spec's, else the default (see DesiredAttempt.disk). */
export function diskOf(ctx: DesiredContext, loaded: LoadedSpec): DesiredAttempt['disk'] {
  const own = loaded.spec.resources.diskBytes;
  if (own !== null) return { bytes: own, source: 'spec' };
  return ctx.policy.defaultDiskBytes !== undefined ? { bytes: ctx.policy.defaultDiskBytes, source: 'default' } : null;
}

/** The run's deadline: the spec's, else the default (see DesiredAttempt.deadline). */
export function deadlineOf(ctx: DesiredContext, loaded: LoadedSpec): DesiredAttempt['deadline'] {
  const own = loaded.spec.deadlineSeconds;
  if (own !== null) return { seconds: own, source: 'spec' };
  return ctx.policy.defaultDeadlineSeconds !== undefined ? { seconds: ctx.policy.defaultDeadlineSeconds, source: 'default' } : null;
}

export function attemptLabels(instance: string, loaded: LoadedSpec, run: number): Labels {
  return {
    [LABELS.managed]: 'true',
    [LABELS.instance]: instance,
    [LABELS.attempt]: loaded.spec.name,
    [LABELS.specHash]: loaded.hash,
    [LABELS.run]: String(run),
    [LABELS.source]: loaded.relFile,
  };
}

export function withComponent(labels: Labels, component: Component): Labels {
  return { ...labels, [LABELS.component]: component };
}

/**
 * Whether the attempt has an internal network of its own: `isolated`, or `none` with sidecars
 * (they need a network to serve the main container on; the main container still has no way out).
 */
export const hasOwnNetwork = (s: LoadedSpec['spec']): boolean => s.network.mode === 'isolated' || (s.network.mode === 'none' && s.sidecars.length > 0);

/** The engine's NetworkMode for an attempt's main container. */
export function networkModeFor(instance: string, loaded: LoadedSpec, naming: Naming = NAMING): string {
  switch (loaded.spec.network.mode) {
    case 'none':
      return hasOwnNetwork(loaded.spec) ? naming.network(instance, loaded.spec.name) : 'none';
    case 'bridge':
      return 'bridge';
    case 'isolated':
      return naming.network(instance, loaded.spec.name);
  }
}

const sortedEnv = (env: Record<string, string>): string[] =>
  Object.entries(env)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`);

/** The hardening every container of an attempt gets; limits and mounts are per container. */
export function hardened(networkMode: string, extra: Partial<ContainerCreateSpec['host']>): ContainerCreateSpec['host'] {
  return {
    networkMode,
    binds: [],
    mounts: [],
    capDrop: ['ALL'],
    capAdd: [],
    securityOpt: ['no-new-privileges'],
    privileged: false,
    init: true,
    cgroupnsMode: 'private',
    pidsLimit: 256,
    readonlyRootfs: false,
    // The engine keeps a bounded log of each container (what berth harvests is what it kept).
    logConfig: { type: 'json-file', config: { 'max-size': DEFAULTS.engineLogMaxSize, 'max-file': String(DEFAULTS.engineLogMaxFiles) } },
    ...extra,
  };
}

/**
 * Secrets of the spec that go to the main container: those no sidecar names, and no credential
 * names unless the main container's environment asks for it too (a credential's secret named
 * nowhere else is the egress proxy's only).
 */
function mainSecretsOf(s: LoadedSpec['spec']): string[] {
  const mainEnv = new Set(Object.values(s.secretEnv));
  const credentials = [...s.credentials, ...s.sidecars.flatMap((c) => c.credentials ?? [])];
  const elsewhere = new Set([...s.sidecars.flatMap((c) => c.secrets), ...credentialSecretsOf(credentials).filter((n) => !mainEnv.has(n))]);
  return s.secrets.map((x) => x.name).filter((n) => !elsewhere.has(n));
}

/** The secrets credentials name: their values and CA bundles. */
export function credentialSecretsOf(creds: readonly CredentialSpec[]): string[] {
  return [...new Set(creds.flatMap((c) => [c.secret, ...(c.caSecret !== null ? [c.caSecret] : [])]))];
}

/** Whether a sidecar has a way out of its own. */
const ownWayOut = (c: SidecarSpec): boolean => (c.egress?.length ?? 0) > 0 || (c.credentials?.length ?? 0) > 0;

/**
 * Whether the attempt gets berth's egress proxy as a sidecar: a way out for it (isolated) or for
 * one of its sidecars (isolated, or none with sidecars).
 */
export const hasEgressProxy = (s: LoadedSpec['spec']): boolean =>
  (s.network.mode === 'isolated' && (s.network.egress.length > 0 || s.credentials.length > 0)) || (hasOwnNetwork(s) && s.sidecars.some(ownWayOut));

/** Every credential the egress proxy holds: the attempt's and its sidecars'. */
const proxyCredentials = (s: LoadedSpec['spec']): CredentialSpec[] => [...s.credentials, ...s.sidecars.flatMap((c) => c.credentials ?? [])];

/** The proxy's listeners for sidecars with a way out of their own: ports after the attempt's, in the sidecars' (name) order. */
function listenersOf(instance: string, s: LoadedSpec['spec'], naming: Naming): DesiredListener[] {
  return s.sidecars.filter(ownWayOut).map((c, i) => ({
    name: c.name,
    port: DEFAULTS.egressProxyPort + 1 + i,
    source: naming.sidecar(instance, s.name, c.name),
    egress: c.egress ?? [],
    credentials: c.credentials ?? [],
  }));
}

/**
 * The containers' names and secret holders of desiredAttempt()'s value (DesiredNames), from the
 * same rules, without building the rest: what a plan reads of a finished run.
 */
export function desiredNames(ctx: DesiredContext, loaded: LoadedSpec): DesiredNames {
  const s = loaded.spec;
  const naming = ctx.naming ?? NAMING;
  return {
    container: naming.container(ctx.instance, s.name),
    sidecars: [
      ...(hasEgressProxy(s) ? [{ name: naming.sidecar(ctx.instance, s.name, EGRESS_PROXY_NAME), secrets: [], credentials: proxyCredentials(s) }] : []),
      ...s.sidecars.map((c) => ({ name: naming.sidecar(ctx.instance, s.name, c.name), secrets: c.secrets, credentials: [] })),
    ],
    mainSecrets: mainSecretsOf(s),
  };
}

/**
 * @param resultsDir absolute host folder for this run's results (created by the executor).
 */
export function desiredAttempt(ctx: DesiredContext, loaded: LoadedSpec, run: number, resultsDir: string): DesiredAttempt {
  const s = loaded.spec;
  const disk = diskOf(ctx, loaded);
  const labels = attemptLabels(ctx.instance, loaded, run);
  const naming = ctx.naming ?? NAMING;
  const netMode = networkModeFor(ctx.instance, loaded, naming);
  const isolated = hasOwnNetwork(s);
  const egress = hasEgressProxy(s);
  const egressName = egress ? (ctx.policy.egress?.network ?? naming.egressNetwork(ctx.instance, s.name)) : null;
  const volumes = s.volumes.map((v) => ({
    name: naming.volume(ctx.instance, s.name, v.name),
    labels: { ...withComponent(labels, COMPONENTS.volume), [LABELS.volume]: v.name },
    // the engine's own volumes, with no driver options but the size the engine enforces: attested so
    // (a volume of another driver or with other options is not berth's making)
    driver: 'local',
    options: (v.sizeBytes !== null && ctx.volumeQuota ? { size: String(v.sizeBytes) } : {}) as Record<string, string>,
  }));
  const sidecarLabels = (name: string, component: Component) => ({ ...withComponent(labels, component), [LABELS.sidecar]: name });
  // Containers only on the internal network get an upstream that answers nothing (see DEFAULTS.internalDns);
  // the egress proxy, which is also on the egress network, resolves as the engine does.
  const internalDns = isolated ? { dns: DEFAULTS.internalDns } : {};

  const sidecars: DesiredSidecar[] = [];
  if (egress && egressName) {
    const name = naming.sidecar(ctx.instance, s.name, EGRESS_PROXY_NAME);
    sidecars.push({
      role: 'egress-proxy',
      alias: EGRESS_PROXY_NAME,
      name,
      expectedNetworks: [netMode, egressName].sort(),
      secrets: [],
      secretEnv: {},
      credentials: proxyCredentials(s),
      listeners: listenersOf(ctx.instance, s, naming),
      ready: 'listening',
      create: {
        name,
        image: ctx.policy.egress?.proxyImage ?? DEFAULTS.egressProxyImage,
        cmd: null,
        env: [`${PROXY_ENV.allow}=${s.network.egress.join(',')}`, `${PROXY_ENV.port}=${DEFAULTS.egressProxyPort}`],
        workingDir: '/',
        labels: sidecarLabels(EGRESS_PROXY_NAME, COMPONENTS.proxy),
        aliases: [EGRESS_PROXY_NAME],
        stopTimeout: 5,
        host: hardened(netMode, { memory: 256 * 1024 * 1024, memorySwap: 256 * 1024 * 1024, pidsLimit: 256, readonlyRootfs: true }),
      },
    });
  }
  const listeners = egress ? listenersOf(ctx.instance, s, naming) : [];
  for (const c of s.sidecars) {
    const name = naming.sidecar(ctx.instance, s.name, c.name);
    // its own way out: the proxy's port for it (HTTP_PROXY), nothing else
    const own = listeners.find((l) => l.name === c.name);
    const ownUrl = own ? `http://${EGRESS_PROXY_NAME}:${own.port}` : '';
    const ownEnv = own
      ? [
          `HTTP_PROXY=${ownUrl}`,
          `HTTPS_PROXY=${ownUrl}`,
          `http_proxy=${ownUrl}`,
          `https_proxy=${ownUrl}`,
          'NO_PROXY=localhost,127.0.0.1,::1',
          'no_proxy=localhost,127.0.0.1,::1',
        ]
      : [];
    sidecars.push({
      role: 'sidecar',
      alias: c.name,
      name,
      expectedNetworks: [netMode],
      secrets: c.secrets,
      secretEnv: c.secretEnv,
      credentials: [],
      listeners: [],
      ready: c.ready ?? 'running',
      create: {
        name,
        image: c.image,
        cmd: c.command,
        env: [...sortedEnv(c.env), ...ownEnv],
        workingDir: '/',
        labels: sidecarLabels(c.name, COMPONENTS.sidecar),
        aliases: [c.name],
        stopTimeout: DEFAULTS.stopGraceSeconds,
        host: hardened(netMode, { pidsLimit: s.resources.pids, ...internalDns }),
      },
    });
  }
  const proxyUrl = `http://${EGRESS_PROXY_NAME}:${DEFAULTS.egressProxyPort}`;
  // Loopback and the attempt's own sidecars are reached directly, not through the proxy.
  const noProxy = ['localhost', '127.0.0.1', '::1', ...s.sidecars.map((c) => c.name)].join(',');
  // network.mode none: the main container is on the attempt's network (its sidecars) but gets no way out
  const proxyEnv =
    egress && s.network.mode === 'isolated'
      ? [`HTTP_PROXY=${proxyUrl}`, `HTTPS_PROXY=${proxyUrl}`, `http_proxy=${proxyUrl}`, `https_proxy=${proxyUrl}`, `NO_PROXY=${noProxy}`, `no_proxy=${noProxy}`]
      : [];
  return {
    name: s.name,
    hash: loaded.hash,
    run,
    loaded,
    labels,
    resultsDir: path.resolve(resultsDir),
    expectedNetworks: [netMode],
    deadline: deadlineOf(ctx, loaded),
    disk,
    network: isolated ? { name: naming.network(ctx.instance, s.name), labels: withComponent(labels, COMPONENTS.network), internal: true } : null,
    egressNetwork:
      egress && !ctx.policy.egress?.network && egressName
        ? { name: egressName, labels: withComponent(labels, COMPONENTS.egressNetwork), internal: false }
        : null,
    sidecars,
    mainSecrets: mainSecretsOf(s),
    volumes,
    container: {
      name: naming.container(ctx.instance, s.name),
      create: {
        name: naming.container(ctx.instance, s.name),
        image: s.image,
        // a sandbox runs berth's own waiting process, nothing of the image's (copied in before the start: plan/ops.ts copiesIn)
        ...(s.sandbox ? { cmd: ['pause'], entrypoint: [EXEC.helperPath] } : { cmd: s.command }),
        env: [...sortedEnv(s.env), ...proxyEnv],
        workingDir: s.workingDir,
        labels: withComponent(labels, COMPONENTS.main),
        // spec.user: a numeric uid:gid; otherwise the image's user, as always
        ...(s.user ? { user: `${s.user.uid}:${s.user.gid}` } : {}),
        stopTimeout: DEFAULTS.stopGraceSeconds,
        host: hardened(netMode, {
          binds: [`${path.resolve(resultsDir)}:${DEFAULTS.resultsMount}:rw`],
          mounts: s.volumes.map((v) => ({
            type: 'volume' as const,
            source: naming.volume(ctx.instance, s.name, v.name),
            target: v.mountPath,
            readOnly: v.readOnly,
          })),
          ...(s.resources.cpus !== null ? { nanoCpus: Math.round(s.resources.cpus * 1e9) } : {}),
          // memory with no extra swap: MemorySwap equal to Memory
          ...(s.resources.memoryBytes !== null ? { memory: s.resources.memoryBytes, memorySwap: s.resources.memoryBytes } : {}),
          pidsLimit: s.resources.pids,
          ...internalDns,
          // spec.readOnlyRootFilesystem: / read-only, a fresh tmpfs at /tmp (results and volumes stay writable)
          ...(s.readOnlyRootFilesystem ? { readonlyRootfs: true, tmpfs: { [DEFAULTS.readOnlyTmp]: DEFAULTS.readOnlyTmpOptions } } : {}),
          // the disk limit, where the engine can cap the writable layer itself (results and volumes are still measured)
          ...(disk && ctx.diskQuota ? { storageOpt: { size: String(disk.bytes) } } : {}),
        }),
      },
    },
  };
}

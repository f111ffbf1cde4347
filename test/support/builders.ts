/** Builders for pure tests: normalized specs, observed containers, status records. */
import { COMPONENTS, LABELS, NAMING } from '../../src/constants';
import type { ContainerSummary, NetworkSummary, VolumeSummary } from '../../src/engine/types';
import type { ObservedAttempt, Snapshot } from '../../src/observe/types';
import type { PlanInput } from '../../src/plan/input';
import type { LoadedSpec, NormalizedAttempt } from '../../src/spec/types';
import type { AttemptStatus } from '../../src/status/types';
import { DesiredStates } from '../../src/plan/desired-for';

export function spec(name: string, over: Partial<NormalizedAttempt> = {}, hash = `h-${name}`): LoadedSpec {
  const s: NormalizedAttempt = {
    apiVersion: 'berth.dev/v1',
    kind: 'Attempt',
    name,
    labels: {},
    image: 'berth/busybox:local',
    pullPolicies: { main: 'IfNotPresent', grade: 'IfNotPresent', sidecars: {} },
    command: ['sh', '-c', 'true'],
    workingDir: '/workspace',
    env: {},
    secretEnv: {},
    secrets: [],
    fixture: null,
    fixtureDigest: null,
    fixtureLayers: [],
    results: name,
    network: { mode: 'none', egress: [] },
    credentials: [],
    volumes: [],
    resources: { cpus: null, memoryBytes: null, pids: 512, diskBytes: null },
    deadlineSeconds: null,
    retries: 0,
    ttlSecondsAfterFinished: null,
    user: null,
    readOnlyRootFilesystem: false,
    sandbox: false,
    sidecars: [],
    grade: null,
    workspace: { export: 'changes', exclude: [], maxBytes: 256 * 1024 * 1024, maxFiles: 100_000, gitignore: true },
    harvest: { maxBytes: 1024 ** 3, maxFiles: 100_000 },
    ...over,
  };
  return { source: { file: `specs/${name}.yaml`, line: 1, col: 1 }, relFile: `${name}.yaml`, spec: s, hash };
}

export function labelsFor(instance: string, name: string, hash: string, run = 1, component: string = COMPONENTS.main): Record<string, string> {
  return {
    [LABELS.managed]: 'true',
    [LABELS.instance]: instance,
    [LABELS.attempt]: name,
    [LABELS.specHash]: hash,
    [LABELS.run]: String(run),
    [LABELS.component]: component,
    [LABELS.source]: `${name}.yaml`,
  };
}

export function container(instance: string, name: string, hash: string, over: Partial<ContainerSummary> & { run?: number } = {}): ContainerSummary {
  const { run, ...rest } = over;
  return {
    id: `id-${name}`,
    name: NAMING.container(instance, name),
    labels: labelsFor(instance, name, hash, run ?? 1),
    image: 'berth/busybox:local',
    imageId: 'sha256:busybox',
    state: 'running',
    status: 'Up',
    networkMode: 'none',
    networks: ['none'],
    mounts: [{ type: 'bind', source: `/r/${name}/run-${run ?? 1}/results`, destination: '/results', rw: true }],
    created: 100,
    ...rest,
  };
}

export function network(instance: string, name: string, hash: string, over: Partial<NetworkSummary> = {}): NetworkSummary {
  return {
    id: `net-${name}`,
    name: NAMING.network(instance, name),
    labels: labelsFor(instance, name, hash, 1, COMPONENTS.network),
    driver: 'bridge',
    internal: true,
    attachable: false,
    scope: 'local',
    ...over,
  };
}

export function volume(instance: string, name: string, vol: string, hash: string): VolumeSummary {
  return {
    name: NAMING.volume(instance, name, vol),
    labels: { ...labelsFor(instance, name, hash, 1, COMPONENTS.volume), [LABELS.volume]: vol },
    driver: 'local',
  };
}

export function snapshot(parts: {
  containers?: ContainerSummary[];
  networks?: NetworkSummary[];
  volumes?: VolumeSummary[];
  foreign?: ContainerSummary[];
}): Snapshot {
  const attempts = new Map<string, ObservedAttempt>();
  const slot = (n: string) => {
    let a = attempts.get(n);
    if (!a) attempts.set(n, (a = { name: n, containers: [], networks: [], volumes: [] }));
    return a;
  };
  for (const c of parts.containers ?? []) slot(c.labels[LABELS.attempt] as string).containers.push(c);
  for (const n of parts.networks ?? []) slot(n.labels[LABELS.attempt] as string).networks.push(n);
  for (const v of parts.volumes ?? []) slot(v.labels[LABELS.attempt] as string).volumes.push(v);
  return { at: 0, attempts, foreign: parts.foreign ?? [], calls: 4 };
}

export function status(name: string, over: Partial<AttemptStatus> = {}): AttemptStatus {
  return {
    name,
    instance: 'default',
    phase: 'Running',
    specHash: `h-${name}`,
    run: 1,
    retriesUsed: 0,
    containerId: `id-${name}`,
    createdAt: '2026-01-01T00:00:00.000Z',
    startedAt: '2026-01-01T00:00:00.000Z',
    resultsDir: `/r/${name}/run-1/results`,
    lastAttestation: { at: '2026-01-01T00:00:30.000Z', depth: 'inspect', ok: true, checks: [] },
    history: [],
    updatedAt: '2026-01-01T00:00:00.000Z',
    ...over,
  };
}

export const T0 = Date.parse('2026-01-01T00:01:00.000Z');

export function input(over: Partial<PlanInput> = {}): PlanInput {
  return {
    instance: 'default',
    now: T0,
    resultsRoot: '/r',
    specs: [],
    protectedNames: new Set(),
    invalid: new Map(),
    unreadableFiles: new Set(),
    unreadableFolders: new Set(),
    snapshot: snapshot({}),
    statuses: new Map(),
    maxRunning: 10,
    attestIntervalMs: 60_000,
    policy: {},
    desired: new DesiredStates(),
    ...over,
  };
}

export function statuses(...recs: AttemptStatus[]): Map<string, AttemptStatus> {
  return new Map(recs.map((r) => [r.name, r]));
}

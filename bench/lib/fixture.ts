/**
 * What every contender runs, spelled once: berth specs, the raw Engine API create body that
 * mirrors what berth sends (src/desired/attempt.ts → src/engine/docker/containers.ts), the
 * `docker run` flags and the docker-compose file with the same settings. And the bench run's
 * identity: every resource it makes carries `dev.berth.bench=<run id>` (raw, docker run,
 * compose) or belongs to a berth instance named `bench-<run id>-...`.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DEFAULTS, NAMING } from '../../src/constants';
import type { PassConfig } from '../../src/controller/pass';
import { DesiredStates } from '../../src/plan/desired-for';
import { silentLogger } from '../../src/util/log';

export const IMAGE = 'berth/busybox:local';
export const BENCH_LABEL = 'dev.berth.bench';

export class BenchRun {
  /** 6 lowercase base-36 characters: short enough for berth's 32-character instance names. */
  readonly id = randomBytes(8).readBigUInt64BE().toString(36).slice(0, 6).padStart(6, '0');
  readonly label = `${BENCH_LABEL}=${this.id}`;
  readonly instances = new Set<string>();
  readonly composeProjects = new Set<string>();
  root = '';

  async init(): Promise<void> {
    this.root = await fs.mkdtemp(path.join(os.tmpdir(), `berth-bench-${this.id}-`));
  }

  /** A fresh berth instance of this run, with its own specs, state and results folders. */
  async berthSandbox(tag: string): Promise<BerthSandbox> {
    const instance = `bench-${this.id}-${tag}`;
    if (instance.length > 32) throw new Error(`instance name too long: ${instance}`);
    this.instances.add(instance);
    const dir = path.join(this.root, instance);
    const sb = new BerthSandbox(instance, dir);
    await fs.mkdir(sb.specsDir, { recursive: true });
    return sb;
  }

  /** A folder under the run's temp root. */
  async dir(...parts: string[]): Promise<string> {
    const d = path.join(this.root, ...parts);
    await fs.mkdir(d, { recursive: true });
    return d;
  }

  composeProject(tag: string): string {
    // compose 1.29 keeps [a-z0-9_-] of a project name.
    const p = `berthbench${this.id}${tag}`.replace(/[^a-z0-9]/g, '');
    this.composeProjects.add(p);
    return p;
  }
}

export class BerthSandbox {
  readonly specsDir: string;
  readonly stateDir: string;
  readonly resultsRoot: string;

  constructor(
    readonly instance: string,
    readonly dir: string,
  ) {
    this.specsDir = path.join(dir, 'specs');
    this.stateDir = path.join(dir, 'state');
    this.resultsRoot = path.join(dir, 'results');
  }

  globalArgs(logLevel = 'info'): string[] {
    return ['--specs', this.specsDir, '--state', this.stateDir, '--results-root', this.resultsRoot, '--instance', this.instance, '--log-level', logLevel];
  }

  /** An in-process pass's configuration over this sandbox: the bench's usual bounds unless `over` says otherwise. */
  passConfig(over: Partial<PassConfig> = {}): PassConfig {
    return {
      specsDir: this.specsDir,
      stateDir: this.stateDir,
      resultsRoot: this.resultsRoot,
      instance: this.instance,
      maxRunning: 50,
      concurrency: 8,
      attestIntervalMs: 60_000,
      policy: {},
      env: process.env,
      log: silentLogger(),
      desired: new DesiredStates(),
      ...over,
    };
  }

  /** Writes one spec file per name (`<name>.yaml`). */
  async writeSpecs(names: readonly string[], command: readonly string[]): Promise<void> {
    await Promise.all(names.map((n) => fs.writeFile(path.join(this.specsDir, `${n}.yaml`), specText(n, command))));
  }

  /** berth's name for the attempt's container (what the bench watches for; berth's own naming). */
  containerName(attempt: string): string {
    return NAMING.container(this.instance, attempt);
  }
}

/** An Attempt spec; `extra` lines go at the end of its `spec:` (each indented by two spaces). */
export function specText(name: string, command: readonly string[], extra: readonly string[] = []): string {
  return [
    'apiVersion: berth.dev/v1',
    'kind: Attempt',
    'metadata:',
    `  name: ${name}`,
    'spec:',
    `  image: ${IMAGE}`,
    `  command: ${JSON.stringify(command)}`,
    '  network: {mode: none}',
    ...extra,
    '',
  ].join('\n');
}

export function names(prefix: string, n: number, from = 0): string[] {
  return Array.from({ length: n }, (_, i) => `${prefix}${String(from + i).padStart(4, '0')}`);
}

/**
 * Labels of the same shape and size as berth's seven (managed, instance, attempt, spec-hash,
 * run, source, component), under the bench's own keys: the peers' containers never pass for
 * berth's.
 */
export function peerLabels(run: BenchRun, peer: string, name: string): Record<string, string> {
  return {
    [BENCH_LABEL]: run.id,
    [`${BENCH_LABEL}.peer`]: peer,
    [`${BENCH_LABEL}.attempt`]: name,
    [`${BENCH_LABEL}.spec-hash`]: 'f'.repeat(64),
    [`${BENCH_LABEL}.run`]: '1',
    [`${BENCH_LABEL}.source`]: `${name}.yaml`,
    [`${BENCH_LABEL}.component`]: 'main',
  };
}

/**
 * The rotation berth gives every container's log (src/desired/attempt.ts): the engine keeps at
 * most 3 files of 16 MiB. The floor and the peers send it too: a start with it takes a few
 * per cent longer here (BENCHMARKS.md, round eight), and the same work is what is compared.
 */
export const LOG_OPTS: Readonly<Record<string, string>> = { 'max-size': DEFAULTS.engineLogMaxSize, 'max-file': String(DEFAULTS.engineLogMaxFiles) };

/** `docker create`/`docker run` flags for LOG_OPTS. */
export function logOptFlags(): string[] {
  return Object.entries(LOG_OPTS).flatMap(([k, v]) => ['--log-opt', `${k}=${v}`]);
}

/**
 * The Engine API create body berth sends for a `network: none` attempt with default resources
 * (src/engine/docker/containers.ts createOptions of src/desired/attempt.ts desiredAttempt):
 * CapDrop ALL, no-new-privileges, Init, private cgroup namespace, PidsLimit 512, NetworkMode
 * none, the results folder as the only bind mount at /results, the json-file log's rotation,
 * labels.
 */
export function rawCreateBody(cmd: readonly string[], resultsDir: string, labels: Record<string, string>): unknown {
  return {
    Image: IMAGE,
    Cmd: cmd,
    Env: [],
    WorkingDir: '/workspace',
    Labels: labels,
    StopTimeout: 10,
    AttachStdin: false,
    AttachStdout: false,
    AttachStderr: false,
    Tty: false,
    OpenStdin: false,
    NetworkDisabled: false,
    HostConfig: {
      NetworkMode: 'none',
      Binds: [`${resultsDir}:/results:rw`],
      Mounts: [],
      CapDrop: ['ALL'],
      CapAdd: [],
      SecurityOpt: ['no-new-privileges'],
      Privileged: false,
      Init: true,
      CgroupnsMode: 'private',
      PidsLimit: 512,
      ReadonlyRootfs: false,
      RestartPolicy: { Name: 'no' },
      PublishAllPorts: false,
      PortBindings: {},
      LogConfig: { Type: 'json-file', Config: { ...LOG_OPTS } },
    },
  };
}

/** `docker run -d` arguments with the same settings. */
export function dockerRunArgs(name: string, cmd: readonly string[], resultsDir: string, labels: Record<string, string>): string[] {
  return [
    'run',
    '-d',
    '--name',
    name,
    ...Object.entries(labels).flatMap(([k, v]) => ['--label', `${k}=${v}`]),
    '--network',
    'none',
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--init',
    '--cgroupns',
    'private',
    '--pids-limit',
    '512',
    '--stop-timeout',
    '10',
    ...logOptFlags(),
    '-w',
    '/workspace',
    '-v',
    `${resultsDir}:/results:rw`,
    IMAGE,
    ...cmd,
  ];
}

/**
 * A docker-compose file (format 2.4: the one whose options match a single engine) with one
 * service per name and the same settings. compose 1.29 has no cgroupns option: its containers
 * get the engine's default cgroup namespace mode.
 */
export function composeFile(run: BenchRun, services: readonly string[], cmd: readonly string[], resultsDirOf: (s: string) => string): string {
  const lines = ["version: '2.4'", 'services:'];
  for (const s of services) {
    lines.push(
      `  ${s}:`,
      `    image: ${IMAGE}`,
      `    command: ${JSON.stringify(cmd)}`,
      '    network_mode: none',
      '    cap_drop: [ALL]',
      '    security_opt: [no-new-privileges]',
      '    init: true',
      '    pids_limit: 512',
      '    working_dir: /workspace',
      '    stop_grace_period: 10s',
      '    logging:',
      '      driver: json-file',
      `      options: ${JSON.stringify(LOG_OPTS)}`,
      `    volumes: [${JSON.stringify(`${resultsDirOf(s)}:/results:rw`)}]`,
      '    labels:',
      ...Object.entries(peerLabels(run, 'compose', s)).map(([k, v]) => `      ${k}: ${JSON.stringify(v)}`),
    );
  }
  return lines.join('\n') + '\n';
}

/** Global options shared by every command, resolved once into a Context. */
import type { RunPolicy } from '../policy';
import path from 'node:path';
import { readlinkSync, statSync } from 'node:fs';
import { DEFAULTS, GIT } from '../constants';
import type { PassConfig } from '../controller/pass';
import { parseByteSize, parseDisk } from '../spec/quantity';
import { resolveResultsRoot } from '../plan/results';
import { registryConfigPath } from '../registry/config-path';
import type * as DesiredFor from '../plan/desired-for';
import { diskThresholds, type Floor } from '../plan/disk-pressure';
import type * as DockerEngine from '../engine/docker';
import type * as SwarmBackend from '../backend/swarm';
import type { Engine } from '../engine/types';
import { CallCounter, instrumentEngine } from '../engine/wrap';
import type * as Store from '../status/store';
import type { StatusStore } from '../status/store';
import { parseDuration } from '../util/duration';
import { createLogger, type LogFormat, type Logger } from '../util/log';
import type { Io } from './io';
import { liveLine } from './live-line';
import { defaultMaxRunning } from './max-running';
import { UsageError } from './usage';

export interface GlobalOptions {
  specs?: string;
  state?: string;
  resultsRoot?: string;
  instance?: string;
  logLevel?: string;
  logFormat?: LogFormat;
  /** The budget of one engine call, in ms. */
  engineTimeout?: number;
  /** `--backend`: one engine (default) or a swarm (src/backend). */
  backend?: 'engine' | 'swarm';
  /**
   * `--specs` was not given: an instance that follows a git source reads its specs from the
   * revision in force (`<state>/git/<instance>/current`). Not for reconcile, plan and
   * validate, which name their source.
   */
  followGitSource?: boolean;
  /**
   * berth.yaml's values (config.ts) as written, for commands that act on a setting without
   * taking its flag (`rerun` and `delete` start runs: `default-deadline`).
   */
  fileDefaults?: ReadonlyMap<string, unknown>;
}

export { UsageError, defaultMaxRunning };

export interface Context {
  specsDir: string;
  /** The specs folder is this commit of the git source (`--git`, or the revision in force). */
  revision?: string;
  stateDir: string;
  resultsRoot: string;
  instance: string;
  log: Logger;
  /** `--log-format`: with json every line on stderr is JSON (see diag.ts). */
  logFormat: LogFormat;
  io: Io;
  env: NodeJS.ProcessEnv;
  /** berth.yaml's values, as GlobalOptions.fileDefaults. */
  fileDefaults?: ReadonlyMap<string, unknown>;
  /** The engine, created on first use (validate never needs one). */
  engine(): Engine;
  calls: CallCounter;
  /** The instance's status records; `compact` (the controller, which keeps them): asked of the first call, which makes the store. */
  store(o?: { compact?: boolean }): StatusStore;
}

const INSTANCE_RE = /^[a-z0-9]([a-z0-9_.-]{0,30}[a-z0-9])?$/;

export function makeContext(g: GlobalOptions, io: Io, opts: { engine?: Engine; env?: NodeJS.ProcessEnv; log?: Logger } = {}): Context {
  const instance = g.instance ?? DEFAULTS.instance;
  if (!INSTANCE_RE.test(instance)) throw new UsageError(`--instance ${JSON.stringify(instance)}: use 1-32 lowercase letters, digits, '.', '_' or '-'`);
  const stateDir = path.resolve(g.state ?? DEFAULTS.stateDir);
  // On a terminal, log lines go above the live progress line (live-line.ts), never into it.
  const stream = io.isTTY ? liveLine(io).stream() : undefined;
  const log = opts.log ?? createLogger({ level: g.logLevel ?? 'info', format: g.logFormat ?? 'text', ...(stream ? { stream } : {}) });
  const calls = new CallCounter();
  const followed = g.followGitSource ? revisionInForce(path.join(stateDir, 'git', instance)) : undefined;
  let engine: Engine | undefined;
  let store: StatusStore | undefined;
  return {
    specsDir: followed?.dir ?? path.resolve(g.specs ?? DEFAULTS.specsDir),
    ...(followed ? { revision: followed.revision } : {}),
    stateDir,
    resultsRoot: resolveResultsRoot(stateDir, g.resultsRoot),
    instance,
    log,
    logFormat: g.logFormat ?? 'text',
    io,
    env: opts.env ?? process.env,
    ...(g.fileDefaults ? { fileDefaults: g.fileDefaults } : {}),
    calls,
    engine() {
      // dockerode (and its SSH and gRPC stacks) loads only for commands that talk to the engine
      engine ??= instrumentEngine(
        opts.engine ??
          (g.backend === 'swarm'
            ? (require('../backend/swarm') as typeof SwarmBackend).createSwarmBackend({
                timeoutMs: g.engineTimeout ?? DEFAULTS.engineTimeoutMs,
                env: opts.env ?? process.env,
              })
            : (require('../engine/docker') as typeof DockerEngine).createDockerEngine(undefined, {
                timeoutMs: g.engineTimeout ?? DEFAULTS.engineTimeoutMs,
                env: opts.env ?? process.env,
              })),
        calls.listener,
      );
      return engine;
    },
    store(o) {
      // loaded by the commands that read records, not by every one (issue 55)
      store ??= new (require('../status/store') as typeof Store).StatusStore(stateDir, instance, {
        warn: (m) => io.err(`berth: warning: ${m}\n`),
        ...(o?.compact ? { compact: true } : {}),
      });
      return store;
    },
  };
}

/** The revision in force of an instance's git source (`<state>/git/<instance>`), when it has one (the `current` link). */
function revisionInForce(root: string): { dir: string; revision: string } | undefined {
  try {
    const target = readlinkSync(path.join(root, GIT.current));
    const m = /^rev-([0-9a-f]{40,64})$/.exec(target);
    if (!m || !statSync(path.join(root, target)).isDirectory()) return undefined;
    return { dir: path.join(root, target), revision: m[1] as string };
  } catch {
    return undefined;
  }
}

/**
 * What every command's load of the specs takes besides the folders: `revision` when the specs are
 * a git revision; `keptNames`, the AttemptSet children's names of the old form the instance has
 * records under (kept: an upgrade renames no child, status/store.ts keptChildNames); and `cacheIn`,
 * the state folder, once it exists: the outcomes of unchanged spec files kept on disk
 * (spec/disk-cache.ts, as reconcile and plan keep them), so a `get` or `summary` after a reconcile
 * parses no YAML. A state folder that is not there yet is not made.
 */
export function specsOptions(ctx: Context): { revision?: string; keptNames?: ReadonlySet<string>; cacheIn?: string } {
  let cacheIn: string | undefined;
  try {
    if (statSync(ctx.stateDir).isDirectory()) cacheIn = ctx.stateDir;
  } catch {
    // no state folder: nothing kept
  }
  const kept = cacheIn !== undefined ? (require('../status/store') as typeof Store).keptChildNames(ctx.stateDir, ctx.instance) : new Set<string>();
  return {
    ...(ctx.revision !== undefined ? { revision: ctx.revision } : {}),
    ...(kept.size ? { keptNames: kept } : {}),
    ...(cacheIn !== undefined ? { cacheIn } : {}),
  };
}

export interface PassFlags {
  maxRunning?: number;
  concurrency?: number;
  attestIntervalMs?: number;
  retryBackoff?: number;
  infraRetries?: number;
  egressProxyImage?: string;
  egressNetwork?: string;
  allowEmpty?: boolean;
  logMaxBytes?: number;
  hashMaxBytes?: number;
  hashMaxSeconds?: number;
  /** `--fixture-cache-size`, in bytes (else BERTH_FIXTURE_CACHE_SIZE, else the default). */
  fixtureCacheSize?: number;
  /** `--default-deadline`, in ms. */
  defaultDeadline?: number;
  /** `--disk-pressure-free`, `--disk-pressure-inodes`. */
  diskPressureFree?: Floor;
  diskPressureInodes?: Floor;
  /** `--default-disk`, in bytes. */
  defaultDisk?: number;
  /** `--disk-interval`, in ms. */
  diskInterval?: number;
  /** `--max-pulls`, `--prefetch`, `--pull-retries`, `--registry-config`. */
  maxPulls?: number;
  prefetch?: number;
  pullRetries?: number;
  registryConfig?: string;
  /** `--max-builds`, `--build-timeout` (ms). */
  maxBuilds?: number;
  buildTimeout?: number;
  /** `--image-gc-high`, `--image-gc-low` (percent), `--image-gc-min-age` (ms). */
  imageGcHigh?: number;
  imageGcLow?: number;
  imageGcMinAge?: number;
}

/** A size from the environment, in the flags' grammar (spec/quantity.ts parseByteSize); undefined when unset or not one. */
function sizeOf(v: string | undefined): number | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  const parsed = parseByteSize(v);
  return parsed.ok ? parsed.bytes : undefined;
}

export function passConfig(ctx: Context, o: PassFlags): PassConfig {
  return {
    specsDir: ctx.specsDir,
    ...(ctx.revision !== undefined ? { revision: ctx.revision } : {}),
    stateDir: ctx.stateDir,
    resultsRoot: ctx.resultsRoot,
    instance: ctx.instance,
    maxRunning: o.maxRunning ?? defaultMaxRunning(),
    concurrency: o.concurrency ?? DEFAULTS.concurrency,
    attestIntervalMs: o.attestIntervalMs ?? 60_000,
    policy: runPolicy(ctx, o),
    ...(o.allowEmpty ? { allowEmpty: true } : {}),
    ...(o.diskInterval !== undefined ? { diskIntervalMs: o.diskInterval } : {}),
    fixtureCacheBytes: o.fixtureCacheSize ?? sizeOf(ctx.env.BERTH_FIXTURE_CACHE_SIZE) ?? DEFAULTS.fixtureCacheBytes,
    harvest: {
      logMaxBytes: o.logMaxBytes ?? DEFAULTS.logMaxBytes,
      hash: { maxBytes: o.hashMaxBytes ?? DEFAULTS.hashMaxBytes, maxSeconds: o.hashMaxSeconds ?? DEFAULTS.hashMaxSeconds },
    },
    disk: diskThresholds(
      { ...(o.diskPressureFree ? { free: o.diskPressureFree } : {}), ...(o.diskPressureInodes ? { inodes: o.diskPressureInodes } : {}) },
      ctx.env,
    ),
    env: ctx.env,
    log: ctx.log,
    desired: new (require('../plan/desired-for') as typeof DesiredFor).DesiredStates(),
    pull: {
      maxPulls: o.maxPulls ?? DEFAULTS.maxPulls,
      prefetch: o.prefetch ?? o.maxRunning ?? defaultMaxRunning(),
      retries: o.pullRetries ?? DEFAULTS.pullRetries,
      registryConfig: registryConfigPath(ctx.env, o.registryConfig),
    },
    build: { maxBuilds: o.maxBuilds ?? DEFAULTS.maxBuilds, timeoutMs: o.buildTimeout ?? DEFAULTS.buildTimeoutMs },
    imageGc: {
      highPercent: o.imageGcHigh ?? DEFAULTS.imageGcHighPercent,
      lowPercent: o.imageGcLow ?? DEFAULTS.imageGcLowPercent,
      minAgeMs: o.imageGcMinAge ?? DEFAULTS.imageGcMinAgeMs,
    },
  };
}

/**
 * The flags' decisions for every run (src/policy.ts), built once. `--default-deadline` and
 * `--default-disk`: without the flag (`rerun`, `delete`, which start runs too), BERTH_DEFAULT_DEADLINE
 * (a duration; else berth.yaml's `default-deadline`) and BERTH_DEFAULT_DISK (a disk quantity).
 */
export function runPolicy(ctx: Context, o: PassFlags): RunPolicy {
  const deadlineMs = o.defaultDeadline ?? parseDuration(ctx.env.BERTH_DEFAULT_DEADLINE || String(ctx.fileDefaults?.get('default-deadline') ?? ''));
  const diskBytes = o.defaultDisk ?? envDisk(ctx.env.BERTH_DEFAULT_DISK);
  return {
    ...(deadlineMs !== undefined ? { defaultDeadlineSeconds: deadlineMs / 1000 } : {}),
    ...(diskBytes !== undefined ? { defaultDiskBytes: diskBytes } : {}),
    ...(o.infraRetries !== undefined ? { infraRetries: o.infraRetries } : {}),
    ...(o.retryBackoff !== undefined ? { retryBaseMs: o.retryBackoff * 1000 } : {}),
    ...(o.egressProxyImage || o.egressNetwork
      ? { egress: { ...(o.egressProxyImage ? { proxyImage: o.egressProxyImage } : {}), ...(o.egressNetwork ? { network: o.egressNetwork } : {}) } }
      : {}),
  };
}

/** BERTH_DEFAULT_DISK when it is a disk quantity (commands without the flag: `rerun`, `delete`). */
function envDisk(v: string | undefined): number | undefined {
  if (v === undefined || v.trim() === '') return undefined;
  const parsed = parseDisk(/^[0-9]+$/.test(v.trim()) ? Number(v.trim()) : v.trim());
  return parsed.ok ? parsed.bytes : undefined;
}

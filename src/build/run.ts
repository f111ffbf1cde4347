/**
 * One build of one build hash, start to end (docs/CONTRACT.md "Images built from a Dockerfile"):
 *
 * 1. the build's engine-side lock (lock.ts): one build of a hash at a time across berths; another
 *    berth's build is waited for (its image then used);
 * 2. the image, if the engine holds it already (this hash's label on its tag): used, not built;
 *    a failure recorded for this hash (records.ts) and no `berth rerun` after it: not tried again;
 * 3. the build: the context packed as the engine reads it (pack/build-context.ts, its hash checked
 *    against the spec's), the engine's classic builder (engine/docker/builds.ts) with no network
 *    unless the spec's is `bridge`, the asking attempts' widest memory and CPU limits, the FROM
 *    images' credentials; its output into `<state>/builds/<hash>.log` (bounded), followed step by
 *    step (progress.ts);
 * 4. its limits, watched while it runs: `--build-timeout`; the widest `resources.disk` of its
 *    attempts (the writable layers of the steps' containers, as the engine counts them); the disk
 *    pressure mark of the engine's data root (`--disk-pressure-free`). Past one, the build is
 *    stopped (the request closed: the engine kills the step and removes its container);
 * 5. its end recorded (`<hash>.json`): built, or failed with BuildFailed's message (the
 *    Dockerfile line, the last output lines); what a failed build committed is removed.
 *
 * It decides nothing about attempts: the builder (controller/builder.ts) keeps what it reports,
 * the build gate (plan/build-gate.ts) reads it.
 */
import { createWriteStream, mkdirSync, type WriteStream } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, LABELS } from '../constants';
import { describeEngineError, isConflict, isNotFound } from '../engine/errors';
import { BuildError, type BuildOptions, type Engine } from '../engine/types';
import { readFs, type DiskReading } from '../observe/disk';
import type { BuildRequest } from '../plan/build-gate';
import { pressures, type DiskThresholds } from '../plan/disk-pressure';
import { ContextChangedError, contextTar } from '../pack/build-context';
import { buildSteps, parseDockerfile } from '../spec/dockerfile';
import { readBoundedSync } from '../spec/read-spec-file';
import { showBytes } from '../util/bytes';
import type { Clock } from '../util/clock';
import { tryBuildLock } from './lock';
import { BuildProgress } from './progress';
import { buildLogPath, buildsDir, readBuildRecord, writeBuildRecord, type BuildRecord } from './records';

export interface BuildRunOptions {
  engine: Engine;
  request: BuildRequest;
  stateDir: string;
  instance: string;
  clock: Clock;
  /** `--build-timeout` (ms). */
  timeoutMs: number;
  /** `--disk-pressure-free`: the build stops when the engine's data root falls below it (none: not watched). */
  pressure?: DiskThresholds;
  /** Where the engine keeps its data, when this host can read it (observe/disk.ts). */
  dataRoot?: () => Promise<string | undefined>;
  /**
   * The credential per registry of the FROM images (never logged): berth pulled them before the
   * build (plan/build-from.ts), so the builder only needs one for a FROM it must fetch itself (a
   * `--platform` the engine's copy is not of).
   */
  registryConfig?: BuildOptions['registryConfig'];
  /** berth is stopping: the build is given up (not recorded: the next berth builds it). */
  signal: AbortSignal;
  /** Where it is (the step under way), or who else builds it. */
  onProgress(p: { step?: string; elsewhere?: string }): void;
  /** How often another berth's lock is looked at again (ms). */
  pollMs?: number;
  /**
   * Takes the release of the build's lock once the build is recorded, so the next build need not
   * wait for it (the caller awaits it before it ends); none: the release is awaited here.
   */
  releasing?(release: Promise<void>): void;
}

export type BuildOutcome =
  | { type: 'built'; id: string; at: number }
  /** The engine held it already (built by another berth, or before). */
  | { type: 'present'; id: string }
  | { type: 'failed'; message: string; at: number }
  /** berth stopped before it ended: nothing recorded. */
  | { type: 'stopped' };

/** A FROM image went from the engine after its pull (another's removal): the build is not run, and not recorded; the next plan pulls it again. */
export class FromGoneError extends Error {
  constructor(readonly ref: string) {
    super(`FROM image ${ref} is no longer on the engine; it is pulled again before the build`);
    this.name = 'FromGoneError';
  }
}

/** Log bytes kept per build; past them the log says what was left out. */
const LOG_MAX_BYTES = DEFAULTS.logMaxBytes;

export async function runBuild(o: BuildRunOptions): Promise<BuildOutcome> {
  const { engine, request: r, clock } = o;
  // 1. one build of a hash at a time, across berths
  for (let round = 0; ; round++) {
    if (o.signal.aborted) return { type: 'stopped' };
    // the plan asked for it as the engine did not hold it: looked at again after a wait (built meanwhile by the lock's holder), and under the lock
    if (round > 0) {
      const present = await builtImage(engine, r);
      if (present) return { type: 'present', id: present };
    }
    const lock = await tryBuildLock(engine, r.hash, o.instance, () => clock.now());
    if (!lock.held) {
      o.onProgress({ elsewhere: lock.holder });
      try {
        await clock.sleep(o.pollMs ?? 1_000, o.signal);
      } catch {
        return { type: 'stopped' };
      }
      continue;
    }
    try {
      // 2. built meanwhile by the berth that held the lock before
      const now = await builtImage(engine, r);
      if (now) return { type: 'present', id: now };
      const rec = readBuildRecord(o.stateDir, r.hash);
      if (rec?.state === 'failed' && (r.rerunAt === undefined || r.rerunAt <= Date.parse(rec.at)))
        return { type: 'failed', message: rec.message ?? '', at: Date.parse(rec.at) };
      return await build(o);
    } finally {
      // after the record (build() writes it before it returns): a berth waiting for the lock finds the image or the failure
      const released = lock.release().catch(() => undefined);
      if (o.releasing) o.releasing(released);
      else await released;
    }
  }
}

/** The id of the image the engine holds under the request's tag with its hash's label, if it does. */
async function builtImage(engine: Engine, r: BuildRequest): Promise<string | undefined> {
  try {
    const i = await engine.images.inspect(r.tag);
    return i.labels[LABELS.build] === r.hash ? i.id : undefined;
  } catch (err) {
    if (isNotFound(err)) return undefined;
    throw err;
  }
}

/** A build's log: the output as it comes, without colour codes, at most LOG_MAX_BYTES. */
class BuildLog {
  private readonly out: WriteStream;
  private bytes = 0;
  private cut = false;
  constructor(file: string) {
    mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    this.out = createWriteStream(file, { mode: 0o600 });
  }
  write(text: string): void {
    if (this.cut) return;
    if (this.bytes + Buffer.byteLength(text) > LOG_MAX_BYTES) {
      this.cut = true;
      this.out.write(`\n[berth: the log stops here: past ${showBytes(LOG_MAX_BYTES)}]\n`);
      return;
    }
    this.bytes += Buffer.byteLength(text);
    this.out.write(text);
  }
  close(): Promise<void> {
    return new Promise((resolve) => this.out.end(resolve));
  }
}

async function build(o: BuildRunOptions): Promise<BuildOutcome> {
  const { engine, request: r, clock } = o;
  const b = r.build;
  const began = clock.now();
  const builds = engine.builds;
  const log = new BuildLog(buildLogPath(o.stateDir, r.hash));
  const end = async (outcome: { ok: true; id: string } | { ok: false; message: string }): Promise<BuildOutcome> => {
    const at = clock.now();
    const rec: BuildRecord = {
      hash: r.hash,
      tag: r.tag,
      state: outcome.ok ? 'built' : 'failed',
      at: new Date(at).toISOString(),
      ...(outcome.ok ? { id: outcome.id } : { message: outcome.message }),
      builder: builds?.builder ?? 'none',
      context: b.context,
      dockerfile: b.dockerfile,
      instance: o.instance,
      ms: at - began,
    };
    log.write(`\n# berth: ${outcome.ok ? `built ${r.tag} (${outcome.id})` : `build failed: ${outcome.message}`} after ${((at - began) / 1000).toFixed(1)} s\n`);
    await log.close();
    await writeBuildRecord(o.stateDir, rec);
    return outcome.ok ? { type: 'built', id: outcome.id, at } : { type: 'failed', message: outcome.message, at };
  };
  log.write(
    `# berth build ${r.hash}\n# image ${r.tag}; context ${b.context}; dockerfile ${b.dockerfile}${b.target ? `; target ${b.target}` : ''}; ` +
      `network ${b.network ? 'the engine default' : 'none'}; builder ${builds?.builder ?? 'none'}; for ${r.attempts.join(', ')}\n`,
  );
  if (!builds) return end({ ok: false, message: 'this backend cannot build images (it has no build API)' });
  // one label, the hash (the classic builder commits a step for each label; the build record names the instance)
  const labels = { [LABELS.build]: r.hash };
  // the steps the builder will number (one more per label), from the Dockerfile the context holds (its hash is checked as it is packed)
  let steps: ReturnType<typeof buildSteps> = [];
  try {
    const read = readBoundedSync(path.join(b.context, b.dockerfile), DEFAULTS.maxDockerfileBytes, true);
    const parsed = read.kind === 'read' ? parseDockerfile(read.bytes.toString('utf8')) : undefined;
    if (parsed?.ok) steps = buildSteps(parsed.file, b.target, Object.keys(labels).length);
  } catch {
    // read again as it is packed: a Dockerfile gone since the load fails the pack
  }
  // the FROM images were pulled by berth before the build was asked for (plan/build-from.ts): the builder pulls none of them
  for (const ref of b.from) {
    const held = await engine.images.inspect(ref).then(
      () => true,
      (err: unknown) => (isNotFound(err) ? false : Promise.reject(err)),
    );
    if (!held) {
      log.write(`\n# berth: FROM image ${ref} is no longer on the engine: pulled again by berth before the build\n`);
      await log.close();
      throw new FromGoneError(ref);
    }
  }
  const progress = new BuildProgress(steps);
  const ac = new AbortController();
  const stopped: { why?: string } = {};
  const stop = (why: string) => {
    stopped.why ??= why;
    ac.abort(new Error(why));
  };
  const onBerthStop = () => stop('berth stopped');
  o.signal.addEventListener('abort', onBerthStop, { once: true });
  const timer = clock.setTimeout(() => stop(`the build ran past --build-timeout (${Math.round(o.timeoutMs / 1000)} s)`), o.timeoutMs);
  const watch = watchDisk(o, progress, stop);
  try {
    const built = await builds.build(contextTar(b), {
      tag: r.tag,
      labels,
      dockerfile: b.dockerfile,
      args: b.args,
      ...(b.target ? { target: b.target } : {}),
      network: b.network ? 'default' : 'none',
      ...(r.limits.memoryBytes ? { memoryBytes: r.limits.memoryBytes } : {}),
      ...(r.limits.cpus ? { cpus: r.limits.cpus } : {}),
      ...(o.registryConfig ? { registryConfig: o.registryConfig } : {}),
      signal: ac.signal,
      onMessage: (m) => {
        if (m.stream) {
          const before = progress.step?.n;
          log.write(progress.take(m.stream));
          if (progress.step?.n !== before) o.onProgress({ ...(progress.where() ? { step: progress.where() as string } : {}) });
        }
        if (m.errorDetail || m.error) log.write(`${m.errorDetail?.message ?? m.error ?? ''}\n`);
      },
    });
    return await end({ ok: true, id: built.id });
  } catch (err) {
    if (stopped.why === 'berth stopped') {
      log.write('\n# berth: stopped (berth is stopping); built again by the next berth\n');
      await log.close();
      await removeCommitted(engine, progress);
      return { type: 'stopped' };
    }
    const why =
      stopped.why ??
      (err instanceof BuildError ? err.text : err instanceof ContextChangedError ? err.message : `the engine's build failed: ${describeEngineError(err)}`);
    await removeCommitted(engine, progress);
    return await end({ ok: false, message: progress.failure(b.dockerfile, why) });
  } finally {
    clock.clearTimeout(timer);
    watch.close();
    o.signal.removeEventListener('abort', onBerthStop);
  }
}

/**
 * Watches the build's disk while it runs (every DEFAULTS.buildDiskIntervalMs): the writable layer
 * of the step under way (as the engine counts it) plus what the finished steps wrote, against the
 * widest resources.disk of its attempts; and the engine's data root against the pressure mark.
 */
function watchDisk(o: BuildRunOptions, progress: BuildProgress, stop: (why: string) => void): { close(): void } {
  const limit = o.request.limits.diskBytes;
  const local = o.engine.local;
  if ((limit === null || !local) && (!o.pressure || !o.dataRoot)) return { close: () => undefined };
  let closed = false;
  let handle = o.clock.setTimeout(tick, DEFAULTS.buildDiskIntervalMs);
  /** The last count of each step's container. */
  const steps = new Map<string, number>();
  async function tick(): Promise<void> {
    if (closed) return;
    try {
      const c = progress.container;
      if (limit !== null && local && c) {
        const bytes = await local.writableBytes(c).catch(() => undefined);
        if (bytes !== undefined) steps.set(c, bytes);
        const total = [...steps.values()].reduce((a, x) => a + x, 0);
        if (total > limit) return stop(`the build wrote ${showBytes(total)}, more than its disk limit ${showBytes(limit)} (resources.disk, or --default-disk)`);
      }
      if (o.pressure && o.dataRoot) {
        const at = await o.dataRoot().catch(() => undefined);
        const reading: DiskReading | undefined = at ? await readFs('engine-data-root', at) : undefined;
        const p = reading ? pressures({ readings: [reading], thresholds: o.pressure }) : [];
        if (p.length) return stop(`the build was stopped: disk pressure: ${p.join('; ')}`);
      }
    } finally {
      if (!closed) handle = o.clock.setTimeout(tick, DEFAULTS.buildDiskIntervalMs);
    }
  }
  return {
    close: () => {
      closed = true;
      o.clock.clearTimeout(handle);
    },
  };
}

/**
 * What a build that did not finish committed itself (its steps' images, never a cache hit's or a
 * base's): the newest removed, which removes its untagged parents with it, as long as nothing else
 * uses them (an image with a tag, a container or another child stays: the engine refuses).
 */
async function removeCommitted(engine: Engine, progress: BuildProgress): Promise<void> {
  const last = progress.committed.at(-1);
  if (!last) return;
  try {
    const i = await engine.images.inspect(last);
    if (i.tags.length === 0) await engine.images.remove(i.id);
  } catch (err) {
    if (!isNotFound(err) && !isConflict(err)) throw err;
  }
}

export { buildsDir };

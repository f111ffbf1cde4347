/**
 * The executor runs a plan: attempts in parallel (bounded by --concurrency), each attempt's
 * operations in order. An operation's meaning is fixed by its type (plan/types.ts); some still
 * decide on what the engine answers (a name held on create: attest, block or recreate; a
 * sidecar that does not come up; what counts as a provisioning failure), which issue 13 moves
 * into the planner. One failing attempt never stops the others. It writes the attempts' status
 * records; the controller adds only a failed action's `lastError`.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, LABELS, REASONS } from '../constants';
import { attestInspected, failedCause, mainWant, sidecarWant } from '../attest/checks';
import type { DesiredAttempt } from '../desired/types';
import { engineTime } from '../engine/time';
import { BackendRefusedError, describeEngineError, isConflict, isNotFound, statusOf } from '../engine/errors';
import type { ContainerDetails, Engine } from '../engine/types';
import { exitOutcome, isInfraFailure, mayBeEngineDeath } from '../plan/exit-outcome';
import type { AttemptAction, Operation, Outcome, Plan } from '../plan/types';
import type { StatusStore } from '../status/store';
import { isCode } from '../status/atomic-file';
import type { Attestation, AttemptStatus, EngineBoot } from '../status/types';
import type { Logger } from '../util/log';
import { runBounded } from '../util/pool';
import { containerOwnership, imageLabels, labelOwnership, recordedContainers, stampNonce, type Ownership } from '../ownership';
import { parseListeningLine } from '../proxy/contract';
import { fixtureTar, secretsTar } from './archive';
import { DEFAULT_LIMITS, harvest, type HarvestLimits, type SidecarLogs } from './harvest';
import { readScore } from './score';
import { readSecrets, SecretError, secretEnvLines } from './secrets';
import { isInside } from '../spec/path-util';
import { assertFoldersBelow, mkdirBelow, UnsafePathError } from '../util/no-follow';

export interface ExecutorDeps {
  engine: Engine;
  store: StatusStore;
  instance: string;
  concurrency: number;
  log: Logger;
  /** Where fromEnv secrets are read. */
  env: NodeJS.ProcessEnv;
  /** The results root: run folders below it are made and checked without following a link. */
  resultsRoot?: string;
  now?: () => number;
  /** The harvest's log cap and hashing budget (DEFAULTS unless the flags say). */
  harvest?: HarvestLimits;
  /** Berth stopping: interrupts a harvest's hashing (the run's harvest is done again later). */
  signal?: AbortSignal;
}

export interface ActionResult {
  attempt: string;
  ok: boolean;
  /** Operations done before it stopped. */
  done: number;
  error?: string;
}

/** An operation asks to stop the rest of its action (blocked, failed attestation): not an error. */
class Halt extends Error {}

const iso = (ms: number) => new Date(ms).toISOString();


/**
 * The folder below which berth makes and checks a run's folders without following a link: the
 * results root when `dir` lies inside it, else the attempt's results folder (a record made under
 * another --results-root).
 */
function resultsBase(root: string | undefined, dir: string): string {
  if (root !== undefined && isInside(path.resolve(root), path.resolve(dir))) return path.resolve(root);
  return path.dirname(path.dirname(path.resolve(dir)));
}

/**
 * Makes a run's folder and its results folder, one component at a time below the results root,
 * refusing a link anywhere (UnsafePathError): nothing an attempt planted can redirect them. The
 * run folder is made exclusively: a run never writes into a folder an earlier run (or another
 * state folder) left, unless it is resuming its own provisioning. The planner gives the next run
 * a number above it (see runFloor).
 */
async function makeRunFolder(root: string | undefined, resultsDir: string, resuming: boolean, owner: { uid: number; gid: number } | null): Promise<void> {
  const base = resultsBase(root, resultsDir);
  const runFolder = path.dirname(resultsDir);
  // The results root itself is the user's (it may be a link of their own): made as it is given.
  await fs.mkdir(base, { recursive: true });
  try {
    await mkdirBelow(base, runFolder, { exclusiveLast: true });
  } catch (err) {
    if (!isCode(err, 'EEXIST')) throw err;
    if (!resuming) throw new Error(`results folder ${runFolder} already exists: a run never reuses one; the next pass picks a new run number`);
  }
  // spec.user: the attempt's own folder (the bind at /results) is its user's, so it can write there.
  await mkdirBelow(base, resultsDir, owner ? { owner } : {});
}

function assertNever(x: never): never {
  throw new Error(`unknown operation ${JSON.stringify(x)}`);
}

export class Executor {
  private readonly now: () => number;
  /** The engine's boot as first seen by this executor (one pass): recorded before starts. */
  private boot: Promise<EngineBoot | undefined> | undefined;
  constructor(private readonly deps: ExecutorDeps) {
    this.now = deps.now ?? Date.now;
  }

  /**
   * The boot recorded before a start (Engine.boot): looked up once per executor. A boot from
   * earlier in the pass is as good as a fresh one for the rule (it is at or before the start;
   * see plan/exit-outcome.ts). Never fails a start: an unknown boot is recorded as none.
   */
  private bootForStart(): Promise<EngineBoot | undefined> {
    this.boot ??= (this.deps.engine.boot?.() ?? Promise.resolve(undefined)).then(
      (b) => {
        if (!b) this.boot = undefined; // not kept: the next start asks again
        return b;
      },
      () => {
        this.boot = undefined;
        return undefined;
      },
    );
    return this.boot;
  }

  async run(plan: Plan): Promise<ActionResult[]> {
    const actions = plan.actions.filter((a) => a.ops.length > 0);
    const settled = await runBounded(actions, this.deps.concurrency, (a) => this.runAction(a));
    return settled.map((s, i) =>
      s.status === 'fulfilled' ? s.value : { attempt: actions[i]?.attempt ?? '?', ok: false, done: 0, error: String(s.reason) },
    );
  }

  async runAction(a: AttemptAction): Promise<ActionResult> {
    let done = 0;
    const log = this.deps.log.child({ attempt: a.attempt });
    for (const op of a.ops) {
      log.debug(`${op.type} ${op.resource}`, { cause: op.cause });
      try {
        await this.op(a, op);
        done++;
      } catch (err) {
        if (err instanceof Halt) {
          log.info(`stopped after ${op.type} ${op.resource}: ${err.message}`);
          return { attempt: a.attempt, ok: true, done };
        }
        if (err instanceof BackendRefusedError) {
          // refused, never weakened (a swarm with no node that enforces what the attempt needs)
          log.info(`blocked at ${op.type} ${op.resource}: ${err.message}`);
          await this.update(a, (r) => ({ ...r, phase: 'Blocked', reason: err.reason, message: err.message }));
          return { attempt: a.attempt, ok: true, done };
        }
        const msg = err instanceof SecretError || err instanceof UnsafePathError ? err.message : describeEngineError(err);
        log.error(`${op.type} ${op.resource} failed: ${msg}`);
        if (err instanceof UnsafePathError && (op.type === 'create-container' || op.type === 'create-sidecar')) {
          // A path berth would read or write for the attempt holds a link now: nothing is followed; it waits Blocked.
          await this.update(a, (r) => ({ ...r, phase: 'Blocked', reason: REASONS.unsafePath, message: msg })).catch(() => undefined);
          return { attempt: a.attempt, ok: false, done, error: `${op.type} ${op.resource}: ${msg}` };
        }
        await this.recordFailure(a, op, msg, err).catch(() => undefined);
        return { attempt: a.attempt, ok: false, done, error: `${op.type} ${op.resource}: ${msg}` };
      }
    }
    return { attempt: a.attempt, ok: true, done };
  }

  private async op(a: AttemptAction, op: Operation): Promise<void> {
    const { engine } = this.deps;
    switch (op.type) {
      case 'create-volume':
        // The engine answers a create of a volume name that exists with that volume (not 409): whose is it?
        await engine.volumes.create(op.volume).catch((err: unknown) => {
          if (!isConflict(err)) throw err;
        });
        return this.ownedOrBlock(a, 'volume', (await engine.volumes.inspect(op.volume.name)).labels);
      case 'create-network':
        return this.createOrAttest(a, 'network', () => engine.networks.create(op.network), async () => (await engine.networks.inspect(op.network.name)).labels);
      case 'create-container':
        return this.createContainer(a, op.desired);
      case 'create-sidecar':
        return this.createSidecar(a, op.desired, op.index, op.restart ?? false);
      case 'start':
        return this.start(a, op.desired);
      case 'attest':
        return this.attest(a, op.id, op.desired);
      case 'adopt':
        return this.adopt(a, op.id, op.desired);
      case 'stop':
        return engine.containers.stop(op.id, op.graceSeconds);
      case 'finish':
        return this.finish(a, op.id, op.resultsDir, op.outcome, op.sidecars, op.score);
      case 'harvest':
        return this.harvest(a, op.id, op.resultsDir, op.sidecars);
      case 'remove-container':
        await engine.containers.remove(op.id);
        return;
      case 'remove-network':
        await engine.networks.remove(op.id);
        return;
      case 'remove-volume':
        await engine.volumes.remove(op.id);
        return;
      case 'record':
        await this.update(a, (r) => {
          const d = a.desired;
          const base = d && op.patch.run === d.run && r.run !== d.run ? this.beginRun(r, d) : r;
          return { ...base, ...op.patch };
        });
        return;
      case 'forget':
        await this.deps.store.remove(a.attempt);
        return;
      default:
        return assertNever(op);
    }
  }

  /** The status record of the action's attempt, or a fresh one. */
  private async current(a: AttemptAction): Promise<AttemptStatus> {
    const rec = await this.deps.store.get(a.attempt);
    if (rec) return rec;
    const d = a.desired;
    return {
      name: a.attempt,
      instance: this.deps.instance,
      phase: 'Pending',
      specHash: d?.hash ?? '',
      ...(d ? { source: d.loaded.relFile } : {}),
      ...(d?.loaded.revision ? { revision: d.loaded.revision } : {}),
      run: d?.run ?? 0,
      retriesUsed: 0,
      createdAt: iso(this.now()),
      history: [],
      updatedAt: iso(this.now()),
    };
  }

  private async update(a: AttemptAction, f: (r: AttemptStatus) => AttemptStatus): Promise<AttemptStatus> {
    const next = f(await this.current(a));
    await this.deps.store.put(next);
    return next;
  }

  /** Creates a network; a name already taken (409) is fine when it is ours, else the attempt is Blocked. */
  private async createOrAttest(a: AttemptAction, kind: string, create: () => Promise<unknown>, labelsOfExisting: () => Promise<Record<string, string>>): Promise<void> {
    try {
      await create();
    } catch (err) {
      if (!isConflict(err)) throw err;
      await this.ownedOrBlock(a, kind, await labelsOfExisting());
    }
  }

  private async ownedOrBlock(a: AttemptAction, kind: string, labels: Record<string, string>): Promise<void> {
    const o = labelOwnership(labels, this.deps.instance);
    if (o.owned && o.attempt === a.attempt) return;
    const msg = o.owned
      ? `${kind} name needed by attempt ${a.attempt} is held by a ${kind} of attempt ${o.attempt}; it is left alone`
      : `${kind} name needed by attempt ${a.attempt} is held by a ${kind} berth does not own (${o.why}); it is left alone`;
    await this.block(a, msg);
  }

  /**
   * A container create met 409: undefined when the container holding `name` is this attempt's
   * (by the ownership rule, src/ownership.ts), else what holds it (it is left alone).
   */
  private async nameHeld(a: AttemptAction, name: string, existing: ContainerDetails): Promise<string | undefined> {
    const [images, records] = await Promise.all([this.deps.engine.images.list([LABELS.managed]), this.deps.store.loadAll()]);
    const o: Ownership = containerOwnership(existing, { instance: this.deps.instance, labeledImages: imageLabels(images), recorded: recordedContainers(records.values()) });
    if (o.owned && o.attempt === a.attempt) return undefined;
    const held = `container name ${name} is held by container ${existing.id.slice(0, 12)}`;
    return o.owned ? `${held} of attempt ${o.attempt}; it is left alone` : `${held} that berth did not create (${o.why}); it is left alone`;
  }

  private async block(a: AttemptAction, msg: string): Promise<never> {
    await this.update(a, (r) => ({ ...r, phase: 'Blocked', reason: REASONS.nameConflict, message: msg }));
    throw new Halt(msg);
  }

  /** A new run begins: earlier run moves to history, counters set. */
  private beginRun(r: AttemptStatus, d: DesiredAttempt): AttemptStatus {
    if (r.run === d.run && r.specHash === d.hash) return r;
    const history = [...r.history];
    if (r.run > 0 && (r.startedAt || r.finishedAt)) {
      history.push({
        run: r.run,
        specHash: r.specHash,
        phase: r.phase,
        ...(r.reason ? { reason: r.reason } : {}),
        ...(r.message ? { message: r.message } : {}),
        ...(r.exitCode !== undefined ? { exitCode: r.exitCode } : {}),
        ...(r.startedAt ? { startedAt: r.startedAt } : {}),
        ...(r.finishedAt ? { finishedAt: r.finishedAt } : {}),
        ...(r.resultsDir ? { resultsDir: r.resultsDir } : {}),
      });
    }
    const sameSpec = r.specHash === d.hash;
    // `berth rerun` asks for a run afresh: no retry is counted, the budgets start again.
    const rerun = sameSpec && r.rerunRequested?.run === r.run;
    const failedRetry = sameSpec && r.phase === 'Failed' && !rerun;
    // The planner re-runs an infrastructure death under --infra-retries: it is counted there.
    const infraRetry = failedRetry && isInfraFailure(r.reason);
    const infraUsed = sameSpec ? (r.infraRetriesUsed ?? 0) : 0;
    return {
      name: r.name,
      instance: r.instance,
      phase: 'Pending',
      specHash: d.hash,
      source: d.loaded.relFile,
      ...(d.loaded.revision ? { revision: d.loaded.revision } : {}),
      run: d.run,
      retriesUsed: failedRetry && !infraRetry ? r.retriesUsed + 1 : sameSpec && !rerun ? r.retriesUsed : 0,
      ...((infraRetry || infraUsed) && !rerun ? { infraRetriesUsed: infraUsed + (infraRetry ? 1 : 0) } : {}),
      createdAt: r.createdAt,
      history,
      updatedAt: r.updatedAt,
    };
  }

  /**
   * Makes the run's folder, then records the provisioning intent of run `d.run` (before any
   * engine side effect of it). A berth killed between the two leaves an empty folder, which the
   * next run steps over; once the intent is recorded, the folder is this run's to resume.
   */
  private async recordIntent(a: AttemptAction, d: DesiredAttempt): Promise<void> {
    const before = await this.current(a);
    // The folder is this run's own when the record already gave it to this run (an interrupted or
    // refused provisioning of the same run), as the planner's run floors count it (runFloor's `own`).
    const own = (before.intent?.run === d.run && before.intent.specHash === d.hash) || (before.run === d.run && before.specHash === d.hash && before.resultsDir === d.resultsDir);
    await makeRunFolder(this.deps.resultsRoot, d.resultsDir, own, d.loaded.spec.user);
    await this.update(a, (r) => {
      const begun = this.beginRun(r, d);
      return {
        ...begun,
        phase: 'Pending',
        reason: REASONS.provisioning,
        intent: { action: 'provision', run: d.run, specHash: d.hash, at: iso(this.now()) },
        // A resumed provisioning of the same run keeps when it first began (a new run has none yet).
        provisionedAt: begun.provisionedAt ?? iso(this.now()),
        resultsDir: d.resultsDir,
      };
    });
  }

  /** The named secrets' values; one that cannot be read makes the attempt Blocked (SecretMissing). */
  private async secretsOrBlock(a: AttemptAction, d: DesiredAttempt, names: readonly string[]): Promise<{ name: string; value: Buffer }[]> {
    try {
      return await readSecrets(d.loaded.spec, this.deps.env, names);
    } catch (err) {
      if (!(err instanceof SecretError)) throw err;
      await this.update(a, (r) => ({ ...r, phase: 'Blocked', reason: REASONS.secretMissing, message: err.message }));
      throw new Halt(err.message);
    }
  }

  private async createContainer(a: AttemptAction, d: DesiredAttempt): Promise<void> {
    const { engine } = this.deps;
    const spec = d.loaded.spec;
    // Intent first: a berth killed from here on resumes this run, never starts a second one.
    await this.recordIntent(a, d);
    const secrets = await this.secretsOrBlock(a, d, d.mainSecrets);
    const create = stampNonce({ ...d.container.create, env: [...d.container.create.env, ...secretEnvLines(spec.secretEnv, secrets)] });
    // The fixture is read now, before the engine holds anything: one swapped for a link since it
    // was checked is refused. With spec.user, the working dir and the fixture are that user's (the
    // working dir is sent even without a fixture, unless the root filesystem is read-only: the
    // engine copies nothing into one).
    const owner = spec.user ?? { uid: 0, gid: 0 };
    const workdir = spec.fixture !== null || (spec.user !== null && !spec.readOnlyRootFilesystem);
    const fixture = workdir ? await fixtureTar(spec.fixture, spec.workingDir, owner.uid, owner.gid) : undefined;
    try {
      // The bind source, right before the engine is asked to mount it: no link anywhere below the results root.
      await assertFoldersBelow(resultsBase(this.deps.resultsRoot, d.resultsDir), d.resultsDir);
      let id: string;
      try {
        id = await engine.containers.create(create);
      } catch (err) {
        if (!isConflict(err)) throw err;
        // The name is taken: ours (a retried create) → attest it; anyone else's → Blocked, untouched.
        const existing = await engine.containers.inspect(d.container.name);
        const held = await this.nameHeld(a, d.container.name, existing);
        if (held) await this.block(a, held);
        const bad = failedCause(attestInspected(existing, mainWant(d)));
        if (bad) {
          await engine.containers.remove(existing.id);
          throw new Error(`existing container ${d.container.name} did not attest and was removed: ${bad}`);
        }
        id = existing.id;
      }
      await this.update(a, (r) => ({ ...r, containerId: id }));
      if (fixture) await engine.containers.putArchive(id, '/', fixture.body());
      if (secrets.length) {
        const { uid, gid } = spec.user ?? (await this.containerUser(spec.image));
        await engine.containers.putArchive(id, '/', await secretsTar(secrets, DEFAULTS.secretsDir, uid, gid));
      }
      const warnings = Object.keys(spec.secretEnv).map(
        (k) =>
          `secret ${spec.secretEnv[k]} is exposed as environment variable ${k}: anyone who can inspect the container can read it, and the engine's own database may keep it on disk after the container is removed`,
      );
      // Recorded before the start is asked for: a berth killed from here on only needs to start it.
      // The engine's boot too: an engine restart from here on is told from the task's own failure by it.
      const boot = await this.bootForStart();
      await this.update(a, (r) => ({
        ...r,
        ...(r.intent ? { intent: { ...r.intent, copied: true } } : {}),
        ...(warnings.length ? { warnings } : {}),
        ...(boot ? { engineBoot: boot } : {}),
      }));
    } finally {
      // a fixture spooled to a temp file: removed once copied in (or not needed any more)
      await fixture?.dispose();
    }
  }

  /**
   * A sidecar: created on the attempt's internal network under its alias, attached to its other
   * networks, given its secrets, started, and waited for: the egress proxy until its `listening`
   * line, a sidecar until it has stayed up a moment. One that does not come up fails the attempt
   * (the main container never starts without it); one restarted while the attempt runs is noted.
   */
  private async createSidecar(a: AttemptAction, d: DesiredAttempt, index: number, restart: boolean): Promise<void> {
    const { engine } = this.deps;
    const sc = d.sidecars[index];
    if (!sc) throw new Error(`no sidecar ${index} in the desired state of ${d.name}`);
    if (!restart) await this.recordIntent(a, d);
    const secrets = await this.secretsOrBlock(a, d, sc.secrets);
    const create = stampNonce({ ...sc.create, env: [...sc.create.env, ...secretEnvLines(sc.secretEnv, secrets)] });
    let id: string;
    try {
      id = await engine.containers.create(create);
    } catch (err) {
      if (!isConflict(err)) throw err;
      // Ours (an earlier try's) → made again; anyone else's → untouched, and the attempt is Blocked,
      // or, while it runs (a restart), ends as when its sidecar does not come back up.
      const existing = await engine.containers.inspect(sc.name);
      const held = await this.nameHeld(a, sc.name, existing);
      if (held && !restart) await this.block(a, held);
      if (held) {
        const msg = `${sc.role === 'egress-proxy' ? 'egress proxy' : `sidecar ${sc.alias}`} cannot be started again: ${held}`;
        const main = (await this.current(a)).containerId;
        if (main) await engine.containers.stop(main, DEFAULTS.stopGraceSeconds);
        await this.finish(a, main, d.resultsDir, { phase: 'Failed', reason: sc.role === 'egress-proxy' ? REASONS.proxyFailed : REASONS.sidecarFailed, message: msg });
        throw new Halt(msg);
      }
      await engine.containers.remove(existing.id);
      id = await engine.containers.create(create);
    }
    for (const net of sc.expectedNetworks) {
      if (net !== sc.create.host.networkMode) await engine.networks.connect(net, id);
    }
    if (secrets.length) {
      const { uid, gid } = await this.containerUser(sc.create.image);
      await engine.containers.putArchive(id, '/', await secretsTar(secrets, DEFAULTS.secretsDir, uid, gid));
    }
    const problem = await this.startAndWait(id, sc.ready);
    const checks = problem ? [] : attestInspected(await engine.containers.inspect(id), sidecarWant(sc));
    const bad = problem ?? failedCause(checks);
    if (bad) {
      const msg = `${sc.role === 'egress-proxy' ? 'egress proxy' : `sidecar ${sc.alias}`} ${bad}`;
      const main = restart ? (await this.current(a)).containerId : undefined;
      if (main) await engine.containers.stop(main, DEFAULTS.stopGraceSeconds);
      await this.finish(a, main, d.resultsDir, { phase: 'Failed', reason: sc.role === 'egress-proxy' ? REASONS.proxyFailed : REASONS.sidecarFailed, message: msg }, [
        { alias: sc.alias, role: sc.role, id },
      ]);
      throw new Halt(msg);
    }
    if (restart) {
      await this.update(a, (r) => ({ ...r, warnings: [...(r.warnings ?? []), `${iso(this.now())}: ${sc.alias} was restarted while the attempt ran`] }));
    }
  }

  /** Starts a container and waits until it is ready; returns what went wrong, or undefined. */
  private async startAndWait(id: string, ready: 'listening' | 'running'): Promise<string | undefined> {
    const { engine } = this.deps;
    await engine.containers.start(id);
    if (ready === 'listening') {
      const deadline = DEFAULTS.egressProxyReadySeconds * 1000;
      const stream = await engine.containers.logs(id, { follow: true });
      const seen = await new Promise<string | undefined>((resolve) => {
        let buf = '';
        const t = setTimeout(() => done(`did not say it was listening within ${DEFAULTS.egressProxyReadySeconds} s`), deadline);
        const done = (v: string | undefined) => {
          clearTimeout(t);
          stream.destroy();
          resolve(v);
        };
        stream.on('data', (c: Buffer) => {
          buf += c.toString('utf8');
          for (const line of buf.split('\n').slice(0, -1)) if (parseListeningLine(line)) return done(undefined);
          buf = buf.slice(buf.lastIndexOf('\n') + 1);
        });
        stream.on('end', () => done('exited before it said it was listening'));
        stream.on('error', (err: Error) => done(`log stream failed: ${err.message}`));
      });
      if (seen) {
        const st = await engine.containers.inspect(id).catch(() => undefined);
        return st && !st.runState.running ? `${seen} (exit code ${st.runState.exitCode})` : seen;
      }
      return undefined;
    }
    await new Promise((r) => setTimeout(r, DEFAULTS.sidecarSettleMs));
    const st = await engine.containers.inspect(id);
    return st.runState.running ? undefined : `exited right after its start (exit code ${st.runState.exitCode})`;
  }

  /** The numeric uid/gid the image runs as (root unless the image says a numeric user). */
  private async containerUser(image: string): Promise<{ uid: number; gid: number }> {
    const user = (await this.deps.engine.images.inspect(image)).user;
    const m = /^(\d+)(?::(\d+))?$/.exec(user);
    return m ? { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) } : { uid: 0, gid: 0 };
  }

  /**
   * Deep attestation of a run: the main container and every sidecar by inspect, and the
   * topology by network inspect: exactly the attempt's containers on its internal network, and
   * the proxy alone on the egress network berth made for it.
   */
  private async attestation(details: ContainerDetails, d: DesiredAttempt): Promise<Attestation> {
    const { engine } = this.deps;
    const checks = attestInspected(details, mainWant(d));
    for (const sc of d.sidecars) {
      const o = await engine.containers.inspect(sc.name).catch((err: unknown) => {
        if (isNotFound(err)) return undefined;
        throw err;
      });
      if (!o) {
        checks.push({ name: `${sc.alias}`, ok: false, detail: `${sc.alias}: container ${sc.name} is missing` });
        continue;
      }
      checks.push(...attestInspected(o, sidecarWant(sc)).map((c) => ({ ...c, name: `${sc.alias}: ${c.name}`, detail: `${sc.alias}: ${c.detail}` })));
    }
    const ids = async (names: string[]) => (await Promise.all(names.map((n) => engine.containers.inspect(n).then((c) => c.id, () => n)))).sort();
    if (d.network) {
      const members = [d.container.name, ...d.sidecars.map((sc) => sc.name)];
      const want = await ids(members);
      const net = await engine.networks.inspect(d.network.name);
      const extra = net.containers.filter((c) => !want.includes(c));
      checks.push({
        name: 'topology',
        ok: net.internal && extra.length === 0,
        detail: !net.internal
          ? `${net.name} is not internal`
          : extra.length
            ? `${net.name} holds containers that are not the attempt's: ${extra.map((x) => x.slice(0, 12)).join(', ')}`
            : `${net.name} is internal and holds only the attempt's ${members.length} container${members.length === 1 ? '' : 's'}`,
      });
    }
    const proxy = d.sidecars.find((sc) => sc.role === 'egress-proxy');
    if (proxy && d.egressNetwork) {
      const want = await ids([proxy.name]);
      const net = await engine.networks.inspect(d.egressNetwork.name);
      const extra = net.containers.filter((c) => !want.includes(c));
      checks.push({
        name: 'egress topology',
        ok: extra.length === 0,
        detail: extra.length ? `${net.name} holds containers besides the proxy: ${extra.map((x) => x.slice(0, 12)).join(', ')}` : `the proxy is the only container on ${net.name}`,
      });
    }
    return { at: iso(this.now()), depth: 'inspect', ok: checks.every((c) => c.ok), checks };
  }

  private async start(a: AttemptAction, d: DesiredAttempt): Promise<void> {
    const { engine } = this.deps;
    const rec = await this.current(a);
    const id = rec.containerId ?? d.container.name;
    const boot = rec.engineBoot ?? (await this.bootForStart());
    await engine.containers.start(id);
    const details = await engine.containers.inspect(id);
    // The engine's clock, never berth's: startedAt, finishedAt and durations are results.
    const startedMs = engineTime(details.runState.startedAt) ?? this.now();
    const deadline = d.loaded.spec.deadlineSeconds;
    const att = await this.attestation(details, d);
    const { intent: _intent, reason: _reason, message: _message, startFailure: _sf, ...rest } = rec;
    await this.deps.store.put({
      ...rest,
      ...(boot ? { engineBoot: boot } : {}),
      phase: 'Running',
      containerId: details.id,
      startedAt: iso(startedMs),
      ...(deadline !== null ? { deadlineAt: iso(startedMs + deadline * 1000) } : {}),
      lastAttestation: att,
    });
    if (!att.ok) await this.failAttestation(a, details.id, failedCause(att.checks) ?? 'attestation failed', d);
  }

  private async failAttestation(a: AttemptAction, id: string, cause: string, d?: DesiredAttempt): Promise<never> {
    const { engine } = this.deps;
    await engine.containers.stop(id, DEFAULTS.stopGraceSeconds);
    const sidecars: SidecarLogs[] = [];
    for (const sc of d?.sidecars ?? []) {
      const o = await engine.containers.inspect(sc.name).catch(() => undefined);
      if (!o) continue;
      await engine.containers.stop(o.id, 5);
      sidecars.push({ alias: sc.alias, role: sc.role, id: o.id });
    }
    await this.finish(a, id, undefined, { phase: 'Failed', reason: REASONS.attestationFailed, message: cause }, sidecars);
    throw new Halt(cause);
  }

  private async attest(a: AttemptAction, id: string, d: DesiredAttempt): Promise<void> {
    const details = await this.deps.engine.containers.inspect(id);
    const att = await this.attestation(details, d);
    await this.update(a, (r) => ({ ...r, lastAttestation: att }));
    if (!att.ok) await this.failAttestation(a, id, failedCause(att.checks) ?? 'attestation failed', d);
  }

  private async adopt(a: AttemptAction, id: string, d: DesiredAttempt): Promise<void> {
    const boot = await this.bootForStart();
    const details = await this.deps.engine.containers.inspect(id);
    const startedMs = engineTime(details.runState.startedAt) ?? this.now();
    const deadline = d.loaded.spec.deadlineSeconds;
    const att = await this.attestation(details, d);
    await this.update(a, (r) => {
      const { intent: _i, reason: _r, message: _m, startFailure: _sf, ...rest } = this.beginRun(r, d);
      return {
        ...rest,
        // a run adopted under this boot (one adopted again keeps the boot it was started under)
        ...(rest.engineBoot ?? boot ? { engineBoot: rest.engineBoot ?? boot } : {}),
        phase: 'Running',
        containerId: id,
        resultsDir: d.resultsDir,
        startedAt: iso(startedMs),
        ...(deadline !== null ? { deadlineAt: iso(startedMs + deadline * 1000) } : {}),
        lastAttestation: att,
      };
    });
    if (!att.ok) await this.failAttestation(a, id, failedCause(att.checks) ?? 'attestation failed', d);
  }

  /** Reads the end from the engine (exit code, OOM) unless the plan forces an outcome; harvests; records. */
  private async finish(
    a: AttemptAction,
    id: string | undefined,
    resultsDir: string | undefined,
    forced: Outcome | undefined,
    sidecars: SidecarLogs[] = [],
    scoreFile?: string,
  ): Promise<void> {
    let details: ContainerDetails | undefined;
    if (id) {
      try {
        details = await this.deps.engine.containers.inspect(id);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    const st = details?.runState;
    const exitCode = st && !st.running ? st.exitCode : undefined;
    let outcome: Outcome | undefined = forced;
    if (!outcome) {
      // The facts for the rule in plan/exit-outcome.ts: the boot the run was started under, and
      // (only for an end that may be the engine's) the engine's boot now.
      const ranUnder = st && !st.running && st.exitCode !== 0 ? (await this.current(a)).engineBoot : undefined;
      // Asked on a new connection: an engine that is shutting down (and stopping this very
      // container) refuses it, and the finish waits for the engine to come back (an error
      // here; the next pass tries again) instead of reading the engine's stop as the task's.
      const current = st && mayBeEngineDeath(st, ranUnder) ? await this.deps.engine.boot?.() : undefined;
      outcome = exitOutcome(st, { ...(ranUnder ? { ranUnder } : {}), ...(current ? { current } : {}) });
    }
    const end = outcome;
    const finishedMs = engineTime(st?.finishedAt) ?? this.now();
    // What the score file holds (or why it cannot be read), recorded as found.
    const scored = scoreFile !== undefined ? await readScore(resultsDir, scoreFile) : undefined;
    // The outcome is recorded first, as `ended`: the phase becomes it once the harvest is done, and
    // a harvest that fails or is cut short (berth killed) is planned again (planner.ts).
    const rec = await this.update(a, (r) => {
      const { intent: _i, ...rest } = r;
      return {
        ...rest,
        reason: REASONS.harvesting,
        ended: { run: r.run, phase: end.phase, reason: end.reason, ...(end.message ? { message: end.message } : {}) },
        ...(exitCode !== undefined ? { exitCode } : {}),
        ...(engineTime(st?.startedAt) !== undefined && !r.startedAt ? { startedAt: iso(engineTime(st?.startedAt) as number) } : {}),
        finishedAt: iso(finishedMs),
        ...(scored ? ('score' in scored ? { score: scored.score } : { scoreError: scored.error }) : {}),
      };
    });
    await this.harvest(a, details?.id, resultsDir ?? rec.resultsDir, sidecars);
  }

  /**
   * The harvest of a run whose outcome is recorded (`ended`): logs, manifest and status into the
   * run's folder, then the final phase. A harvest that fails is recorded (HarvestFailed, why) and
   * fails the operation; the record keeps `ended` for the next try.
   */
  private async harvest(a: AttemptAction, id: string | undefined, resultsDir: string | undefined, sidecars: SidecarLogs[] = []): Promise<void> {
    const rec = await this.current(a);
    const ended = rec.ended;
    if (!ended) throw new Error(`attempt ${a.attempt} has no recorded outcome to harvest`);
    const { ended: _e, message: _m, ...rest } = rec;
    // The outcome's message; else what the record said before the run ended (never a failed harvest's why).
    const message = ended.message ?? (rec.reason === REASONS.harvestFailed ? undefined : rec.message);
    const final: AttemptStatus = { ...rest, phase: ended.phase, reason: ended.reason, ...(message ? { message } : {}), updatedAt: iso(this.now()) };
    const mount = resultsDir ?? rec.resultsDir;
    try {
      // berth's own files go into the run folder: made or found below the results root with no link followed.
      if (mount) {
        // The results root itself is the user's, made as it is given (as for a new run's folder).
        const base = resultsBase(this.deps.resultsRoot, mount);
        await fs.mkdir(base, { recursive: true });
        await mkdirBelow(base, path.dirname(mount));
      }
      // a backend whose runs write their results elsewhere (a swarm node) brings them home first
      if (mount && id && this.deps.engine.containers.collect) await this.deps.engine.containers.collect(id, mount);
      if (mount) await harvest(this.deps.engine, path.dirname(mount), mount, id, final, sidecars, this.deps.harvest ?? DEFAULT_LIMITS, this.deps.signal);
    } catch (err) {
      // Berth stopping cut it short: nothing failed; the record still says Harvesting, and the next start does it.
      if (this.deps.signal?.aborted) throw err;
      const why = `the harvest into ${mount ? path.dirname(mount) : '?'} failed: ${err instanceof Error ? err.message : String(err)}`;
      await this.update(a, (r) => ({ ...r, reason: REASONS.harvestFailed, message: why }));
      throw new Error(why);
    }
    await this.deps.store.put(final);
  }

  /**
   * A provisioning operation failed: the attempt waits in Pending/CreateFailed. A start the
   * engine refused (it answered with an error status; not one that never reached it or went
   * unanswered) is recorded as such, for the planner to decide on (planner.ts).
   */
  private async recordFailure(a: AttemptAction, op: Operation, msg: string, err?: unknown): Promise<void> {
    const provisioning =
      op.type === 'create-container' || op.type === 'start' || op.type === 'create-network' || op.type === 'create-volume' || (op.type === 'create-sidecar' && !op.restart);
    if (!provisioning) return;
    const status = op.type === 'start' ? statusOf(err) : undefined;
    await this.update(a, (r) => ({
      ...r,
      phase: 'Pending',
      reason: REASONS.createFailed,
      message: msg,
      ...(op.type === 'start' && status !== undefined
        ? { startFailure: { run: op.desired.run, ...(r.containerId ? { containerId: r.containerId } : {}), at: iso(this.now()), status, message: msg } }
        : {}),
    }));
  }
}

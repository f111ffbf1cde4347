/**
 * The executor runs a plan: attempts in parallel (bounded by --concurrency), each attempt's
 * operations in order. It carries no decision logic: every operation's meaning is fixed by
 * its type (plan/types.ts). One failing attempt never stops the others. It is the only
 * writer of status records.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS, LABELS, REASONS } from '../constants';
import { attestInspected, failedCause } from '../attest/checks';
import type { DesiredAttempt } from '../desired/types';
import { describeEngineError, isConflict, isNotFound } from '../engine/errors';
import type { ContainerDetails, Engine } from '../engine/types';
import type { AttemptAction, Operation, Outcome, Plan } from '../plan/types';
import type { StatusStore } from '../status/store';
import type { Attestation, AttemptStatus } from '../status/types';
import type { Logger } from '../util/log';
import { runBounded } from '../util/pool';
import { fixtureTar, secretsTar } from './archive';
import { harvest } from './harvest';
import { readSecrets, SecretError, secretEnvLines } from './secrets';

export interface ExecutorDeps {
  engine: Engine;
  store: StatusStore;
  instance: string;
  concurrency: number;
  log: Logger;
  /** Where fromEnv secrets are read. */
  env: NodeJS.ProcessEnv;
  now?: () => number;
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

export class Executor {
  private readonly now: () => number;
  constructor(private readonly deps: ExecutorDeps) {
    this.now = deps.now ?? Date.now;
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
        const msg = err instanceof SecretError ? err.message : describeEngineError(err);
        log.error(`${op.type} ${op.resource} failed: ${msg}`);
        await this.recordFailure(a, op, msg).catch(() => undefined);
        return { attempt: a.attempt, ok: false, done, error: `${op.type} ${op.resource}: ${msg}` };
      }
    }
    return { attempt: a.attempt, ok: true, done };
  }

  private async op(a: AttemptAction, op: Operation): Promise<void> {
    const { engine } = this.deps;
    switch (op.type) {
      case 'create-volume':
        try {
          await engine.volumes.create(op.volume);
        } catch (err) {
          if (!isConflict(err)) throw err;
          await this.ownedOrBlock(a, 'volume', (await engine.volumes.inspect(op.volume.name)).labels);
        }
        return;
      case 'create-network':
        try {
          await engine.networks.create(op.network);
        } catch (err) {
          if (!isConflict(err)) throw err;
          await this.ownedOrBlock(a, 'network', (await engine.networks.inspect(op.network.name)).labels);
        }
        return;
      case 'create-container':
        return this.createContainer(a, op.desired);
      case 'start':
        return this.start(a, op.desired);
      case 'attest':
        return this.attest(a, op.id, op.desired);
      case 'adopt':
        return this.adopt(a, op.id, op.desired);
      case 'stop':
        return engine.containers.stop(op.id, op.graceSeconds);
      case 'finish':
        return this.finish(a, op.id, op.resultsDir, op.outcome);
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

  private async ownedOrBlock(a: AttemptAction, kind: string, labels: Record<string, string>): Promise<void> {
    if (labels[LABELS.managed] === 'true' && labels[LABELS.instance] === this.deps.instance && labels[LABELS.attempt] === a.attempt) return;
    const msg = `${kind} name needed by attempt ${a.attempt} is held by a ${kind} berth does not own; it is left alone`;
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
    const failedRetry = sameSpec && r.phase === 'Failed';
    return {
      name: r.name,
      instance: r.instance,
      phase: 'Pending',
      specHash: d.hash,
      source: d.loaded.relFile,
      run: d.run,
      retriesUsed: failedRetry ? r.retriesUsed + 1 : sameSpec ? r.retriesUsed : 0,
      createdAt: r.createdAt,
      history,
      updatedAt: r.updatedAt,
    };
  }

  private async createContainer(a: AttemptAction, d: DesiredAttempt): Promise<void> {
    const { engine } = this.deps;
    const spec = d.loaded.spec;
    // Intent first: a berth killed from here on resumes this run, never starts a second one.
    await this.update(a, (r) => ({
      ...this.beginRun(r, d),
      phase: 'Pending',
      reason: 'Provisioning',
      intent: { action: 'provision', run: d.run, specHash: d.hash, at: iso(this.now()) },
      resultsDir: d.resultsDir,
    }));
    let secrets: { name: string; value: Buffer }[];
    try {
      secrets = await readSecrets(spec, this.deps.env);
    } catch (err) {
      if (!(err instanceof SecretError)) throw err;
      await this.update(a, (r) => ({ ...r, phase: 'Blocked', reason: 'SecretMissing', message: err.message }));
      throw new Halt(err.message);
    }
    await fs.mkdir(d.resultsDir, { recursive: true });
    const create = { ...d.container.create, env: [...d.container.create.env, ...secretEnvLines(spec, secrets)] };
    let id: string;
    try {
      id = await engine.containers.create(create);
    } catch (err) {
      if (!isConflict(err)) throw err;
      // The name is taken: ours (a retried create) → attest it; anyone else's → Blocked, untouched.
      const existing = await engine.containers.inspect(d.container.name);
      const known = (await this.current(a)).containerId === existing.id;
      const labeled = await engine.images.list([LABELS.managed]);
      const inherited = labeled.some((i) => i.id === existing.imageId) && !known;
      if (inherited || existing.labels[LABELS.instance] !== this.deps.instance || existing.labels[LABELS.attempt] !== a.attempt) {
        const msg = `container name ${d.container.name} is held by container ${existing.id.slice(0, 12)} that berth did not create; it is left alone`;
        await this.update(a, (r) => ({ ...r, phase: 'Blocked', reason: REASONS.nameConflict, message: msg }));
        throw new Halt(msg);
      }
      const bad = failedCause(attestInspected(existing, d));
      if (bad) {
        await engine.containers.remove(existing.id);
        throw new Error(`existing container ${d.container.name} did not attest and was removed: ${bad}`);
      }
      id = existing.id;
    }
    await this.update(a, (r) => ({ ...r, containerId: id }));
    if (spec.fixture) await engine.containers.putArchive(id, '/', await fixtureTar(spec.fixture, spec.workingDir));
    if (secrets.length) {
      const { uid, gid } = await this.containerUser(spec.image);
      await engine.containers.putArchive(id, '/', await secretsTar(secrets, DEFAULTS.secretsDir, uid, gid));
    }
    const warnings = Object.keys(spec.secretEnv).map(
      (k) => `secret ${spec.secretEnv[k]} is exposed as environment variable ${k}: anyone who can inspect the container can read it`,
    );
    // Recorded before the start is asked for: a berth killed from here on only needs to start it.
    await this.update(a, (r) => ({ ...r, ...(r.intent ? { intent: { ...r.intent, copied: true } } : {}), ...(warnings.length ? { warnings } : {}) }));
  }

  /** The numeric uid/gid the image runs as (root unless the image says a numeric user). */
  private async containerUser(image: string): Promise<{ uid: number; gid: number }> {
    const user = (await this.deps.engine.images.inspect(image)).user;
    const m = /^(\d+)(?::(\d+))?$/.exec(user);
    return m ? { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) } : { uid: 0, gid: 0 };
  }

  private attestation(details: ContainerDetails, d: DesiredAttempt): Attestation {
    const checks = attestInspected(details, d);
    return { at: iso(this.now()), depth: 'inspect', ok: checks.every((c) => c.ok), checks };
  }

  private async start(a: AttemptAction, d: DesiredAttempt): Promise<void> {
    const { engine } = this.deps;
    const rec = await this.current(a);
    const id = rec.containerId ?? d.container.name;
    await engine.containers.start(id);
    const details = await engine.containers.inspect(id);
    const startedMs = Date.parse(details.runState.startedAt) || this.now();
    const deadline = d.loaded.spec.deadlineSeconds;
    const att = this.attestation(details, d);
    const { intent: _intent, reason: _reason, message: _message, ...rest } = rec;
    await this.deps.store.put({
      ...rest,
      phase: 'Running',
      containerId: details.id,
      startedAt: iso(startedMs),
      ...(deadline !== null ? { deadlineAt: iso(startedMs + deadline * 1000) } : {}),
      lastAttestation: att,
    });
    if (!att.ok) await this.failAttestation(a, details.id, failedCause(att.checks) ?? 'attestation failed');
  }

  private async failAttestation(a: AttemptAction, id: string, cause: string): Promise<never> {
    await this.deps.engine.containers.stop(id, DEFAULTS.stopGraceSeconds);
    await this.finish(a, id, undefined, { phase: 'Failed', reason: REASONS.attestationFailed, message: cause });
    throw new Halt(cause);
  }

  private async attest(a: AttemptAction, id: string, d: DesiredAttempt): Promise<void> {
    const details = await this.deps.engine.containers.inspect(id);
    const att = this.attestation(details, d);
    await this.update(a, (r) => ({ ...r, lastAttestation: att }));
    if (!att.ok) await this.failAttestation(a, id, failedCause(att.checks) ?? 'attestation failed');
  }

  private async adopt(a: AttemptAction, id: string, d: DesiredAttempt): Promise<void> {
    const details = await this.deps.engine.containers.inspect(id);
    const startedMs = Date.parse(details.runState.startedAt) || this.now();
    const deadline = d.loaded.spec.deadlineSeconds;
    const att = this.attestation(details, d);
    await this.update(a, (r) => {
      const { intent: _i, reason: _r, message: _m, ...rest } = this.beginRun(r, d);
      return {
        ...rest,
        phase: 'Running',
        containerId: id,
        resultsDir: d.resultsDir,
        startedAt: iso(startedMs),
        ...(deadline !== null ? { deadlineAt: iso(startedMs + deadline * 1000) } : {}),
        lastAttestation: att,
      };
    });
    if (!att.ok) await this.failAttestation(a, id, failedCause(att.checks) ?? 'attestation failed');
  }

  /** Reads the end from the engine (exit code, OOM) unless the plan forces an outcome; harvests; records. */
  private async finish(a: AttemptAction, id: string | undefined, resultsDir: string | undefined, forced: Outcome | undefined): Promise<void> {
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
    const outcome: Outcome =
      forced ??
      (!st
        ? { phase: 'Failed', reason: REASONS.lost, message: 'the container vanished from the engine' }
        : st.oomKilled
          ? { phase: 'Failed', reason: REASONS.oomKilled, message: 'the container ran out of memory' }
          : st.exitCode === 0
            ? { phase: 'Succeeded', reason: REASONS.completed }
            : { phase: 'Failed', reason: REASONS.error, message: `exited with code ${st.exitCode}` });
    const finishedMs = st?.finishedAt && !st.finishedAt.startsWith('0001') ? Date.parse(st.finishedAt) : this.now();
    const next = await this.update(a, (r) => {
      const { intent: _i, ...rest } = r;
      return {
        ...rest,
        phase: outcome.phase,
        reason: outcome.reason,
        ...(outcome.message ? { message: outcome.message } : {}),
        ...(exitCode !== undefined ? { exitCode } : {}),
        ...(st?.startedAt && !st.startedAt.startsWith('0001') && !r.startedAt ? { startedAt: st.startedAt } : {}),
        finishedAt: iso(finishedMs),
      };
    });
    const mount = resultsDir ?? next.resultsDir;
    if (mount) await harvest(this.deps.engine, path.dirname(mount), mount, details?.id, next);
  }

  private async recordFailure(a: AttemptAction, op: Operation, msg: string): Promise<void> {
    if (op.type !== 'create-container' && op.type !== 'start' && op.type !== 'create-network' && op.type !== 'create-volume') return;
    await this.update(a, (r) => ({ ...r, phase: 'Pending', reason: REASONS.createFailed, message: msg }));
  }
}

/**
 * The `finish` and `harvest` operations. A finish reads the end from the engine (exit code,
 * OOM) unless the plan forces an outcome, records it as `ended`, then harvests. The harvest
 * writes logs, manifest, the exported workspace (workspace/export.ts) and status into the run's
 * folder, then the final phase; one that fails
 * is recorded (HarvestFailed, why) and the planner plans it again (planner.ts). Everything it
 * writes, the record included, is redacted of the run's secrets (harvest/redaction.ts).
 */
import path from 'node:path';
import { REASONS } from '../constants';
import { isNotFound } from '../engine/errors';
import { engineTime } from '../engine/time';
import type { ContainerDetails, ContainerState } from '../engine/types';
import { exitOutcome, mayBeEngineDeath, type CappedLayer } from '../plan/exit-outcome';
import type { AttemptAction, OpOutcome, Operation, RunEnd } from '../plan/types';
import type { AttemptStatus } from '../status/types';
import { iso, type ExecContext } from './context';
import { DEFAULT_LIMITS, harvest as harvestFiles } from './harvest';
import { withLateOom } from './late-oom';
import { DEFAULT_CAPS } from '../harvest/manifest';
import { DONE } from './outcome';
import { ensureRunFolder } from '../harvest/run-folder';
import { redactRecord, runRedaction, sourcesFor, type RunRedaction } from '../harvest/redaction';
import { readScore, type ScoreRead } from '../harvest/score';
import { exportWorkspace } from '../workspace/export';
import { readTouched, recordOf } from '../touch/record';

export async function finish(x: ExecContext, a: AttemptAction, op: Extract<Operation, { type: 'finish' }>): Promise<OpOutcome> {
  const { id, resultsDir, outcome: forced, score: scoreFile } = op;
  let details: ContainerDetails | undefined;
  if (id) {
    try {
      details = await x.deps.engine.containers.inspect(id);
    } catch (err) {
      if (!isNotFound(err)) throw err;
    }
  }
  // an exit by SIGKILL is looked at again for the OOM kill dockerd may report after it (late-oom.ts)
  const st = details && !forced ? await withLateOom(x.deps.engine, details.id, details.runState, x.deps.signal) : details?.runState;
  // an end that stands for an exit code (a sandbox's release) records that one, not the stop's
  const exitCode = forced?.exitCode ?? (st && !st.running ? st.exitCode : undefined);
  let outcome: RunEnd | undefined = forced;
  if (!outcome) {
    // The facts for the rule in plan/exit-outcome.ts: the boot the run was started under, and
    // (only for an end that may be the engine's) the engine's boot now.
    const rec = st && !st.running ? await x.records.current(a) : undefined;
    const ranUnder = st && !st.running && st.exitCode !== 0 ? rec?.engineBoot : undefined;
    // Asked on a new connection: an engine that is shutting down (and stopping this very
    // container) refuses it, and the finish waits for the engine to come back (an error
    // here; the next pass tries again) instead of reading the engine's stop as the task's.
    const current = st && mayBeEngineDeath(st, ranUnder) ? await x.deps.engine.boot() : undefined;
    // the deadline of the run this container is (a record of another run does not judge it)
    const deadlineAt = rec?.containerId === id ? rec?.deadlineAt : undefined;
    const layer = st && rec && rec.containerId === id ? await cappedLayer(x, st, rec.disk, id) : undefined;
    outcome = exitOutcome(st, { ...(ranUnder ? { ranUnder } : {}), ...(current ? { current } : {}) }, deadlineAt, layer);
  }
  const end = outcome;
  const finishedMs = engineTime(st?.finishedAt) ?? x.now();
  // What the score file holds (or why it cannot be read), recorded as found.
  const scored = scoreFile !== undefined ? await readScore(resultsDir, scoreFile) : undefined;
  const rr = await redactionOf(x, a);
  // The outcome is recorded first, as `ended`: the phase becomes it once the harvest is done, and
  // a harvest that fails or is cut short (berth killed) is planned again (planner.ts).
  const rec = await x.records.update(a, (r) => {
    const { intent: _i, score: _s, scorePass: _p, scoreError: _e, ...rest } = r;
    return {
      ...rest,
      reason: REASONS.harvesting,
      ended: { run: r.run, phase: end.phase, reason: end.reason, ...(end.message ? { message: end.message } : {}) },
      ...(exitCode !== undefined ? { exitCode } : {}),
      ...(engineTime(st?.startedAt) !== undefined && !r.startedAt ? { startedAt: iso(engineTime(st?.startedAt) as number) } : {}),
      finishedAt: iso(finishedMs),
      ...(scored ? rr.redactor.redactJson(scoreFields(scored)) : {}),
    };
  });
  return harvest(
    x,
    a,
    {
      type: 'harvest',
      resource: op.resource,
      cause: op.cause,
      ...(details ? { id: details.id } : {}),
      ...((resultsDir ?? rec.resultsDir) ? { resultsDir: resultsDir ?? rec.resultsDir } : {}),
      ...(op.sidecars ? { sidecars: op.sidecars } : {}),
      ...(op.caps ? { caps: op.caps } : {}),
    },
    rr,
  );
}

/**
 * The writable layer of a run that ended non-zero under a disk limit the engine enforces, as
 * the engine counts it now (SizeRw): the fact plan/exit-outcome.ts reads a full disk from.
 * Asked only then (the engine walks the layer to answer); an engine that cannot say, none.
 */
async function cappedLayer(x: ExecContext, st: ContainerState, disk: AttemptStatus['disk'], id: string | undefined): Promise<CappedLayer | undefined> {
  const sized = x.deps.engine.local?.writableBytes.bind(x.deps.engine.local);
  if (!id || !sized || st.running || st.exitCode === 0 || st.oomKilled || disk?.enforcedBy !== 'engine') return undefined;
  const usedBytes = await sized(id).catch(() => undefined);
  return usedBytes === undefined ? undefined : { usedBytes, limitBytes: disk.bytes };
}

/** The redaction of the attempt's current run: its secrets read again from the sources its record names. */
export async function redactionOf(x: ExecContext, a: AttemptAction): Promise<RunRedaction> {
  const rec = await x.records.current(a);
  const d = a.desired;
  return runRedaction(sourcesFor(rec, d ? { hash: d.hash, secrets: d.loaded.spec.secrets } : undefined), x.deps.env);
}

/**
 * The harvest of a run whose outcome is recorded (`ended`): logs, manifest and status into the
 * run's folder, then the final phase. A harvest that fails is recorded (HarvestFailed, why) and
 * fails the operation; the record keeps `ended` for the next try.
 */
export async function harvest(x: ExecContext, a: AttemptAction, op: Extract<Operation, { type: 'harvest' }>, redaction?: RunRedaction): Promise<OpOutcome> {
  const { id, resultsDir, sidecars = [], caps = DEFAULT_CAPS } = op;
  const { engine } = x.deps;
  const rr = redaction ?? (await redactionOf(x, a));
  const rec = await x.records.current(a);
  const ended = rec.ended;
  if (!ended) throw new Error(`attempt ${a.attempt} has no recorded outcome to harvest`);
  const { ended: _e, message: _m, ...rest } = rec;
  // The outcome's message; else what the record said before the run ended (never a failed harvest's why).
  const message = ended.message ?? (rec.reason === REASONS.harvestFailed ? undefined : rec.message);
  let final: AttemptStatus = { ...rest, phase: ended.phase, reason: ended.reason, ...(message ? { message } : {}), updatedAt: iso(x.now()) };
  const mount = resultsDir ?? rec.resultsDir;
  try {
    // berth's own files go into the run folder: made or found below the results root with no link followed.
    if (mount) await ensureRunFolder(x.deps.resultsRoot, mount);
    // a backend whose runs write their results elsewhere (a swarm node) brings them home first, within the caps
    const collected = mount && id && engine.remote ? await engine.remote.collect(id, mount, caps) : undefined;
    // the workspace, read out of the stopped container before anything removes it (workspace/export.ts)
    if (mount) {
      const exported = await exportWorkspace(engine, path.dirname(mount), id, x.deps.signal, rr.redactor);
      if (!exported.done && exported.warning) final.warnings = [...(final.warnings ?? []), exported.warning];
    }
    // the execs and copies the run had (touch/record.ts), counted after the export: one begun later found the container stopped
    if (mount) {
      const touched = await readTouched(recordOf(x.deps.resultsRoot, mount));
      const { touched: _t, ...clean } = final;
      final = touched ? { ...clean, touched } : clean;
    }
    final = redactRecord(final, rr);
    if (mount) {
      const capsFor = { caps, ...(collected ? { before: collected } : {}) };
      final = await harvestFiles(engine, {
        runDir: path.dirname(mount),
        mountDir: mount,
        containerId: id,
        status: final,
        sidecars,
        limits: x.deps.harvest ?? DEFAULT_LIMITS,
        ...(x.deps.signal ? { signal: x.deps.signal } : {}),
        caps: capsFor,
        redactor: rr.redactor,
      });
    }
  } catch (err) {
    // Berth stopping cut it short: nothing failed; the record still says Harvesting, and the next start does it.
    if (x.deps.signal?.aborted) throw err;
    const why = rr.redactor.redactText(`the harvest into ${mount ? path.dirname(mount) : '?'} failed: ${err instanceof Error ? err.message : String(err)}`);
    await x.records.update(a, (r) => ({ ...r, reason: REASONS.harvestFailed, message: why }));
    throw new Error(why);
  }
  await x.records.put(redactRecord(final, rr));
  return DONE;
}

/** The status record's fields for what the score file held: the score (and its own verdict), or why there is none. */
function scoreFields(s: ScoreRead): { score: number; scorePass?: boolean } | { scoreError: string } {
  if ('error' in s) return { scoreError: s.error };
  return { score: s.score, ...(s.pass !== undefined ? { scorePass: s.pass } : {}) };
}

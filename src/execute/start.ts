/**
 * The `start`, `attest-start` and `adopt` operations: a run's main container started (one engine
 * call), then (or when found running) inspected, attested and recorded Running, with the
 * engine's start time, the absolute deadline and a deep attestation. A start that fails is
 * reported with the container it asked for (recorded as `startFailure` when the engine answered
 * with an error status: plan/follow-up.ts).
 */
import { LABELS } from '../constants';
import type { DesiredAttempt } from '../desired/types';
import { engineTime } from '../engine/time';
import type { AttemptAction, OpOutcome, Operation } from '../plan/types';
import type { AttemptStatus, VolumeSize } from '../status/types';
import { attestation, attestationOutcome } from './attest';
import { imageProvenance } from './image-provenance';
import { iso, type ExecContext } from './context';
import { DONE, outcomeOf } from './outcome';
import { beginRun } from './status-record';

/**
 * `start`: the one change to the engine. The boot the run is recorded under must be one seen at or before
 * the start (plan/exit-outcome.ts): when the record has none (the plan knew none), it is looked
 * up now, before the start, for `attest-start` to record.
 */
export async function start(x: ExecContext, a: AttemptAction, { desired: d }: Extract<Operation, { type: 'start' }>): Promise<OpOutcome> {
  const rec = await x.records.current(a);
  try {
    if (!rec.engineBoot) await x.bootForStart();
    await x.deps.engine.containers.start(rec.containerId ?? d.container.name);
    return DONE;
  } catch (err) {
    return outcomeOf(err, rec.containerId);
  }
}

/**
 * `attest-start`: the container just started, inspected (the engine's start time, never berth's
 * clock: startedAt, finishedAt and durations are results) and attested; the run recorded Running
 * with its absolute deadline. A failed attestation is reported after the record, as `attest` does.
 */
export async function attestStart(x: ExecContext, a: AttemptAction, { desired: d }: Extract<Operation, { type: 'attest-start' }>): Promise<OpOutcome> {
  const rec = await x.records.current(a);
  const details = await x.deps.engine.containers.inspect(rec.containerId ?? d.container.name);
  const boot = rec.engineBoot ?? (await x.bootForStart());
  const startedMs = engineTime(details.runState.startedAt) ?? x.now();
  const deadline = d.deadline;
  const att = await attestation(x, details, d, rec.image?.id);
  // the create could not say which image it was made from: the container says it now
  const image = rec.image ?? (await imageProvenance(x.deps.engine, d.loaded.spec.image, details.imageId).catch(() => undefined));
  await x.records.put({
    ...withoutRunStart(rec),
    ...(boot ? { engineBoot: boot } : {}),
    phase: 'Running',
    containerId: details.id,
    ...(image ? { image } : {}),
    startedAt: iso(startedMs),
    ...(deadline !== null ? { deadlineAt: iso(startedMs + deadline.seconds * 1000), deadlineSource: deadline.source } : {}),
    ...diskLimit(d),
    lastAttestation: att,
  });
  return attestationOutcome(x, att, details.id, d);
}

/**
 * A record without what a run's start sets anew (the intent, the reason and message of what came
 * before, a failed start, the deadline and the disk limits): a start or an adoption fills them in.
 */
function withoutRunStart(r: AttemptStatus): Omit<AttemptStatus, RunStartField> {
  const { intent: _i, reason: _r, message: _m, startFailure: _sf, deadlineAt: _da, deadlineSource: _ds, disk: _disk, volumeSizes: _vs, ...rest } = r;
  return rest;
}

type RunStartField = 'intent' | 'reason' | 'message' | 'startFailure' | 'deadlineAt' | 'deadlineSource' | 'disk' | 'volumeSizes';

/**
 * The run's disk limits as its record keeps them from its start: `engine` where its writable
 * layer was created capped (StorageOpt size; berth still measures its results and volumes), else
 * `measured` (observe/disk-usage.ts); and each sized volume's, `engine` where the volume was made
 * with its `size` option.
 */
function diskLimit(d: DesiredAttempt): Pick<AttemptStatus, 'disk' | 'volumeSizes'> {
  const capped = new Set(d.volumes.filter((v) => v.options?.size !== undefined).map((v) => v.labels[LABELS.volume]));
  const sizes: VolumeSize[] = d.loaded.spec.volumes.flatMap((v) =>
    v.sizeBytes === null
      ? []
      : [{ name: v.name, mountPath: v.mountPath, bytes: v.sizeBytes, enforcedBy: capped.has(v.name) ? ('engine' as const) : ('measured' as const) }],
  );
  return {
    ...(d.disk
      ? { disk: { bytes: d.disk.bytes, source: d.disk.source, enforcedBy: d.container.create.host.storageOpt?.size !== undefined ? 'engine' : 'measured' } }
      : {}),
    ...(sizes.length ? { volumeSizes: sizes } : {}),
  };
}

/**
 * Records a running container found on the engine as this attempt's current run, keeping what the
 * planner says the record holds of it (`keep`); the rest from the container's start and the spec.
 */
export async function adopt(x: ExecContext, a: AttemptAction, { id, desired: d, counters, keep }: Extract<Operation, { type: 'adopt' }>): Promise<OpOutcome> {
  const boot = await x.bootForStart();
  const details = await x.deps.engine.containers.inspect(id);
  const startedMs = engineTime(details.runState.startedAt) ?? x.now();
  const att = await attestation(x, details, d, keep.image?.id);
  // a container found running with no record of its image: the image it was made from, as it says
  const image = keep.image ?? (await imageProvenance(x.deps.engine, d.loaded.spec.image, details.imageId).catch(() => undefined));
  const deadline = d.deadline !== null ? { deadlineAt: iso(startedMs + d.deadline.seconds * 1000), deadlineSource: d.deadline.source } : {};
  await x.records.update(a, (r) => {
    const rest = withoutRunStart(beginRun(r, d, counters, iso(Math.min(x.now(), startedMs))));
    return {
      ...rest,
      // a run adopted under this boot (one adopted again keeps the boot it was started under)
      ...((rest.engineBoot ?? boot) ? { engineBoot: rest.engineBoot ?? boot } : {}),
      phase: 'Running',
      containerId: id,
      ...(image ? { image } : {}),
      resultsDir: d.resultsDir,
      startedAt: iso(startedMs),
      ...(keep.deadline ?? deadline),
      ...(keep.disk ?? diskLimit(d)),
      lastAttestation: att,
    };
  });
  return attestationOutcome(x, att, id, d);
}

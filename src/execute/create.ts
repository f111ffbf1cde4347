/**
 * The operations that make a run's main container, one change to the engine each (plan/ops.ts
 * emits them in this order): `begin-run` (the run's folder and the intent record, no engine call),
 * `create-container`, `copy-in` (the fixture, the secrets: one archive each) and `record-copied`
 * (no engine call). The intent before the create and "copied" after the last copy keep their
 * crash-safety meaning (docs/ARCHITECTURE.md). A name already held is reported (`conflict`),
 * never judged here.
 */
import path from 'node:path';
import { DEFAULTS, REASONS } from '../constants';
import { attestInspected, failedCause, mainWant } from '../attest/checks';
import type { DesiredAttempt } from '../desired/types';
import { isConflict } from '../engine/errors';
import { stampNonce } from '../ownership';
import { helperArch, helperTar } from '../pack/helper';
import type { AttemptAction, OpOutcome, Operation } from '../plan/types';
import { imageProvenance } from './image-provenance';
import type { ImageProvenance } from '../status/types';
import { assertFoldersBelow } from '../util/no-follow';
import { fixtureTar, secretsTar, type LayerEntry } from '../pack/archive';
import { writeWorkspaceBase } from '../workspace/export';
import { containerHolder } from './conflict';
import { iso, type ExecContext } from './context';
import { DONE, outcomeOf } from './outcome';
import { makeRunFolder, resultsBase } from '../harvest/run-folder';
import { secretSourcesOf } from '../harvest/redaction';
import { readSecrets, secretEnvLines } from '../pack/secrets';
import { beginRun } from './status-record';
import { diffForm } from '../spec/spec-diff';

/**
 * `begin-run`: makes the run's folder (found, not refused, when the planner says it is the run's
 * own), then begins run `d.run` in the record with the planner's counters and records its
 * provisioning intent (before any engine side effect of it). A berth killed between the two
 * leaves an empty folder, which the next run steps over; once the intent is recorded, the folder
 * is this run's to resume.
 */
export async function recordIntent(
  x: ExecContext,
  a: AttemptAction,
  { desired: d, counters, ownFolder }: Extract<Operation, { type: 'begin-run' }>,
): Promise<void> {
  await makeRunFolder(x.deps.resultsRoot, d.resultsDir, ownFolder, d.loaded.spec.user);
  // what the workspace export compares with: the settings now, what was copied in once it is (copyIn)
  await recordWorkspaceBase(d, false, []);
  await x.records.update(a, (r) => {
    const { secretSources: _s, ...begun } = beginRun(r, d, counters, iso(x.now()));
    const secrets = d.loaded.spec.secrets;
    return {
      ...begun,
      // where its secrets come from, for their redaction at the harvest (harvest/redaction.ts)
      ...(secrets.length ? { secretSources: secretSourcesOf(secrets) } : {}),
      phase: 'Pending',
      reason: REASONS.provisioning,
      intent: { action: 'provision', run: d.run, specHash: d.hash, at: iso(x.now()) },
      // A resumed provisioning of the same run keeps when it first began (a new run has none yet).
      provisionedAt: begun.provisionedAt ?? iso(x.now()),
      resultsDir: d.resultsDir,
    };
  });
  // the spec this run is made from, for a later plan to say what a new one changes (secrets by name only)
  await x.deps.store.runSpecs.put(d.name, d.hash, diffForm(d.loaded.spec));
}

/** Records, in the run folder, what the run's workspace export compares with (nothing with `export: none`). */
async function recordWorkspaceBase(d: DesiredAttempt, copied: boolean, entries: readonly LayerEntry[]): Promise<void> {
  const spec = d.loaded.spec;
  if (spec.workspace.export === 'none') return;
  await writeWorkspaceBase(path.dirname(d.resultsDir), {
    version: 1,
    workingDir: spec.workingDir,
    settings: spec.workspace,
    fixture: spec.fixture,
    fixtureDigest: spec.fixtureDigest,
    // with more than one layer, each entry names the layer its bytes are read from (for the patch)
    ...(spec.fixtureLayers.length > 1 ? { layers: spec.fixtureLayers.map((l) => l.path) } : {}),
    copied,
    entries: [...entries],
  });
}

/** The numeric uid/gid the image runs as (root unless the image says a numeric user). */
export async function containerUser(x: ExecContext, image: string): Promise<{ uid: number; gid: number }> {
  const user = (await x.deps.engine.images.inspect(image)).user;
  const m = /^(\d+)(?::(\d+))?$/.exec(user);
  return m ? { uid: Number(m[1]), gid: Number(m[2] ?? m[1]) } : { uid: 0, gid: 0 };
}

/**
 * `create-container`. Its secrets are read first (for the environment of those opted into it, and
 * so a missing one blocks the attempt before the engine holds anything), and the bind source is
 * checked right before the engine is asked to mount it. `use`: the id of this attempt's own
 * container holding the name (the planner said to use it). The id is recorded: the copies go into
 * it, and the planner tells this run's container by it after a crash.
 */
export async function createContainer(
  x: ExecContext,
  a: AttemptAction,
  { desired: d, use, image: choice }: Extract<Operation, { type: 'create-container' }>,
): Promise<OpOutcome> {
  const { engine } = x.deps;
  const spec = d.loaded.spec;
  const secrets = await readSecrets(spec, x.deps.env, d.mainSecrets);
  // a set's child: made from its set's pinned id (pinned now by the first child; a pin already in force wins)
  const from = choice?.pin
    ? (
        await x.deps.store.pins.pin(choice.pin.set, choice.pin.key, spec.image, {
          id: choice.id,
          repoDigests: choice.pin.repoDigests,
          at: iso(x.now()),
        })
      ).id
    : choice?.id;
  const create = stampNonce({
    ...d.container.create,
    ...(from ? { image: from } : {}),
    env: [...d.container.create.env, ...secretEnvLines(spec.secretEnv, secrets)],
  });
  // The bind source, right before the engine is asked to mount it: no link anywhere below the results root.
  await assertFoldersBelow(resultsBase(x.deps.resultsRoot, d.resultsDir), d.resultsDir);
  let id = use;
  if (id === undefined) {
    try {
      id = await engine.containers.create(create);
    } catch (err) {
      if (!isConflict(err)) throw err;
      // The name is taken: whose it is, and (when ours) whether it is as the spec wants it.
      const existing = await engine.containers.inspect(d.container.name);
      const owner = await containerHolder(x, existing);
      const rec = await x.records.current(a);
      const bad = owner.owned && owner.attempt === a.attempt ? failedCause(attestInspected(existing, mainWant(d, rec.image?.id ?? from))) : undefined;
      return { type: 'conflict', kind: 'container', name: d.container.name, id: existing.id, owner, ...(bad ? { unattested: bad } : {}) };
    }
  }
  const made = id;
  // which image bytes it was made from: the id the engine used (the container's own), with its
  // repo digests; a look that fails costs nothing but this (attest-start looks again)
  const provenance = await madeFrom(x, made, spec.image, from).catch(() => undefined);
  await x.records.update(a, (r) => ({ ...r, containerId: made, ...(provenance ? { image: provenance } : {}) }));
  return DONE;
}

/**
 * The image container `id` was made from (its inspect's `Image`, then that image's repo digests):
 * `ref` as the spec names it; `pinned`: the id its set pinned, which it was created from.
 */
export async function madeFrom(x: ExecContext, id: string, ref: string, pinned?: string): Promise<ImageProvenance> {
  const details = await x.deps.engine.containers.inspect(id);
  const prov = await imageProvenance(x.deps.engine, ref, details.imageId || pinned);
  // an index of several platforms (the containerd image store): which platform's manifest ran
  const manifest = details.imageManifest && details.imageManifest !== prov.id ? { platformManifest: details.imageManifest } : {};
  return { ...prov, ...(pinned ? { pinned: true } : {}), ...manifest };
}

/**
 * `copy-in`: one archive into the container the create recorded. The fixture is read now, with
 * no link followed: one swapped for a link since it was checked is refused (`unsafe-path`, with
 * the container, which the planner removes). With spec.user, the working dir and the fixture are
 * that user's (the working dir is sent even without a fixture, unless the root filesystem is
 * read-only: the engine copies nothing into one; plan/ops.ts `copiesIn`).
 */
export async function copyIn(x: ExecContext, a: AttemptAction, { desired: d, archive }: Extract<Operation, { type: 'copy-in' }>): Promise<OpOutcome> {
  const { engine } = x.deps;
  const spec = d.loaded.spec;
  const rec = await x.records.current(a);
  const id = rec.containerId ?? d.container.name;
  try {
    if (archive === 'helper') {
      // a sandbox's main process: berth's helper, built for the engine's machine
      const arch = helperArch((await engine.version()).arch ?? '');
      if (!arch) throw new Error(`berth's helper has no build for the engine's machine (${(await engine.version()).arch}): a sandbox cannot run there`);
      await engine.containers.putArchive(id, '/', await helperTar(arch));
      return DONE;
    }
    if (archive === 'secrets') {
      const secrets = await readSecrets(spec, x.deps.env, d.mainSecrets);
      if (!secrets.length) return DONE;
      const { uid, gid } = spec.user ?? (await containerUser(x, spec.image));
      await engine.containers.putArchive(id, '/', await secretsTar(secrets, DEFAULTS.secretsDir, uid, gid));
      return DONE;
    }
    const owner = spec.user ?? { uid: 0, gid: 0 };
    // each layer packed once for every attempt that copies it in (kept on disk: fixture-cache.ts), streamed from there
    const fixture = await fixtureTar(spec.fixtureLayers, spec.workingDir, owner.uid, owner.gid, x.deps.fixtureCache);
    try {
      // recorded before the copy: the container never holds a fixture the record does not describe
      await recordWorkspaceBase(d, true, fixture.index);
      await engine.containers.putArchive(id, '/', fixture.body());
    } finally {
      // a fixture spooled to a temp file: removed once copied in (or not needed any more)
      await fixture.dispose();
    }
    return DONE;
  } catch (err) {
    return outcomeOf(err, rec.containerId);
  }
}

/**
 * `record-copied`: the copy recorded done, before the start is asked for: a berth killed from
 * here on only needs to start it. The engine's boot too (the plan's, else looked up now): an
 * engine restart from here on is told from the task's own failure by it.
 */
export async function recordCopied(
  x: ExecContext,
  a: AttemptAction,
  { desired: d, boot: planned }: Extract<Operation, { type: 'record-copied' }>,
): Promise<OpOutcome> {
  const spec = d.loaded.spec;
  const warnings = Object.keys(spec.secretEnv).map(
    (k) =>
      `secret ${spec.secretEnv[k]} is exposed as environment variable ${k}: anyone who can inspect the container can read it, and the engine's own database may keep it on disk after the container is removed`,
  );
  const boot = planned ?? (await x.bootForStart());
  await x.records.update(a, (r) => ({
    ...r,
    ...(r.intent ? { intent: { ...r.intent, copied: true } } : {}),
    ...(warnings.length ? { warnings } : {}),
    ...(boot ? { engineBoot: boot } : {}),
  }));
  return DONE;
}

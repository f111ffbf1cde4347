/**
 * `berth clean`: remove every resource of this instance (containers, then networks, then
 * volumes), verify none remain, and drop the instance's status records. Results stay.
 * Only resources that berth created for this instance are touched (src/ownership.ts): that is
 * decided from the engine's labels, so clean works with the status records damaged or gone;
 * records that can be read only add what they say (containers of an older berth, ids they
 * name for another attempt). Damaged records are set aside, not deleted. Holds the instance's
 * single-writer locks (writer-lock.ts) throughout; the engine lock is no resource of the
 * instance, so it stays. An instance bound to another source (instance-source.ts) is refused
 * unless `--move-instance`; once nothing of the instance is left, its binding goes too.
 */
import { promises as fs } from 'node:fs';
import { EXIT, LABELS } from '../../constants';
import type { ContainerSummary, Engine, NetworkSummary, VolumeSummary } from '../../engine/types';
import { instanceFilters } from '../../observe/snapshot';
import { containerOwnership, imageLabels, labelOwnership, recordedContainers, type OwnershipContext, type RecordedContainers } from '../../ownership';
import { runBounded } from '../../util/pool';
import type { Context } from '../context';
import { plural } from '../diag';
import { namesFileOf } from '../../status/index-file';
import { removeBinding } from '../../status/source-binding';
import { bindInstance, cleanSource } from './instance-source';
import { takeWriterLocks } from './writer-lock';

/** What the records say, if they can be read at all; clean never needs them. */
async function recordsIfReadable(ctx: Context): Promise<RecordedContainers> {
  const unreadable = (why: string): RecordedContainers => {
    ctx.io.err(`berth: warning: the status records of instance ${ctx.instance} cannot be read (${why}); deciding by the engine's labels alone\n`);
    return new Map();
  };
  try {
    const store = ctx.store();
    await store.recover();
    const records = await store.loadAll();
    // A records folder that was not one (set aside by now): nothing in it could be read.
    const folder = store.damagedFolder();
    if (folder) return unreadable(folder.code ?? folder.problem);
    return recordedContainers(records.values());
  } catch (err) {
    return unreadable((err as NodeJS.ErrnoException).code ?? (err as Error).message);
  }
}

interface Listed {
  containers: ContainerSummary[];
  networks: NetworkSummary[];
  volumes: VolumeSummary[];
}

async function listAll(engine: Engine, f: string[]): Promise<Listed> {
  const [containers, networks, volumes] = await Promise.all([engine.containers.list(f), engine.networks.list(f), engine.volumes.list(f)]);
  return { containers, networks, volumes };
}

export interface CleanOptions {
  keepState?: boolean;
  concurrency?: number;
  /** `--specs` (or BERTH_SPECS) was given: clean speaks for that folder (instance-source.ts `cleanSource`). */
  specsGiven?: boolean;
  /** Clean an instance bound to another source. */
  moveInstance?: boolean;
}

export async function runClean(ctx: Context, o: CleanOptions): Promise<number> {
  const engine = ctx.engine();
  const locks = await takeWriterLocks(ctx, engine, 'clean');
  if (!locks) return EXIT.failed;
  try {
    // An instance bound to another source is not cleaned from here unless asked (exit 2, nothing removed).
    const source = await cleanSource(ctx, o.specsGiven ?? true);
    if (!(await bindInstance(ctx, engine, source, { command: 'clean', ...(o.moveInstance ? { move: true } : {}) }))) return EXIT.usage;
    return await clean(ctx, engine, o);
  } finally {
    await locks.release();
  }
}

async function clean(ctx: Context, engine: Engine, o: CleanOptions): Promise<number> {
  const f = instanceFilters(ctx.instance);
  const limit = o.concurrency ?? 8;
  // Everything is listed at once: while the locks are held, nothing of this instance is made.
  const [images, recorded, listed] = await Promise.all([engine.images.list([LABELS.managed]), recordsIfReadable(ctx), listAll(engine, f)]);
  const own: OwnershipContext = { instance: ctx.instance, labeledImages: imageLabels(images), recorded };
  const ours = (l: Listed) => ({
    containers: l.containers.filter((c) => containerOwnership(c, own).owned),
    networks: l.networks.filter((n) => labelOwnership(n.labels, ctx.instance).owned),
    volumes: l.volumes.filter((v) => labelOwnership(v.labels, ctx.instance).owned),
  });
  const { containers, networks, volumes } = ours(listed);
  const failures: string[] = [];
  const note = (what: string) => (r: PromiseSettledResult<unknown>) => {
    if (r.status === 'rejected') failures.push(`${what}: ${(r.reason as Error).message}`);
  };
  // Containers first: a network or volume in use cannot go.
  (await runBounded(containers, limit, (c) => engine.containers.remove(c.id))).forEach(note('container'));
  (await runBounded(networks, limit, (n) => engine.networks.remove(n.id))).forEach(note('network'));
  (await runBounded(volumes, limit, (v) => engine.volumes.remove(v.name))).forEach(note('volume'));
  const after = ours(await listAll(engine, f));
  const left = after.containers.length + after.networks.length + after.volumes.length;
  // Nothing of the instance is left: it is bound to no source any more (the next reconcile binds it).
  if (!left) await removeBinding(engine, ctx.instance).catch((err: unknown) => failures.push(`source binding: ${(err as Error).message}`));
  if (!o.keepState) {
    await fs.rm(ctx.store().dir, { recursive: true, force: true }).catch((err: NodeJS.ErrnoException) => {
      // A state folder that is not a folder holds no records.
      if (err.code !== 'ENOTDIR') failures.push(`status records ${ctx.store().dir}: ${err.message}`);
    });
    // and their index and names beside it (status/index-file.ts), if they were made
    await fs.rm(ctx.store().indexFile, { force: true }).catch(() => undefined);
    await fs.rm(namesFileOf(ctx.store().indexFile), { force: true }).catch(() => undefined);
  }
  ctx.io.out(
    `removed ${plural(containers.length, 'container')}, ${plural(networks.length, 'network')}, ${plural(volumes.length, 'volume')} of instance ${ctx.instance}${left ? `; ${left} remain` : '; none remain'}\n`,
  );
  for (const x of failures) ctx.io.err(`berth: ${x}\n`);
  return left || failures.length ? EXIT.failed : EXIT.ok;
}

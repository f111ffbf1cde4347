/**
 * `berth clean`: remove every resource of this instance (containers, then networks, then
 * volumes), verify none remain, and drop the instance's status records. Results stay.
 * Only resources that berth created for this instance are touched (src/ownership.ts): that is
 * decided from the engine's labels, so clean works with the status records damaged or gone;
 * records that can be read only add what they say (containers of an older berth, ids they
 * name for another attempt). Damaged records are set aside, not deleted. Holds the instance's
 * single-writer locks (writer-lock.ts) throughout; the engine lock is no resource of the
 * instance, so it stays.
 */
import { promises as fs } from 'node:fs';
import { EXIT, LABELS } from '../../constants';
import type { Engine } from '../../engine/types';
import { instanceFilters } from '../../observe/snapshot';
import { containerOwnership, imageLabels, labelOwnership, recordedContainers, type OwnershipContext, type RecordedContainers } from '../../ownership';
import { runBounded } from '../../util/pool';
import type { Context } from '../context';
import { plural } from '../diag';
import { takeWriterLocks } from './writer-lock';

/** What the records say, if they can be read at all; clean never needs them. */
async function recordsIfReadable(ctx: Context): Promise<RecordedContainers> {
  try {
    const store = ctx.store();
    await store.recover();
    return recordedContainers((await store.loadAll()).values());
  } catch (err) {
    ctx.io.err(`berth: warning: the status records of instance ${ctx.instance} cannot be read (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}); deciding by the engine's labels alone\n`);
    return new Map();
  }
}

export async function runClean(ctx: Context, o: { keepState?: boolean; concurrency?: number }): Promise<number> {
  const engine = ctx.engine();
  const locks = await takeWriterLocks(ctx, engine, 'clean');
  if (!locks) return EXIT.failed;
  try {
    return await clean(ctx, engine, o);
  } finally {
    await locks.release();
  }
}

async function clean(ctx: Context, engine: Engine, o: { keepState?: boolean; concurrency?: number }): Promise<number> {
  const f = instanceFilters(ctx.instance);
  const limit = o.concurrency ?? 8;
  const [images, recorded] = await Promise.all([engine.images.list([LABELS.managed]), recordsIfReadable(ctx)]);
  const own: OwnershipContext = { instance: ctx.instance, labeledImages: imageLabels(images), recorded };
  const listContainers = async () => (await engine.containers.list(f)).filter((c) => containerOwnership(c, own).owned);
  const listNetworks = async () => (await engine.networks.list(f)).filter((n) => labelOwnership(n.labels, ctx.instance).owned);
  const listVolumes = async () => (await engine.volumes.list(f)).filter((v) => labelOwnership(v.labels, ctx.instance).owned);
  const containers = await listContainers();
  const failures: string[] = [];
  const note = (what: string) => (r: PromiseSettledResult<unknown>) => {
    if (r.status === 'rejected') failures.push(`${what}: ${(r.reason as Error).message}`);
  };
  (await runBounded(containers, limit, (c) => engine.containers.remove(c.id))).forEach(note('container'));
  const networks = await listNetworks();
  (await runBounded(networks, limit, (n) => engine.networks.remove(n.id))).forEach(note('network'));
  const volumes = await listVolumes();
  (await runBounded(volumes, limit, (v) => engine.volumes.remove(v.name))).forEach(note('volume'));
  const left = (await listContainers()).length + (await listNetworks()).length + (await listVolumes()).length;
  if (!o.keepState) {
    await fs.rm(ctx.store().dir, { recursive: true, force: true }).catch((err: NodeJS.ErrnoException) => {
      // A state folder that is not a folder holds no records.
      if (err.code !== 'ENOTDIR') failures.push(`status records ${ctx.store().dir}: ${err.message}`);
    });
  }
  ctx.io.out(`removed ${plural(containers.length, 'container')}, ${plural(networks.length, 'network')}, ${plural(volumes.length, 'volume')} of instance ${ctx.instance}${left ? `; ${left} remain` : '; none remain'}\n`);
  for (const x of failures) ctx.io.err(`berth: ${x}\n`);
  return left || failures.length ? EXIT.failed : EXIT.ok;
}

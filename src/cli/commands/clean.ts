/**
 * `berth clean`: remove every resource of this instance (containers, then networks, then
 * volumes), verify none remain, and drop the instance's status records. Results stay.
 * Only resources whose labels attest this instance are touched. Holds the instance's single-writer
 * locks (writer-lock.ts) throughout; the engine lock is no resource of the instance, so it stays.
 */
import { promises as fs } from 'node:fs';
import { EXIT } from '../../constants';
import type { Engine } from '../../engine/types';
import { instanceFilters } from '../../observe/snapshot';
import { runBounded } from '../../util/pool';
import type { Context } from '../context';
import { takeWriterLocks } from './writer-lock';

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
  const labeledImages = new Set((await engine.images.list(['dev.berth.managed'])).map((i) => i.id));
  const records = await ctx.store().loadAll();
  const known = new Set([...records.values()].map((r) => r.containerId));
  // A container whose berth labels come from its image is ours only if berth recorded creating it.
  const containers = (await engine.containers.list(f)).filter((c) => !labeledImages.has(c.imageId) || known.has(c.id));
  const failures: string[] = [];
  const note = (what: string) => (r: PromiseSettledResult<unknown>) => {
    if (r.status === 'rejected') failures.push(`${what}: ${(r.reason as Error).message}`);
  };
  (await runBounded(containers, limit, (c) => engine.containers.remove(c.id))).forEach(note('container'));
  const networks = await engine.networks.list(f);
  (await runBounded(networks, limit, (n) => engine.networks.remove(n.id))).forEach(note('network'));
  const volumes = await engine.volumes.list(f);
  (await runBounded(volumes, limit, (v) => engine.volumes.remove(v.name))).forEach(note('volume'));
  const left =
    (await engine.containers.list(f)).filter((c) => !labeledImages.has(c.imageId) || known.has(c.id)).length +
    (await engine.networks.list(f)).length +
    (await engine.volumes.list(f)).length;
  if (!o.keepState) await fs.rm(ctx.store().dir, { recursive: true, force: true });
  ctx.io.out(`removed ${containers.length} containers, ${networks.length} networks, ${volumes.length} volumes of instance ${ctx.instance}${left ? `; ${left} remain` : '; none remain'}\n`);
  for (const x of failures) ctx.io.err(`berth: ${x}\n`);
  return left || failures.length ? EXIT.failed : EXIT.ok;
}

/**
 * Removing what this bench run made, and nothing else: berth instances named
 * `bench-<run id>-...` (through `berth clean`, then by label), resources labeled
 * `dev.berth.bench=<run id>`, compose projects of this run, and the run's temp folder.
 * Never a prune, never a resource without this run's labels.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import type { RawEngine } from './engine';
import { BENCH_LABEL, type BenchRun } from './fixture';
import { berth, run as runCmd } from './proc';

const MANAGED = 'dev.berth.managed';
const INSTANCE = 'dev.berth.instance';
/** The instance's single-writer lock volume and its source binding volume name it by these (no managed label). */
const OF_INSTANCE = ['dev.berth.lock', 'dev.berth.binding'];

/** A bench run as its clean-up knows it: its id and label (bench/ab.ts sweeps another build's run by these). */
export type RunOf = Pick<BenchRun, 'id' | 'label'>;

export async function pool<T>(items: readonly T[], limit: number, fn: (item: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  const errors: unknown[] = [];
  const worker = async () => {
    while (next < items.length) {
      const i = next++;
      try {
        await fn(items[i] as T, i);
      } catch (err) {
        errors.push(err);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
  if (errors.length) throw errors[0];
}

function ofRun(run: RunOf, labels: Record<string, string> | null): boolean {
  if (!labels) return false;
  if (labels[BENCH_LABEL] === run.id) return true;
  const inst = labels[INSTANCE];
  if (labels[MANAGED] === 'true' && typeof inst === 'string' && inst.startsWith(`bench-${run.id}-`)) return true;
  return OF_INSTANCE.some((k) => labels[k]?.startsWith(`bench-${run.id}-`));
}

/** Containers, networks and volumes of this run still on the engine. */
export async function leftovers(engine: RawEngine, run: RunOf): Promise<{ containers: string[]; networks: string[]; volumes: string[] }> {
  const byLabel = async <T extends { Labels: Record<string, string> | null }>(list: (l: string[]) => Promise<T[]>) => [
    ...(await list([MANAGED])).filter((x) => ofRun(run, x.Labels)),
    ...(await Promise.all(OF_INSTANCE.map((k) => list([k])))).flat().filter((x) => ofRun(run, x.Labels)),
    ...(await list([run.label])),
  ];
  const containers = [...new Set((await byLabel((l) => engine.listContainers(l))).map((c) => c.Id))];
  const networks = [...new Set((await byLabel((l) => engine.listNetworks(l))).map((n) => n.Id))];
  const volumes = [...new Set((await byLabel((l) => engine.listVolumes(l))).map((v) => v.Name))];
  return { containers, networks, volumes };
}

/** Force-removes every container, network and volume of this run, by label. */
export async function sweep(engine: RawEngine, run: RunOf): Promise<number> {
  const left = await leftovers(engine, run);
  await pool(left.containers, 8, (id) => engine.removeContainer(id));
  await pool(left.networks, 8, (id) => engine.call('DELETE', `/networks/${id}`, undefined, [404]).then(() => undefined));
  await pool(left.volumes, 8, (name) => engine.call('DELETE', `/volumes/${encodeURIComponent(name)}`, undefined, [404]).then(() => undefined));
  return left.containers.length + left.networks.length + left.volumes.length;
}

/**
 * The full clean-up, for the `finally` of the bench: `berth clean` for each berth instance of
 * this run, `docker-compose down` for each compose project, then a sweep by label, then the temp
 * folder. Throws if anything of the run is still on the engine afterwards.
 */
export async function cleanupRun(engine: RawEngine, run: BenchRun, log: (s: string) => void): Promise<void> {
  for (const instance of run.instances) {
    const dir = path.join(run.root, instance);
    const args = [
      'clean',
      '--specs',
      path.join(dir, 'specs'),
      '--state',
      path.join(dir, 'state'),
      '--results-root',
      path.join(dir, 'results'),
      '--instance',
      instance,
      '--log-level',
      'warn',
    ];
    const r = await berth(args, { allowFail: true }).catch((err: Error) => ({ code: -1, stderr: err.message, stdout: '', ms: 0 }));
    if (r.code !== 0) log(`cleanup: berth clean --instance ${instance} exited ${r.code}: ${r.stderr.trim().slice(0, 300)}`);
  }
  for (const project of run.composeProjects) {
    const file = path.join(run.root, 'compose', project, 'docker-compose.yml');
    const exists = await fs.stat(file).then(
      () => true,
      () => false,
    );
    if (exists) await runCmd('docker-compose', ['-p', project, '-f', file, 'down', '-t', '1'], { allowFail: true }).catch(() => undefined);
  }
  let swept = 0;
  let left = await leftovers(engine, run);
  let n = left.containers.length + left.networks.length + left.volumes.length;
  // A removal already in progress (409) finishes on its own: look again a few times.
  for (let i = 0; i < 10 && n > 0; i++) {
    swept += await sweep(engine, run);
    left = await leftovers(engine, run);
    n = left.containers.length + left.networks.length + left.volumes.length;
    if (n) await new Promise((r) => setTimeout(r, 1000));
  }
  if (swept) log(`cleanup: removed ${swept} leftover resources of run ${run.id} by label`);
  if (run.root) await fs.rm(run.root, { recursive: true, force: true });
  if (n) throw new Error(`cleanup: ${n} resources of bench run ${run.id} are still on the engine: ${JSON.stringify(left)}`);
}

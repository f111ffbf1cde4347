/**
 * resources.disk where berth measures: the CPU of one measuring interval over 1,000 running
 * attempts (BENCH_DISK_ATTEMPTS), against a plain `du -s` of the same folders, in the same run.
 *
 * Each attempt is two generated folder trees on the host, its writable layer and its results
 * folder (BENCH_DISK_ENTRIES entries between them: folders of 20 small files), as the meter
 * finds them on overlay2 (GraphDriver.Data.UpperDir and the results bind). What is timed is
 * the controller's meter itself (src/controller/disk-meter.ts: its order, its budget, its walks)
 * over records of 1,000 Running attempts with a limit none of them reaches, so every entry is
 * walked. Honest note: no 1,000 containers run; the meter's one inspect per container (about
 * 1.5 ms each, ENGINE.md) is made once per container, not per interval, and is left out here
 * (answered by a stand-in engine); what is measured is the per-interval cost, the walk. Both
 * sides read warm dentry and inode caches (one untimed pass of each first), as a measure that
 * comes back every 10 s does.
 */
import { execFile } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { DiskMeter } from '../../src/controller/disk-meter';
import type { Engine } from '../../src/engine/types';
import type { AttemptStatus } from '../../src/status/types';
import { systemClock } from '../../src/util/clock';
import { silentLogger } from '../../src/util/log';
import type { BenchRun } from '../lib/fixture';

const run = promisify(execFile);

export interface DiskSamples {
  attempts: number;
  entries: number;
  /** CPU (user + system) ms of one interval of berth's meter. */
  berthCpu: number[];
  berthWall: number[];
  /** CPU ms of `du -s` over the same folders (its own process). */
  duCpu: number[];
  duWall: number[];
}

const PER_DIR = 20;

async function tree(dir: string, entries: number): Promise<void> {
  let made = 0;
  for (let d = 0; made < entries; d++) {
    const sub = path.join(dir, `d${d}`);
    await fs.mkdir(sub, { recursive: true });
    made++;
    const n = Math.min(PER_DIR, entries - made);
    await Promise.all(Array.from({ length: n }, (_, i) => fs.writeFile(path.join(sub, `f${i}`), 'x'.repeat(100 + i))));
    made += n;
  }
}

/** CPU ms (user + system) of `du -s` over `dirs`, as bash's `time` reports it, and its wall ms. */
async function du(dirs: string[]): Promise<{ cpu: number; wall: number }> {
  const t0 = performance.now();
  const { stderr } = await run('bash', ['-c', 'TIMEFORMAT="%3U %3S"; time du -s -- "$@" >/dev/null', 'du', ...dirs], { maxBuffer: 1 << 20 });
  const wall = performance.now() - t0;
  const [u, s] = stderr.trim().split(/\s+/).slice(-2).map(Number);
  return { cpu: ((u ?? 0) + (s ?? 0)) * 1000, wall };
}

export async function diskRounds(bench: BenchRun, attempts: number, entries: number, rounds: number, log: (m: string) => void): Promise<DiskSamples> {
  const root = await bench.dir('disk');
  log(`disk: writing ${attempts.toLocaleString('en')} attempts' layer and results folders (${entries} entries each)`);
  const records = new Map<string, AttemptStatus>();
  const layers = new Map<string, string>();
  const dirs: string[] = [];
  for (let i = 0; i < attempts; i++) {
    const name = `a${String(i).padStart(4, '0')}`;
    const layer = path.join(root, name, 'layer');
    const results = path.join(root, name, 'results');
    await tree(layer, Math.ceil(entries / 2));
    await tree(results, Math.floor(entries / 2));
    layers.set(`id-${name}`, layer);
    dirs.push(layer, results);
    records.set(name, {
      name,
      phase: 'Running',
      containerId: `id-${name}`,
      resultsDir: results,
      disk: { bytes: 2 ** 40, source: 'spec', enforcedBy: 'measured' },
    } as AttemptStatus);
  }
  const engine = {
    containers: {
      inspect: async (id: string) => ({ id, state: 'running', mounts: [], storage: { driver: 'overlay2', upperDir: layers.get(id) } }),
    },
  } as unknown as Engine;
  const meter = new DiskMeter({
    engine,
    records: async () => records,
    clock: systemClock,
    intervalMs: 10_000,
    log: silentLogger(),
    onOver: () => undefined,
    entriesPerInterval: Number.MAX_SAFE_INTEGER,
  });
  // untimed: the inspects (once per container) and warm caches, for both
  await meter.measure();
  await du(dirs);
  const counted = [...meter.current().values()].reduce((n, u) => n + u.entries, 0);
  const out: DiskSamples = { attempts, entries: counted, berthCpu: [], berthWall: [], duCpu: [], duWall: [] };
  for (let r = 0; r < rounds; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await meter.measure();
    const wall = performance.now() - t0;
    const c = process.cpuUsage(c0);
    out.berthCpu.push((c.user + c.system) / 1000);
    out.berthWall.push(wall);
    const d = await du(dirs);
    out.duCpu.push(d.cpu);
    out.duWall.push(d.wall);
    log(
      `disk round ${r + 1}: berth ${((c.user + c.system) / 1000).toFixed(0)} ms CPU (${wall.toFixed(0)} ms), du -s ${d.cpu.toFixed(0)} ms CPU (${d.wall.toFixed(0)} ms)`,
    );
  }
  await fs.rm(root, { recursive: true, force: true });
  return out;
}

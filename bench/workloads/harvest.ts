/**
 * The harvest of a run whose results folder holds many files (BENCH_HARVEST_FILES, default
 * 100,000: folders of 1,000 files of 64 bytes each, written once on the host), in-process:
 * berth's harvest (src/execute/harvest.ts: the container's log, the manifest with every file
 * hashed, status.json) against the floor: the engine's archive of the same folder
 * (GET /containers/{id}/archive, what `docker cp` reads, read to its end) plus a plain walk
 * (readdir and lstat of every entry, one at a time). The container is the run's, made by the
 * raw API with the folder bind-mounted at /results, created and never started.
 */
import { promises as fs } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { createDockerEngine } from '../../src/engine/docker';
import { harvest } from '../../src/execute/harvest';
import type { AttemptStatus } from '../../src/status/types';
import type { RawEngine } from '../lib/engine';
import { BENCH_LABEL, IMAGE, type BenchRun } from '../lib/fixture';

export interface HarvestSamples {
  files: number;
  bytes: number;
  /** Writing the folder (once, not timed against anything). */
  seedMs: number;
  berth: number[];
  floor: number[];
  /** The floor's parts. */
  archive: number[];
  walk: number[];
}

const PER_DIR = 1000;
const SIZE = 64;

async function seed(dir: string, n: number): Promise<void> {
  for (let d = 0; d * PER_DIR < n; d++) {
    const sub = path.join(dir, `d${String(d).padStart(4, '0')}`);
    await fs.mkdir(sub, { recursive: true });
    const count = Math.min(PER_DIR, n - d * PER_DIR);
    await Promise.all(Array.from({ length: count }, (_, i) => fs.writeFile(path.join(sub, `f${String(i).padStart(4, '0')}`), `${d}/${i}`.padEnd(SIZE, '.'))));
  }
}

/** The engine's tar of `p` in container `id`, read to its end; its size. */
export function archive(engine: RawEngine, id: string, p: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { socketPath: engine.socketPath, agent: engine.agent, method: 'GET', path: `/containers/${id}/archive?path=${encodeURIComponent(p)}` },
      (res) => {
        let n = 0;
        res.on('data', (c: Buffer) => (n += c.length));
        res.on('end', () => (res.statusCode === 200 ? resolve(n) : reject(new Error(`archive answered ${res.statusCode}`))));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** readdir and lstat of every entry, one at a time: the least a manifest must do. */
async function walk(dir: string): Promise<number> {
  let n = 0;
  for (const name of await fs.readdir(dir)) {
    const p = path.join(dir, name);
    const st = await fs.lstat(p);
    n++;
    if (st.isDirectory()) n += await walk(p);
  }
  return n;
}

export async function harvestRounds(engine: RawEngine, run: BenchRun, files: number, rounds: number, log: (m: string) => void): Promise<HarvestSamples> {
  const runDir = await run.dir('harvest', 'run-1');
  const results = path.join(runDir, 'results');
  log(`harvest: writing ${files.toLocaleString('en')} files of ${SIZE} bytes`);
  const t0 = performance.now();
  await seed(results, files);
  const seedMs = performance.now() - t0;
  const id = await engine.createContainer(`bench-${run.id}-harvest`, {
    Image: IMAGE,
    Cmd: ['true'],
    Labels: { [BENCH_LABEL]: run.id },
    HostConfig: { Binds: [`${results}:/results:rw`] },
  });
  const berthEngine = createDockerEngine();
  const status = {
    name: 'harvest',
    instance: 'bench',
    phase: 'Succeeded',
    specHash: '',
    run: 1,
    retriesUsed: 0,
    createdAt: new Date().toISOString(),
    history: [],
    updatedAt: new Date().toISOString(),
  } as AttemptStatus;
  const out: HarvestSamples = { files, bytes: files * SIZE, seedMs, berth: [], floor: [], archive: [], walk: [] };
  for (let r = 0; r < rounds; r++) {
    const berthFirst = r % 2 === 0;
    const floorRound = async () => {
      const a0 = performance.now();
      await archive(engine, id, '/results');
      const a1 = performance.now();
      await walk(results);
      const a2 = performance.now();
      out.archive.push(a1 - a0);
      out.walk.push(a2 - a1);
      out.floor.push(a2 - a0);
    };
    const berthRound = async () => {
      const b0 = performance.now();
      await harvest(berthEngine, { runDir, mountDir: results, containerId: id, status });
      out.berth.push(performance.now() - b0);
    };
    if (berthFirst) {
      await berthRound();
      await floorRound();
    } else {
      await floorRound();
      await berthRound();
    }
    log(`harvest round ${r + 1}/${rounds}: berth ${(out.berth[r] as number).toFixed(0)} ms, floor ${(out.floor[r] as number).toFixed(0)} ms`);
  }
  await engine.removeContainer(id);
  await fs.rm(path.join(run.root, 'harvest'), { recursive: true, force: true });
  return out;
}

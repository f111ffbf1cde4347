/**
 * `plan` over a large unchanged fixture (issue 39): a repository's size and shape, generated here
 * (BENCH_FIXTURE_FILES files, default 5,000, about 150 MB: mostly small source files, a few
 * large ones, some YAML of its own), the fixture of one Attempt. Berth's side is the spec load a
 * `plan` makes (src/spec/loader.ts: the walk, the spec file, the fixture's scan and digest) in a
 * state a new process is in: nothing kept in memory (the content, spec-file and tree caches
 * cleared), what an earlier process kept on disk there (the fixture's digests, digest-store.ts;
 * the spec cache of the state folder, disk-cache.ts). The floor is a plain
 * `stat` walk of the same tree (readdirSync and lstatSync of every entry, one at a time), in the same
 * rounds: SAMPLES of each a round, interleaved, alternating which goes first, the round's figure
 * each one's median. Engine-free: the engine's part of `plan` is measured by
 * the no-op workload.
 */
import { randomBytes } from 'node:crypto';
import { lstatSync, promises as fs, readdirSync } from 'node:fs';
import path from 'node:path';
import { clearContentCache, contentCacheStats } from '../../src/spec/content-cache';
import { clearSpecFileCache } from '../../src/spec/file-cache';
import { clearTreeDigests } from '../../src/spec/fixture-scan';
import { loadSpecs } from '../../src/spec/loader';

export interface FixturePlanSamples {
  files: number;
  bytes: number;
  seedMs: number;
  /** The first load: every file read and hashed (a first run, or a lost cache). */
  firstMs: number;
  berth: number[];
  floor: number[];
  /** Files read by the timed loads (0 when the cache on disk served every digest). */
  reads: number;
}

const PER_DIR = 100;
/** Samples of each contender a round (its median is the round's figure). */
const SAMPLES = 5;
/** One file in this many is large (2 MiB); the rest are small (4–16 KiB). */
const LARGE_EVERY = 100;
const LARGE = 2 * 1024 * 1024;

async function seed(dir: string, n: number): Promise<number> {
  let bytes = 0;
  const noise = randomBytes(LARGE);
  for (let d = 0; d * PER_DIR < n; d++) {
    const sub = path.join(dir, `pkg${String(d % 10)}`, `mod${String(d).padStart(3, '0')}`);
    await fs.mkdir(sub, { recursive: true });
    const count = Math.min(PER_DIR, n - d * PER_DIR);
    await Promise.all(
      Array.from({ length: count }, (_, i) => {
        const k = d * PER_DIR + i;
        const size = k % LARGE_EVERY === 0 ? LARGE : 4096 + ((k * 7919) % 12_288);
        bytes += size;
        const name = k % 50 === 1 ? `conf${i}.yml` : `f${String(i).padStart(3, '0')}.py`;
        const body = name.endsWith('.yml')
          ? Buffer.from(`key: ${k}\nlist: [a, b]\n`)
          : Buffer.concat([Buffer.from(`# ${k}\n`), noise.subarray(k % 1024, (k % 1024) + size)]);
        if (name.endsWith('.yml')) bytes += body.length - size;
        return fs.writeFile(path.join(sub, name), body);
      }),
    );
  }
  await fs.writeFile(path.join(dir, 'mkdocs.yml'), 'site_name: repo\n');
  await fs.mkdir(path.join(dir, '.github', 'workflows'), { recursive: true });
  await fs.writeFile(path.join(dir, '.github', 'workflows', 'ci.yml'), 'on: push\n');
  await fs.writeFile(path.join(dir, 'docker-compose.yml'), 'services: {db: {image: postgres}}\n');
  return bytes;
}

/** readdir and lstat of every entry, one at a time, synchronously (the fastest plain walk in Node). */
function walk(dir: string): number {
  let n = 0;
  for (const name of readdirSync(dir)) {
    const p = `${dir}/${name}`;
    const st = lstatSync(p);
    n++;
    if (st.isDirectory()) n += walk(p);
  }
  return n;
}

/** `root`: an empty folder of the bench's; the cache of digests goes under it (BERTH_CACHE_DIR, restored after). */
export async function fixturePlanRounds(root: string, files: number, rounds: number, log: (m: string) => void): Promise<FixturePlanSamples> {
  const specs = path.join(root, 'specs');
  const results = path.join(root, 'results');
  // plan's state folder: berth's spec cache on disk lives under it (disk-cache.ts)
  const state = path.join(root, 'state');
  await fs.mkdir(state, { recursive: true });
  const repo = path.join(specs, 'repo');
  log(`fixture-plan: writing a ${files.toLocaleString('en')}-file repository`);
  const t0 = performance.now();
  const bytes = await seed(repo, files);
  const seedMs = performance.now() - t0;
  await fs.writeFile(
    path.join(specs, 'a.yaml'),
    'apiVersion: berth.dev/v1\nkind: Attempt\nmetadata: {name: a}\nspec:\n  image: berth/busybox:local\n  command: [pytest, -q]\n  fixture: ./repo\n',
  );
  const saved = process.env.BERTH_CACHE_DIR;
  process.env.BERTH_CACHE_DIR = path.join(root, 'cache');
  const fresh = () => {
    clearContentCache();
    clearSpecFileCache();
    clearTreeDigests();
  };
  const load = async () => {
    const r = await loadSpecs({ specsDir: specs, resultsRoot: results, cacheIn: state });
    if (r.errors.length > 0 || r.specs.length !== 1)
      throw new Error(`fixture-plan: the load is not one valid attempt: ${JSON.stringify(r.errors.slice(0, 3))}`);
  };
  const out: FixturePlanSamples = { files, bytes, seedMs, firstMs: 0, berth: [], floor: [], reads: 0 };
  try {
    fresh();
    const f0 = performance.now();
    await load();
    out.firstMs = performance.now() - f0;
    const reads0 = contentCacheStats().misses;
    // Each round takes SAMPLES of each, interleaved (a load or a walk is tens of milliseconds: one
    // sample of each is at the mercy of a single scheduling hiccup), and keeps each one's median.
    const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;
    for (let r = 0; r < rounds; r++) {
      const b: number[] = [];
      const f: number[] = [];
      const berthOnce = async () => {
        fresh();
        const b0 = performance.now();
        await load();
        b.push(performance.now() - b0);
      };
      const floorOnce = () => {
        const w0 = performance.now();
        walk(repo);
        f.push(performance.now() - w0);
      };
      for (let i = 0; i < SAMPLES; i++) {
        if ((r + i) % 2 === 0) {
          await berthOnce();
          floorOnce();
        } else {
          floorOnce();
          await berthOnce();
        }
      }
      out.berth.push(median(b));
      out.floor.push(median(f));
      log(`fixture-plan round ${r + 1}/${rounds}: berth ${(out.berth[r] as number).toFixed(0)} ms, stat walk ${(out.floor[r] as number).toFixed(0)} ms`);
    }
    out.reads = contentCacheStats().misses - reads0;
  } finally {
    if (saved === undefined) delete process.env.BERTH_CACHE_DIR;
    else process.env.BERTH_CACHE_DIR = saved;
    await fs.rm(root, { recursive: true, force: true });
  }
  return out;
}

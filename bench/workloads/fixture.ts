/**
 * A large fixture copied in (issue 39, `BENCH_ONLY=fixture`), in-process. A tree of a real
 * repository's size and shape, generated into the run's temp folder (never checked in):
 * BENCH_FIXTURE_FILES files (default 5,000) of about BENCH_FIXTURE_MB MiB in all (default 150),
 * in nested folders (up to four deep), mostly small source-like files with some of a few hundred
 * KiB and a few of several MiB, random bytes. It is the fixture of BENCH_FIXTURE_ATTEMPTS
 * containers (default 20), made beforehand (untimed, the same create body for both), filled 4 at
 * a time. Every round, in alternating order:
 *
 * - berth: what its `copy-in` does for each (src/execute/create.ts): the fixture's archive from
 *   the pack cache (pack/fixture-cache.ts; a fresh, empty cache each round, so the round
 *   packs the tree once), the run's workspace-base.json written, the archive streamed into the
 *   container with berth's Engine (PUT archive);
 * - peer: `docker cp <tree>/. <container>:/workspace`, the docker CLI.
 *
 * Timed from the first copy's start to the last one's end. Then, untimed, a set of 12 children
 * sharing the tree as a base layer, each with a small layer of its own, copied in the same way
 * (archives made and read to their end): the bench counts how often the base was packed.
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createDockerEngine } from '../../src/engine/docker';
import { fixtureTar } from '../../src/pack/archive';
import { fixtureCacheStats } from '../../src/pack/fixture-cache';
import { writeWorkspaceBase } from '../../src/workspace/export';
import { fixtureDigest } from '../../src/spec/fixture-digest';
import { scanFixture } from '../../src/spec/fixture-scan';
import type { FixtureLayer } from '../../src/spec/types';
import type { RawEngine } from '../lib/engine';
import { peerLabels, rawCreateBody, type BenchRun } from '../lib/fixture';
import { run as runCmd } from '../lib/proc';

export interface FixtureSamples {
  files: number;
  bytes: number;
  attempts: number;
  parallel: number;
  /** Generating the tree and scanning it (its digest), once. */
  generateMs: number;
  berth: number[];
  peer: number[];
  /** The set of 12 over a shared base: layers packed, and of them the base. */
  shared: { children: number; packs: number; basePacks: number; ms: number };
}

const PARALLEL = 4;
const SHARED_CHILDREN = 12;

/** A deterministic generator of sizes and names (no Math.random: every run makes the same shape). */
function lcg(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

/** Writes the tree: `files` files of about `bytes` in all, in folders up to four deep; returns what was written. */
export async function generateTree(root: string, files: number, bytes: number): Promise<{ files: number; bytes: number }> {
  const rnd = lcg(39);
  // 2% large (a few MiB), 8% medium (~100-500 KiB), the rest small (~0.5-20 KiB): the shares of bytes roughly a third each
  const large = Math.max(1, Math.round(files * 0.02));
  const medium = Math.round(files * 0.08);
  const small = files - large - medium;
  const third = bytes / 3;
  const sizes: number[] = [];
  for (let i = 0; i < small; i++) sizes.push(Math.max(64, Math.round((third / small) * (0.1 + 1.8 * rnd()))));
  for (let i = 0; i < medium; i++) sizes.push(Math.round((third / Math.max(1, medium)) * (0.5 + rnd())));
  for (let i = 0; i < large; i++) sizes.push(Math.round((third / large) * (0.5 + rnd())));
  const dirs = [
    'src',
    'src/core',
    'src/core/io',
    'src/core/io/codecs',
    'src/util',
    'tests',
    'tests/unit',
    'tests/unit/fixtures',
    'docs',
    'docs/api',
    'data',
    'data/samples',
  ];
  for (let i = 0; i < 40; i++) dirs.push(`pkg/mod${i}`, `pkg/mod${i}/internal`);
  for (const d of dirs) await fs.mkdir(path.join(root, d), { recursive: true });
  let total = 0;
  const pool = randomBytes(8 * 1024 * 1024);
  for (const [i, size] of sizes.entries()) {
    const dir = dirs[Math.floor(rnd() * dirs.length)] as string;
    const at = Math.floor(rnd() * (pool.length - 1));
    // a slice of random bytes, repeated as needed: no two files alike (the offset), nothing to compress
    const body = Buffer.alloc(size);
    for (let o = 0; o < size; o += pool.length - at) pool.copy(body, o, at, at + Math.min(pool.length - at, size - o));
    await fs.writeFile(path.join(root, dir, `f${i}.${['py', 'txt', 'json', 'bin', 'md'][i % 5]}`), body);
    total += size;
  }
  return { files: sizes.length, bytes: total };
}

async function layerOf(dir: string): Promise<FixtureLayer> {
  return { path: dir, digest: fixtureDigest((await scanFixture(dir)).entries) };
}

/** Runs `work` over `items`, `n` at a time. */
async function pooled<T>(items: readonly T[], n: number, work: (x: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: n }, async () => {
      while (next < items.length) await work(items[next++] as T);
    }),
  );
}

export async function fixtureRounds(
  engine: RawEngine,
  run: BenchRun,
  o: { files: number; megabytes: number; attempts: number },
  rounds: number,
  log: (m: string) => void,
): Promise<FixtureSamples> {
  const tree = await run.dir('fixture', 'tree');
  const g0 = performance.now();
  const made = await generateTree(tree, o.files, o.megabytes * 1024 * 1024);
  const base = await layerOf(tree);
  const generateMs = performance.now() - g0;
  log(`fixture: ${made.files.toLocaleString('en')} files, ${(made.bytes / 2 ** 20).toFixed(0)} MiB, into ${o.attempts} containers ${PARALLEL} at a time`);
  const berthEngine = createDockerEngine();
  const results = await run.dir('fixture', 'results');
  const out: FixtureSamples = {
    files: made.files,
    bytes: made.bytes,
    attempts: o.attempts,
    parallel: PARALLEL,
    generateMs,
    berth: [],
    peer: [],
    shared: { children: SHARED_CHILDREN, packs: 0, basePacks: 0, ms: 0 },
  };

  /** `attempts` fresh containers (created, never started), and their removal. */
  const containers = async (tag: string): Promise<string[]> =>
    Promise.all(
      Array.from({ length: o.attempts }, (_, i) =>
        engine.createContainer(`bench-${run.id}-fx-${tag}-${i}`, rawCreateBody(['true'], results, peerLabels(run, `fixture-${tag}`, `a${i}`))),
      ),
    );
  const remove = (ids: string[]) => Promise.all(ids.map((id) => engine.removeContainer(id)));

  const berthRound = async (r: number) => {
    const ids = await containers(`b${r}`);
    const cache = { dir: await run.dir('fixture', `state-${r}`, 'cache', 'fixtures'), maxBytes: 4 * 1024 ** 3 };
    const runDirs = await Promise.all(ids.map((_, i) => run.dir('fixture', `runs-${r}`, `a${i}`, 'run-1')));
    const t0 = performance.now();
    await pooled(
      ids.map((id, i) => ({ id, runDir: runDirs[i] as string })),
      PARALLEL,
      async ({ id, runDir }) => {
        const a = await fixtureTar([base], '/workspace', 0, 0, cache);
        try {
          await writeWorkspaceBase(runDir, {
            version: 1,
            workingDir: '/workspace',
            settings: { export: 'changes', exclude: [], maxBytes: 256 * 1024 ** 2, maxFiles: 100_000 },
            fixture: base.path,
            fixtureDigest: base.digest,
            copied: true,
            entries: [...a.index],
          });
          await berthEngine.containers.putArchive(id, '/', a.body());
        } finally {
          await a.dispose();
        }
      },
    );
    out.berth.push(performance.now() - t0);
    await remove(ids);
    await fs.rm(path.join(run.root, 'fixture', `state-${r}`), { recursive: true, force: true });
    await fs.rm(path.join(run.root, 'fixture', `runs-${r}`), { recursive: true, force: true });
  };

  const peerRound = async (r: number) => {
    const ids = await containers(`p${r}`);
    const t0 = performance.now();
    await pooled(ids, PARALLEL, async (id) => {
      await runCmd('docker', ['cp', `${tree}/.`, `${id}:/workspace`]);
    });
    out.peer.push(performance.now() - t0);
    await remove(ids);
  };

  for (let r = 0; r < rounds; r++) {
    if (r % 2 === 0) {
      await berthRound(r);
      await peerRound(r);
    } else {
      await peerRound(r);
      await berthRound(r);
    }
    log(`fixture: round ${r + 1}: berth ${(out.berth.at(-1) as number).toFixed(0)} ms, docker cp ${(out.peer.at(-1) as number).toFixed(0)} ms`);
  }

  // A set of 12 children over the tree as a shared base layer: the base is packed once.
  const cache = { dir: await run.dir('fixture', 'state-shared', 'cache', 'fixtures'), maxBytes: 4 * 1024 ** 3 };
  const patches: FixtureLayer[] = [];
  for (let i = 0; i < SHARED_CHILDREN; i++) {
    const d = await run.dir('fixture', 'tasks', `t${i}`);
    await fs.writeFile(path.join(d, 'TASK.md'), `task ${i}\n`);
    await fs.writeFile(path.join(d, 'patch.diff'), `--- a/src/f0.py\n+++ b/src/f0.py\n@@ -0,0 +1 @@\n+# task ${i}\n`);
    patches.push(await layerOf(d));
  }
  const before = fixtureCacheStats().packs;
  const s0 = performance.now();
  await pooled(patches, PARALLEL, async (p) => {
    const a = await fixtureTar([base, p], '/workspace', 0, 0, cache);
    try {
      for await (const c of a.body()) void c;
    } finally {
      await a.dispose();
    }
  });
  out.shared.ms = performance.now() - s0;
  out.shared.packs = fixtureCacheStats().packs - before;
  out.shared.basePacks = out.shared.packs - SHARED_CHILDREN;
  log(`fixture: a set of ${SHARED_CHILDREN} over a shared base: ${out.shared.packs} layers packed, the base ${out.shared.basePacks} time(s)`);
  return out;
}

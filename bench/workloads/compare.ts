/**
 * `berth compare` over 10,000 paired cells (issue 53's speed target), in `make bench`
 * (BENCH_ONLY=compare).
 *
 * An AttemptSet of CELLS x CELLS children (the sets workload's spec, bench/workloads/sets.ts),
 * each with a finished status record (deterministic outcomes), the summary of an earlier state of
 * it as the baseline (about 1 child in 12 turned around); nothing runs, and nothing is created on
 * the engine. Measured, rounds alternating:
 * - `berth compare set/big --baseline base.json`, CLI, cold (a new process): target <= 1 s;
 * - `berth summary big -o json` over the same set and records: what reading the set costs
 *   without the comparison (the reference of the ratio);
 * - the comparison itself in-process (pairing, the bootstrap's 2,000 resamples, McNemar): its
 *   share of the command.
 * Everything lives in a temp folder, removed at the end.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseBaseline } from '../../src/sets/baseline';
import { compareWithBaseline, type SideSet } from '../../src/sets/compare';
import { setsOfLoad, summarize } from '../../src/sets/summary';
import { loadSpecs } from '../../src/spec/loader';
import { StatusStore } from '../../src/status/store';
import type { AttemptStatus } from '../../src/status/types';
import { berth } from '../lib/proc';
import { setYaml } from './sets';

export interface CompareSamples {
  cells: number;
  regressions: number;
  /** `berth compare --baseline` (CLI, cold), ms. */
  compare: number[];
  /** `berth summary -o json` over the same set (CLI, cold), ms. */
  summary: number[];
  /** compareWithBaseline in-process, ms. */
  inProcess: number[];
}

/** Deterministic outcomes: child i passed unless i % 7 == 0 (now), i % 11 == 0 (before). */
const passedNow = (i: number) => i % 7 !== 0;
const passedBefore = (i: number) => i % 11 !== 0;

export async function compareRounds(cells: number, rounds: number, log: (m: string) => void): Promise<CompareSamples> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-bench-compare-'));
  try {
    const specs = path.join(dir, 'specs');
    const state = path.join(dir, 'state');
    const instance = `bench-compare-${process.pid}`;
    await fs.mkdir(specs, { recursive: true });
    await fs.writeFile(path.join(specs, 'big.yaml'), setYaml(cells));
    const args = ['--specs', specs, '--state', state, '--instance', instance, '--log-level', 'error'];
    const load = await loadSpecs({ specsDir: specs, resultsRoot: path.join(state, 'results') });
    const store = new StatusStore(state, instance);
    const t0 = Date.parse('2026-01-01T00:00:00Z');
    const record = (name: string, hash: string, passed: boolean): AttemptStatus => ({
      name,
      instance,
      phase: passed ? 'Succeeded' : 'Failed',
      ...(passed ? { exitCode: 0 } : { reason: 'Error', exitCode: 1 }),
      specHash: hash,
      run: 1,
      retriesUsed: 0,
      createdAt: new Date(t0).toISOString(),
      startedAt: new Date(t0 + 1000).toISOString(),
      finishedAt: new Date(t0 + 5000).toISOString(),
      history: [],
      updatedAt: new Date(t0 + 5000).toISOString(),
    });
    log(`compare: ${load.specs.length} children, writing their records`);
    const before = new Map(load.specs.map((s, i) => [s.spec.name, record(s.spec.name, s.hash, passedBefore(i))]));
    const groups = setsOfLoad(load.specs, load.sets ?? new Map());
    const base = summarize(groups, before, t0);
    const baseFile = path.join(dir, 'base.json');
    await fs.writeFile(baseFile, JSON.stringify(base, null, 2));
    for (const [i, s] of load.specs.entries()) await store.put(record(s.spec.name, s.hash, passedNow(i)));

    const out: CompareSamples = { cells: load.specs.length, regressions: 0, compare: [], summary: [], inProcess: [] };
    // once, untimed: the output is what it should be (and the caches of a first run are made)
    const first = await berth(['compare', 'set/big', '--baseline', baseFile, '-o', 'json', ...args]);
    const r = JSON.parse(first.stdout) as { sets: { comparisons: { cells: number; regressions: unknown[] }[] }[] };
    const c = r.sets[0]?.comparisons[0];
    if (c?.cells !== cells * cells) throw new Error(`compare paired ${c?.cells} cells, not ${cells * cells}`);
    out.regressions = c.regressions.length;
    await berth(['summary', 'big', '-o', 'json', ...args]);

    const baseline = parseBaseline(await fs.readFile(baseFile, 'utf8'), baseFile);
    if ('problem' in baseline) throw new Error(baseline.problem);
    const nowSet = summarize(groups, await store.loadAll(), t0).sets[0] as SideSet;
    for (let i = 0; i < rounds; i++) {
      log(`compare: round ${i + 1}/${rounds}`);
      const steps: [number[], () => Promise<number>][] = [
        [out.compare, async () => (await berth(['compare', 'set/big', '--baseline', baseFile, ...args])).ms],
        [out.summary, async () => (await berth(['summary', 'big', '-o', 'json', ...args])).ms],
        [
          out.inProcess,
          async () => {
            const t = performance.now();
            compareWithBaseline(baseline.sets[0] as SideSet, nowSet);
            return performance.now() - t;
          },
        ],
      ];
      for (let k = 0; k < steps.length; k++) {
        const [into, step] = steps[(k + i) % steps.length] as [number[], () => Promise<number>];
        into.push(await step());
      }
    }
    return out;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/**
 * `make bench-sets`: an AttemptSet of 10,000 children (issue 14's speed targets).
 *
 *   node --import tsx bench/sets.ts
 *
 * - Expanding and planning it in a pass, CLI and cold: `berth plan` (read-only against the engine:
 *   its 4 lists), rounds alternating with `berth plan` over one attempt; target <= 1 s.
 * - The engine calls of a pass over that set and over one attempt (in-process, counted): the same
 *   4 lists, whatever the number of children. (A no-op pass over 10,000 finished children would
 *   need 10,000 containers run first; planning does the same list calls.)
 *
 * Environment: BENCH_ROUNDS (default 5), BENCH_SET_CELLS (default 100: a CELLS x CELLS set).
 * Everything lives in a temp folder, removed at the end; nothing is created on the engine.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { planPass } from '../src/controller/pass';
import { createDockerEngine } from '../src/engine/docker';
import { CallCounter, instrumentEngine, readOnlyEngine } from '../src/engine/wrap';
import { StatusStore } from '../src/status/store';
import { silentLogger } from '../src/util/log';
import { berth } from './lib/proc';
import { fmtMs, summarize } from './lib/stats';

const TARGET_MS = 1000;
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const cells = Number(process.env.BENCH_SET_CELLS ?? 100);

const SET = `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: big}
spec:
  matrix:
    a: {range: [0, ${cells}]}
    b: {range: [0, ${cells}]}
  maxParallel: 8
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo \${{ matrix.a }} \${{ matrix.b }} > /results/out.txt']
`;
const ONE = `apiVersion: berth.dev/v1
kind: Attempt
metadata: {name: one}
spec:
  image: berth/busybox:local
  command: [sh, -c, 'echo one > /results/out.txt']
`;

async function folder(dir: string, file: string, text: string): Promise<string[]> {
  const specs = path.join(dir, 'specs');
  await fs.mkdir(specs, { recursive: true });
  await fs.writeFile(path.join(specs, file), text);
  return ['--specs', specs, '--state', path.join(dir, 'state'), '--instance', `bench-sets-${process.pid}`, '--log-level', 'error'];
}

async function calls(args: string[]): Promise<Record<string, number>> {
  const counter = new CallCounter();
  const engine = readOnlyEngine(instrumentEngine(createDockerEngine(), counter.listener));
  const get = (f: string) => args[args.indexOf(f) + 1] as string;
  const state = get('--state');
  const cfg = {
    specsDir: get('--specs'),
    stateDir: state,
    resultsRoot: path.join(state, 'results'),
    instance: get('--instance'),
    maxRunning: 8,
    concurrency: 8,
    attestIntervalMs: 60_000,
    env: process.env,
    log: silentLogger(),
  };
  await planPass(cfg, engine, new StatusStore(state, cfg.instance));
  return counter.snapshot();
}

async function main(): Promise<void> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-bench-sets-'));
  try {
    const setArgs = await folder(path.join(dir, 'set'), 'big.yaml', SET);
    const oneArgs = await folder(path.join(dir, 'one'), 'one.yaml', ONE);
    const set: number[] = [];
    const one: number[] = [];
    for (let i = 0; i < rounds; i++) {
      one.push((await berth(['plan', ...oneArgs])).ms);
      set.push((await berth(['plan', ...setArgs])).ms);
    }
    const s = summarize(set);
    const o = summarize(one);
    const setCalls = await calls(setArgs);
    const oneCalls = await calls(oneArgs);
    const same = JSON.stringify(setCalls) === JSON.stringify(oneCalls);
    const lines = [
      `AttemptSet of ${cells * cells} children, ${rounds} rounds, ${os.cpus().length} CPUs, load average ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`,
      `berth plan (CLI, cold) over the set: median ${fmtMs(s.median)} (min ${fmtMs(s.min)}, max ${fmtMs(s.max)}); target <= ${fmtMs(TARGET_MS)}: ${s.median <= TARGET_MS ? 'PASS' : 'FAIL'}`,
      `berth plan (CLI, cold) over one attempt: median ${fmtMs(o.median)}; the set costs ${fmtMs(s.median - o.median)} more`,
      `engine calls of a pass: set ${JSON.stringify(setCalls)}, one attempt ${JSON.stringify(oneCalls)}: ${same ? 'the same (PASS)' : 'DIFFERENT (FAIL)'}`,
    ];
    process.stdout.write(lines.join('\n') + '\n');
    if (s.median > TARGET_MS || !same) process.exitCode = 1;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/sets: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});

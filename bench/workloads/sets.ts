/**
 * An AttemptSet of CELLS x CELLS children (issue 14's speed targets), in `make bench`
 * (BENCH_ONLY=sets) and alone (`make bench-sets`, bench/sets.ts).
 *
 * - Expanding and planning it in a pass, CLI and cold: `berth plan` (read-only against the engine:
 *   its 4 lists) in a new process with a fresh (empty) state folder each round, rounds alternating with
 *   `berth plan` over one attempt and `node -e 0`. Target: <= 1 s.
 * - The same with the state folder kept between rounds (as CI keeps it): what berth's caches save.
 * - The engine calls of a pass over that set and over one attempt (in-process, counted): the same
 *   4 lists, whatever the number of children.
 * Everything lives in a temp folder, removed at the end; nothing is created on the engine.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { planPass } from '../../src/controller/pass';
import { createDockerEngine } from '../../src/engine/docker';
import { CallCounter, instrumentEngine, readOnlyEngine } from '../../src/engine/wrap';
import { StatusStore } from '../../src/status/store';
import { silentLogger } from '../../src/util/log';
import { berth, run as runCmd } from '../lib/proc';
import { DesiredStates } from '../../src/plan/desired-for';

export interface SetSamples {
  children: number;
  /** `berth plan` over the set, a fresh state folder each round (ms). */
  setCold: number[];
  /** `berth plan` over the set, the state folder kept from the round before (ms). */
  setKept: number[];
  /** `berth plan` over one attempt, fresh state (ms). */
  one: number[];
  /** `node -e 0` (ms). */
  bareNode: number[];
  calls: { set: Record<string, number>; one: Record<string, number> };
}

export const setYaml = (cells: number) => `apiVersion: berth.dev/v1
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

async function folder(dir: string, file: string, text: string, state: string): Promise<string[]> {
  const specs = path.join(dir, 'specs');
  await fs.mkdir(specs, { recursive: true });
  await fs.writeFile(path.join(specs, file), text);
  return ['--specs', specs, '--state', state, '--instance', `bench-sets-${process.pid}`, '--log-level', 'error'];
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
    policy: {},
    env: process.env,
    log: silentLogger(),
    desired: new DesiredStates(),
  };
  await planPass(cfg, engine, new StatusStore(state, cfg.instance));
  return counter.snapshot();
}

export async function setRounds(cells: number, rounds: number, log: (m: string) => void): Promise<SetSamples> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-bench-sets-'));
  try {
    const keptState = path.join(dir, 'kept-state');
    const setArgs = (state: string) => folder(path.join(dir, 'set'), 'big.yaml', setYaml(cells), state);
    const oneArgs = await folder(path.join(dir, 'one'), 'one.yaml', ONE, path.join(dir, 'one-state'));
    const out: SetSamples = { children: cells * cells, setCold: [], setKept: [], one: [], bareNode: [], calls: { set: {}, one: {} } };
    // One untimed pass first: the kept state folder then holds what a CI run left behind. Both
    // state folders exist (berth writes its spec cache only into a state folder that exists): a
    // fresh one each round is an empty folder, so that round also writes the cache.
    await fs.mkdir(keptState, { recursive: true });
    await berth(['plan', ...(await setArgs(keptState))]);
    for (let i = 0; i < rounds; i++) {
      log(`sets: round ${i + 1}/${rounds}`);
      const fresh = path.join(dir, `fresh-${i}`);
      await fs.mkdir(fresh, { recursive: true });
      const steps: [number[], () => Promise<number>][] = [
        [out.bareNode, async () => (await runCmd(process.execPath, ['-e', '0'])).ms],
        [out.one, async () => (await berth(['plan', ...oneArgs])).ms],
        [out.setCold, async () => (await berth(['plan', ...(await setArgs(fresh))])).ms],
        [out.setKept, async () => (await berth(['plan', ...(await setArgs(keptState))])).ms],
      ];
      for (let k = 0; k < steps.length; k++) {
        const [into, step] = steps[(k + i) % steps.length] as [number[], () => Promise<number>];
        into.push(await step());
      }
      await fs.rm(fresh, { recursive: true, force: true });
    }
    out.calls.set = await calls(await setArgs(path.join(dir, 'calls-state')));
    out.calls.one = await calls(oneArgs);
    return out;
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/**
 * Start-up (issue 55): the CPU (user + system, as bash's `time` reports a child's) of a short
 * command against `node -e 0`, alternating, medians over BENCH_STARTUP_RUNS runs each:
 * `berth --version`, `berth validate` of a folder of 15 attempts, `berth get` of those 15 attempts
 * with their finished status records (as a real finished, collected attempt's: tenk.ts). Target:
 * each <= 1.5x `node -e 0`'s CPU plus the engine's own answer time; these commands ask the engine
 * nothing (get asks it only when no attempt has a record; a unit test checks they do not load its
 * client), so the engine's part is 0. The installed CLI as users run it: `node bin/berth.js`, its
 * caches (bin/berth.js runBundle) in a folder of the run's own, made by one untimed run of each
 * command first.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { RACY_MS } from '../../src/spec/disk-cache';
import { loadSpecs } from '../../src/spec/loader';
import type { BenchRun } from '../lib/fixture';
import { BERTH_BIN, REPO, run } from '../lib/proc';
import { finishedRecord } from './tenk';

export interface StartupSamples {
  attempts: number;
  /** CPU ms of each run, by contender. */
  cpu: { bareNode: number[]; version: number[]; validate: number[]; get: number[] };
  /** Wall ms (information). */
  wall: { bareNode: number[]; version: number[]; validate: number[]; get: number[] };
}

/** CPU and wall ms of one command, from bash's `time` (getrusage of the child). */
export async function cpuOf(argv: string[], env: NodeJS.ProcessEnv): Promise<{ cpu: number; wall: number }> {
  const r = await run('bash', ['-c', 'TIMEFORMAT="%3U %3S %3R"; time "$@" >/dev/null 2>/dev/null', 'cpu', ...argv], { cwd: REPO, env });
  const [u, s, w] = r.stderr.trim().split('\n').pop()!.split(/\s+/).map(Number);
  if (![u, s, w].every((x) => Number.isFinite(x))) throw new Error(`startup: no time from bash for ${argv.join(' ')}: ${r.stderr.slice(-300)}`);
  return { cpu: ((u as number) + (s as number)) * 1000, wall: (w as number) * 1000 };
}

export async function startupRounds(bench: BenchRun, runs: number, log: (m: string) => void): Promise<StartupSamples> {
  const sb = await bench.berthSandbox('s');
  const n = 15;
  const names = Array.from({ length: n }, (_, i) => `s${String(i).padStart(2, '0')}`);
  await sb.writeSpecs(names, ['true']);
  const load = await loadSpecs({ specsDir: sb.specsDir, resultsRoot: sb.resultsRoot });
  if (load.errors.length || load.specs.length !== n) throw new Error(`startup: the ${n} specs did not load: ${load.errors[0]?.message}`);
  const dir = path.join(sb.stateDir, sb.instance, 'attempts');
  await fs.mkdir(dir, { recursive: true });
  const at = Date.now() - 600_000;
  for (const [i, s] of load.specs.entries())
    await fs.writeFile(
      path.join(dir, `${s.spec.name}.json`),
      JSON.stringify(finishedRecord(sb.instance, s.spec.name, s.hash, sb.resultsRoot, at + i * 1000), null, 2) + '\n',
    );
  // Steady state, as a user's repeated commands over specs not just written: a spec file changed
  // less than RACY_MS before a command reads it is read and hashed again by every command until
  // then (its identity is not trusted yet: src/spec/disk-cache.ts), and the run after that writes
  // the spec cache again. That is the run after an edit, not the ones after it: the runs below
  // start once the newest spec file is RACY_MS old (15 rounds of 4 commands take ~2.5 s).
  const newest = Math.max(...(await Promise.all(names.map(async (n) => (await fs.stat(path.join(sb.specsDir, `${n}.yaml`))).ctimeMs))));
  const settle = newest + RACY_MS + 50 - Date.now();
  if (settle > 0) await new Promise((resolve) => setTimeout(resolve, settle));
  // berth's caches of this run's own (compiled code, fixture digests), as a user's ~/.cache/berth.
  const env = { ...process.env, BERTH_CACHE_DIR: await bench.dir('startup-cache') };
  const node = process.execPath;
  const argv = {
    bareNode: [node, '-e', '0'],
    version: [node, BERTH_BIN, '--version'],
    validate: [node, BERTH_BIN, 'validate', sb.specsDir],
    get: [node, BERTH_BIN, 'get', ...sb.globalArgs('warn')],
  };
  // Each command once, untimed: its output checked, and its code cache made.
  const check = await run(node, [BERTH_BIN, 'get', '-o', 'name', ...sb.globalArgs('warn')], { cwd: REPO, env });
  if (check.stdout.trim().split('\n').length !== n || check.stderr)
    throw new Error(`startup: get did not list the ${n} attempts quietly: ${check.stderr.slice(0, 300)}`);
  for (const a of Object.values(argv)) await run(a[0] as string, a.slice(1), { cwd: REPO, env });
  const out: StartupSamples = {
    attempts: n,
    cpu: { bareNode: [], version: [], validate: [], get: [] },
    wall: { bareNode: [], version: [], validate: [], get: [] },
  };
  const keys = Object.keys(argv) as (keyof typeof argv)[];
  for (let r = 0; r < runs; r++) {
    // the order rotates every round
    for (let k = 0; k < keys.length; k++) {
      const key = keys[(k + r) % keys.length] as keyof typeof argv;
      const t = await cpuOf(argv[key], env);
      out.cpu[key].push(t.cpu);
      out.wall[key].push(t.wall);
    }
  }
  log(`startup: CPU medians over ${runs} runs: ${keys.map((k) => `${k} ${median(out.cpu[k]).toFixed(0)} ms`).join(', ')}`);
  return out;
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? ((s[(s.length - 1) >> 1] as number) + (s[s.length >> 1] as number)) / 2 : NaN;
}

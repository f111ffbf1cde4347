/**
 * 100,000 cells (issue 55), nothing started: the same fleet two ways, 10 AttemptSets of 10,000
 * (500 tasks × 20 seeds each) and one set of 100,000 (10 models × 500 tasks × 20 seeds,
 * `maxChildren: 100000`). Each command a new process as users run it (`node bin/berth.js`), its
 * wall time, CPU (user + system) and peak RSS from GNU time (scripts/bench-deps.sh installs it),
 * rounds alternating between the two fleets:
 * - `validate`; `plan` with a fresh state folder and with the state folder kept (its spec cache);
 * - `get` and `summary` over 100,000 finished records (as a real finished, collected attempt's,
 *   tenk.ts; 1 in 7 failed), the 10 sets' fleet; the first `get` (untimed) reads the 100,000 files and
 *   keeps their index, as the first command after a controller went idle does;
 * - the fleet report of 100,000 finished cells (synthetic records, report.ts), its size, and in
 *   Debian's headless chromium the time until the page has loaded with the heatmap drawn and the
 *   table's first page shown (its script run), and its first paint; alternating with a minimal page.
 * Targets: validate ≤ 3 s and ≤ 300 MB; plan ≤ 4 s and ≤ 400 MB; get and summary ≤ 4 s; the report
 * ≤ 10 MB and open ≤ 3 s. Everything lives in the run's temp folder; nothing touches the engine but
 * plan's four read-only lists.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { buildReport } from '../../src/report/model';
import { renderReport } from '../../src/report/render';
import { summarize } from '../../src/sets/summary';
import { loadSpecs } from '../../src/spec/loader';
import { launchBrowser } from '../../test/support/browser';
import type { BenchRun } from '../lib/fixture';
import { BERTH_BIN, REPO, run } from '../lib/proc';
import { syntheticFleet } from './report';
import { finishedRecord } from './tenk';

export const HUNDREDK_TARGETS = {
  validateMs: 3000,
  validateMb: 300,
  planMs: 4000,
  planMb: 400,
  getMs: 4000,
  reportBytes: 10 * 1024 * 1024,
  reportOpenMs: 3000,
};

/** One command's figures. */
export interface Took {
  wallMs: number;
  cpuMs: number;
  rssKb: number;
}

export interface HundredkSamples {
  cells: number;
  /** By fleet ('sets': 10 × 10,000, 'one': 1 × 100,000), by command. */
  fleets: Record<'sets' | 'one', { validate: Took[]; planFresh: Took[]; planKept: Took[] }>;
  get: Took[];
  summary: Took[];
  /** The first get, which read the records' files and kept their index. */
  getFirst: Took;
  report: { attempts: number; bytes: number; buildMs: number; openMs: number[]; firstPaintMs: number[]; minimalOpenMs: number[]; heatCells: number };
}

const TASKS = Array.from({ length: 500 }, (_, i) => `task-${String(i).padStart(3, '0')}`).join(', ');

function setYaml(name: string, models: string[] | null): string {
  return `apiVersion: berth.dev/v1
kind: AttemptSet
metadata: {name: ${name}}
spec:
  matrix:
${models ? `    model: [${models.join(', ')}]\n` : ''}    task: [${TASKS}]
    seed: {range: [0, 20]}
${models ? '  maxChildren: 100000\n' : ''}  maxParallel: 8
  template:
    image: berth/busybox:local
    command: [sh, -c, 'echo \${{ matrix.task }} \${{ matrix.seed }} ${models ? '${{ matrix.model }}' : name} > /results/out.txt']
    deadlineSeconds: 600
`;
}

/** `node bin/berth.js ARGS` under GNU time: wall, CPU and peak RSS. */
async function timed(args: string[], env: NodeJS.ProcessEnv): Promise<Took> {
  const r = await run('/usr/bin/time', ['-f', 'BERTH-TIME %e %U %S %M', process.execPath, BERTH_BIN, ...args], {
    cwd: REPO,
    env,
    timeoutMs: 600_000,
    allowFail: true,
  });
  const m = /BERTH-TIME ([\d.]+) ([\d.]+) ([\d.]+) (\d+)\s*$/.exec(r.stderr);
  if (!m) throw new Error(`hundredk: no time for berth ${args.join(' ')}: ${r.stderr.slice(-500)}`);
  if (r.code !== 0 && !(args[0] === 'plan' && r.code === 4))
    throw new Error(`hundredk: berth ${args.slice(0, 2).join(' ')} exited ${r.code}: ${r.stderr.slice(-800)}`);
  return { wallMs: Number(m[1]) * 1000, cpuMs: (Number(m[2]) + Number(m[3])) * 1000, rssKb: Number(m[4]) };
}

export async function hundredkRounds(bench: BenchRun, rounds: number, log: (m: string) => void): Promise<HundredkSamples> {
  await run('/usr/bin/time', ['-f', '%e', 'true']).catch(() => {
    throw new Error('hundredk: GNU time (/usr/bin/time) is missing: run ./scripts/bench-deps.sh (make bench does)');
  });
  const root = await bench.dir('hundredk');
  const env = { ...process.env, BERTH_CACHE_DIR: path.join(root, 'cache') };
  const folders = { sets: path.join(root, 'sets', 'specs'), one: path.join(root, 'one', 'specs') };
  await fs.mkdir(folders.sets, { recursive: true });
  await fs.mkdir(folders.one, { recursive: true });
  for (let m = 0; m < 10; m++) await fs.writeFile(path.join(folders.sets, `model${m}.yaml`), setYaml(`model${m}`, null));
  await fs.writeFile(
    path.join(folders.one, 'fleet.yaml'),
    setYaml(
      'fleet',
      Array.from({ length: 10 }, (_, m) => `m${m}`),
    ),
  );
  const instance = `bench-${bench.id}-k`;
  bench.instances.add(instance);
  const args = (fleet: 'sets' | 'one', state: string) => ['--specs', folders[fleet], '--state', state, '--instance', instance, '--log-level', 'error'];
  const out: HundredkSamples = {
    cells: 100_000,
    fleets: { sets: { validate: [], planFresh: [], planKept: [] }, one: { validate: [], planFresh: [], planKept: [] } },
    get: [],
    summary: [],
    getFirst: { wallMs: 0, cpuMs: 0, rssKb: 0 },
    report: { attempts: 0, bytes: 0, buildMs: 0, openMs: [], firstPaintMs: [], minimalOpenMs: [], heatCells: 0 },
  };
  // the kept state folders: one untimed plan each first (what CI keeps between runs)
  const kept = { sets: path.join(root, 'sets', 'kept'), one: path.join(root, 'one', 'kept') };
  for (const f of ['sets', 'one'] as const) {
    await fs.mkdir(kept[f], { recursive: true });
    await timed(['plan', ...args(f, kept[f])], env);
  }
  for (let r = 0; r < rounds; r++) {
    log(`hundredk: round ${r + 1}/${rounds}: validate, plan (fresh, kept) of both fleets`);
    for (const f of (r % 2 ? ['one', 'sets'] : ['sets', 'one']) as ('sets' | 'one')[]) {
      out.fleets[f].validate.push(await timed(['validate', folders[f]], env));
      const fresh = path.join(root, f, `fresh-${r}`);
      await fs.mkdir(fresh, { recursive: true });
      out.fleets[f].planFresh.push(await timed(['plan', ...args(f, fresh)], env));
      await fs.rm(fresh, { recursive: true, force: true });
      out.fleets[f].planKept.push(await timed(['plan', ...args(f, kept[f])], env));
    }
  }

  // 100,000 finished records for the 10 sets' fleet
  log('hundredk: writing 100,000 finished records');
  const state = path.join(root, 'sets', 'records');
  const load = await loadSpecs({ specsDir: folders.sets, resultsRoot: path.join(state, 'results') });
  if (load.specs.length !== 100_000 || load.errors.length)
    throw new Error(`hundredk: the 10 sets loaded ${load.specs.length} children, errors: ${load.errors[0]?.message}`);
  const dir = path.join(state, instance, 'attempts');
  await fs.mkdir(dir, { recursive: true });
  const at = Date.now() - 86_400_000;
  for (let i = 0; i < load.specs.length; i += 500) {
    await Promise.all(
      load.specs.slice(i, i + 500).map((s, j) => {
        const rec = finishedRecord(instance, s.spec.name, s.hash, path.join(state, 'results'), at + (i + j) * 100);
        if ((i + j) % 7 === 0) Object.assign(rec, { phase: 'Failed', reason: 'Error', exitCode: 1 });
        return fs.writeFile(path.join(dir, `${s.spec.name}.json`), JSON.stringify(rec, null, 2) + '\n');
      }),
    );
  }
  // the records' folder must have been still a moment before a read keeps its index (status/index-file.ts)
  await new Promise((res) => setTimeout(res, 2500));
  const getArgs = ['--specs', folders.sets, '--state', state, '--instance', instance, '--log-level', 'error'];
  out.getFirst = await timed(['get', ...getArgs], env);
  for (let r = 0; r < rounds; r++) {
    log(`hundredk: round ${r + 1}/${rounds}: get and summary over 100,000 records`);
    for (const cmd of r % 2 ? ['summary', 'get'] : ['get', 'summary']) (cmd === 'get' ? out.get : out.summary).push(await timed([cmd, ...getArgs], env));
  }

  // the report of 100,000 finished cells
  log('hundredk: the report of 100,000 finished cells');
  const f = syntheticFleet({ models: Array.from({ length: 10 }, (_, m) => `model-${m}`), tasks: 500, seeds: 20, finished: true });
  const now = Date.parse('2026-01-03T00:00:00Z');
  const t0 = performance.now();
  const s = summarize(f.sets, f.statuses, now);
  const children = [...f.sets.values()][0]?.children ?? [];
  const d = buildReport({
    sets: s.sets,
    childLabels: new Map(children.map((c) => [c.name, c.loaded?.spec.labels ?? {}] as const)),
    plain: [],
    statuses: f.statuses,
    now,
    instance: 'bench',
    maxRunning: 16,
    resultsRoot: '/bench/results-root',
    linkBase: '/bench/results-root',
    mode: 'file',
  });
  const html = renderReport(d);
  out.report.buildMs = performance.now() - t0;
  out.report.attempts = d.attempts.length;
  out.report.bytes = Buffer.byteLength(html);
  const file = path.join(root, 'report.html');
  const minimal = path.join(root, 'minimal.html');
  await fs.writeFile(file, html);
  await fs.writeFile(minimal, '<!doctype html><html lang="en"><head><meta charset="utf-8"><title>minimal</title></head><body><h1>minimal</h1></body></html>\n');
  const browser = await launchBrowser();
  try {
    for (let r = 0; r < rounds; r++) {
      for (const which of r % 2 ? ['minimal', 'report'] : ['report', 'minimal']) {
        const p = await browser.context.newPage();
        const errors: string[] = [];
        p.on('pageerror', (e) => errors.push(e.message));
        const t = performance.now();
        await p.goto(pathToFileURL(which === 'report' ? file : minimal).href, { waitUntil: 'load' });
        if (which === 'report') {
          // loaded: the heatmap drawn (it is in the HTML) and the table's first page shown by the script
          await p.waitForSelector('#tbl tbody tr', { timeout: 60_000 });
          out.report.openMs.push(performance.now() - t);
          out.report.heatCells = await p.$$eval('table.heat td', (tds) => tds.length);
          out.report.firstPaintMs.push(
            (await p.evaluate(`(performance.getEntriesByName('first-contentful-paint')[0] || { startTime: NaN }).startTime`)) as number,
          );
          const shown = (await p.textContent('#shown')) ?? '';
          if (errors.length || !shown.startsWith(`${d.attempts.length} of ${d.attempts.length} attempts`))
            throw new Error(`hundredk: the report page did not open cleanly (${errors.join('; ')}; it shows ${JSON.stringify(shown)})`);
        } else out.report.minimalOpenMs.push(performance.now() - t);
        await p.close();
      }
    }
  } finally {
    await browser.close();
  }
  return out;
}

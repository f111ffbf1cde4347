/**
 * Every bench row against another build of berth, in one run: `bench/run.ts` of this tree and of
 * another checkout (an earlier commit: `git worktree add /tmp/old <commit>`, with its
 * node_modules and `npm run build`), one workload at a time, the two builds alternating (the
 * order flips from one workload to the next). Each row's ratio is against its own reference
 * (the raw engine, a peer) measured in the same turn, so the two builds' ratios compare under
 * the same load; a row is called worse only when the new build's median ratio is above the
 * other's whole range and more than `BENCH_AB_SLACK` (default 10 %) above its median. A row
 * without a ratio (an absolute target: RSS, idle CPU, ready, calls) is worse when its verdict went
 * from PASS to MISS, or its figure is more than `BENCH_AB_ABS_SLACK` (20 %) above the other's (a
 * count: its verdict alone).
 *
 *   BENCH_AB_OTHER=/tmp/old [BENCH_AB_LABEL=875f840] [BENCH_AB_ONLY=noop,fleet] [BENCH_AB_SKIP=swarm] \
 *     BENCH_ROUNDS=3 node --import tsx bench/ab.ts
 *
 * Workloads are those both builds' `bench/run.ts` name (`BENCH_ONLY`); `resources` goes with
 * `noop` (it needs it). Other `BENCH_*` variables reach both runs. Written to
 * bench/results/ab-<label>-<run id>.md.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sweep } from './lib/cleanup';
import { RawEngine, socketFromEnv } from './lib/engine';
import { BENCH_LABEL } from './lib/fixture';
import { REPO } from './lib/proc';

interface Ratio {
  median: number;
  min: number;
  max: number;
}
interface BenchRow {
  id: string;
  workload: string;
  /** berth's figure as the report prints it (the only figure of a row without a ratio). */
  berth?: string;
  ratio?: Ratio | null;
  target?: string;
  verdict?: string;
}
interface Side {
  name: string;
  tree: string;
}

/** The workloads a tree's bench/run.ts lists under BENCH_ONLY (its header comment). */
export async function workloadsOf(tree: string): Promise<string[]> {
  const src = await fs.readFile(path.join(tree, 'bench', 'run.ts'), 'utf8');
  const m = /BENCH_ONLY\s+comma list of\s*([\s\S]*?):\s*a partial run/.exec(src);
  if (!m?.[1]) throw new Error(`${tree}/bench/run.ts: no BENCH_ONLY list in its header`);
  return m[1]
    .replace(/^\s*\*\s*/gm, '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

/** The groups to run: one workload each, `resources` with `noop`. */
export function groupsOf(common: string[], only?: Set<string>, skip?: Set<string>): string[][] {
  const picked = common.filter((w) => (!only || only.has(w)) && !skip?.has(w));
  const groups: string[][] = [];
  for (const w of picked) {
    if (w === 'resources') continue;
    groups.push(w === 'noop' && picked.includes('resources') ? ['noop', 'resources'] : [w]);
  }
  return groups;
}

/** new ÷ other, and the call: worse only outside the other's range and past the slack. */
export function compareRatios(mine: Ratio, other: Ratio, slack: number): { change: number; call: 'worse' | 'better' | 'same' } {
  const change = mine.median / other.median;
  if (mine.median > other.max && change > 1 + slack) return { change, call: 'worse' };
  if (mine.median < other.min && change < 1 - slack) return { change, call: 'better' };
  return { change, call: 'same' };
}

/** Units of the figures rows without a ratio print, in one base each (ms, bytes, % of a core). */
const UNITS: Record<string, number> = {
  µs: 0.001,
  ms: 1,
  s: 1000,
  min: 60_000,
  h: 3_600_000,
  B: 1,
  KB: 1e3,
  KiB: 1024,
  MB: 1e6,
  MiB: 1024 ** 2,
  GB: 1e9,
  GiB: 1024 ** 3,
  '%': 1,
};
const FIGURE = new RegExp(`(-?[\\d,]*\\.?\\d+) ?(${Object.keys(UNITS).join('|')})(?![\\w/])`);

/**
 * The figure a row without a ratio is judged by, from its `berth` text: the one its target names
 * (`p95 ≤ 500 ms`: the figure after "p95"; `max ≤ 2 s`: after "max"), else the first with a unit
 * (`108 MB (peak before …)`, `10 ms over 10.0 s = 0.10% of a core`: the share, when the target is
 * one). Undefined for a figure with no unit (call counts: compared as text) or a rate (`/s`).
 */
export function absoluteFigure(berth: string, target = ''): number | undefined {
  const label = /\b(p\d+|median|max)\b/.exec(target)?.[1];
  let text = berth;
  if (label) {
    const at = berth.search(new RegExp(`\\b${label}\\b`));
    if (at >= 0) text = berth.slice(at);
  } else if (/%/.test(target)) {
    const at = berth.search(/[\d.]+ ?%/);
    if (at >= 0) text = berth.slice(at);
  }
  const m = FIGURE.exec(text);
  if (!m?.[1] || !m[2]) return undefined;
  return Number(m[1].replace(/,/g, '')) * (UNITS[m[2]] as number);
}

/**
 * A row without a ratio against the other build's: worse when its verdict went from PASS to
 * MISS, or its figure (lower is better: time, memory, size, CPU) is past the slack above the
 * other's; a row whose figure has no unit (calls, counts) is judged by its verdict alone (its
 * target says what must hold: "the same at every size").
 */
export function compareAbsolute(mine: BenchRow, other: BenchRow, slack: number): { change?: number; call: 'worse' | 'better' | 'same' } {
  if (other.verdict === 'PASS' && mine.verdict === 'MISS') return { call: 'worse' };
  if (other.verdict === 'MISS' && mine.verdict === 'PASS') return { call: 'better' };
  const a = absoluteFigure(mine.berth ?? '', mine.target);
  const b = absoluteFigure(other.berth ?? '', other.target);
  if (a === undefined || b === undefined || b <= 0) return { call: 'same' };
  const change = a / b;
  return { change, call: change > 1 + slack ? 'worse' : change < 1 - slack ? 'better' : 'same' };
}

function runBench(side: Side, group: string[], log: (s: string) => void): Promise<BenchRow[]> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    const child = spawn(process.execPath, ['--import', 'tsx', 'bench/run.ts'], {
      cwd: side.tree,
      env: { ...process.env, BENCH_ONLY: group.join(','), BENCH_AB: '' },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let tail = '';
    let runId: string | undefined;
    child.stderr.on('data', (d: Buffer) => {
      tail = (tail + d.toString()).slice(-4000);
      runId ??= benchRunOf(tail);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      log(`${side.name} ${group.join(',')}: exit ${code} in ${Math.round((Date.now() - started) / 1000)} s`);
      // what an older build's clean-up left of its run (its git workload's source binding volume, say): swept by this tree's, by the run's id
      void (runId ? sweepRun(runId, side, log) : Promise.resolve()).then(() => {
        if (code !== 0)
          return resolve([{ id: `${group.join(',')}-failed`, workload: `${group.join(',')} failed: ${tail.trim().split('\n').slice(-3).join(' / ')}` }]);
        fs.readFile(path.join(side.tree, 'bench', 'results', 'partial.json.tmp'), 'utf8').then(
          (s) => resolve((JSON.parse(s) as { rows: BenchRow[] }).rows),
          reject,
        );
      });
    });
  });
}

/** The id of a bench run, from its log's first line (`[bench] run <id>: ...`, bench/run.ts). */
export function benchRunOf(log: string): string | undefined {
  return /^\[bench\] run ([0-9a-z]{6}):/m.exec(log)?.[1];
}

/** Removes what a run of `side` left on the engine, by its run's id and labels only (bench/lib/cleanup.ts); never throws. */
async function sweepRun(id: string, side: Side, log: (s: string) => void): Promise<void> {
  try {
    const n = await sweep(new RawEngine(socketFromEnv()), { id, label: `${BENCH_LABEL}=${id}` });
    if (n) log(`${side.name}: removed ${n} resources its run ${id} left`);
  } catch (err) {
    log(`${side.name}: sweeping its run ${id}: ${String(err)}`);
  }
}

const cell = (s: string | undefined): string => (s ?? '—').replace(/\|/g, '\\|');
const x = (r: Ratio | null | undefined): string => (r ? `${r.median.toFixed(2)}× (${r.min.toFixed(2)}–${r.max.toFixed(2)}×)` : '—');

async function main(): Promise<void> {
  const otherTree = process.env.BENCH_AB_OTHER;
  if (!otherTree) throw new Error('BENCH_AB_OTHER: the other checkout to compare with');
  const label = process.env.BENCH_AB_LABEL ?? path.basename(otherTree);
  const slack = Number(process.env.BENCH_AB_SLACK ?? '0.10');
  /** A row without a ratio has one figure a round and no reference beside it: a wider slack (BENCH_AB_ABS_SLACK, 20 %). */
  const absSlack = Number(process.env.BENCH_AB_ABS_SLACK ?? '0.20');
  const set = (v: string | undefined) => (v ? new Set(v.split(',').map((s) => s.trim())) : undefined);
  const mine: Side = { name: 'this build', tree: REPO };
  const other: Side = { name: label, tree: path.resolve(otherTree) };
  const theirs = new Set(await workloadsOf(other.tree));
  const common = (await workloadsOf(REPO)).filter((w) => theirs.has(w));
  const groups = groupsOf(common, set(process.env.BENCH_AB_ONLY), set(process.env.BENCH_AB_SKIP));
  const runId = Date.now().toString(36).slice(-6);
  const log = (s: string) => process.stderr.write(`[ab] ${new Date().toISOString().slice(11, 19)} ${s}\n`);
  const load0 = os.loadavg();
  const began = Date.now();
  const lines: string[] = [];
  const calls = { worse: [] as string[], better: [] as string[], same: 0, alone: 0 };
  const out = path.join(REPO, 'bench', 'results', `ab-${label}-${runId}.md`);
  /** The table so far: written after every workload, so a run cut short keeps what it measured. */
  const write = async (done: boolean): Promise<string> => {
    const load1 = os.loadavg();
    const md = [
      `## berth bench A/B: this build against ${label} — ${new Date().toISOString()}${done ? '' : ' (under way)'}`,
      '',
      `Run \`${runId}\`, ${Math.round((Date.now() - began) / 1000)} s, rounds ${process.env.BENCH_ROUNDS ?? '5'} a workload; load average before ${load0.map((l) => l.toFixed(1)).join(', ')}, ${done ? 'after' : 'now'} ${load1.map((l) => l.toFixed(1)).join(', ')}.`,
      `Each workload ran in both builds back to back (order flipping per workload); each ratio is berth ÷ its row's reference in that same run. "Worse": this build's median above ${label}'s whole range and over ${Math.round(slack * 100)} % above its median; a row without a ratio: its verdict went from PASS to MISS, or its figure is over ${Math.round(absSlack * 100)} % above ${label}'s (a count: its verdict alone).`,
      '',
      `| Workload | Row | ${label}: ratio median (min–max) | this build | this ÷ ${label} | Call |`,
      '|---|---|---:|---:|---:|---|',
      ...lines,
      '',
      `**${calls.worse.length} worse${calls.worse.length ? ` (${calls.worse.join(', ')})` : ''}, ${calls.better.length} better, ${calls.same} same, ${calls.alone} without a pair.**`,
      '',
    ].join('\n');
    await fs.writeFile(out, md);
    return md;
  };
  for (const [i, group] of groups.entries()) {
    const order = i % 2 === 0 ? [other, mine] : [mine, other];
    const rows = new Map<Side, BenchRow[]>();
    for (const side of order) rows.set(side, await runBench(side, group, log));
    const before = new Map((rows.get(other) ?? []).map((r) => [r.id, r]));
    for (const r of rows.get(mine) ?? []) {
      const o = before.get(r.id);
      if (!o) {
        calls.alone++;
        lines.push(`| ${group.join(',')} | ${r.workload} | — | ${x(r.ratio) === '—' ? cell(r.berth) : x(r.ratio)} | — | only this build |`);
        continue;
      }
      if (!r.ratio || !o.ratio) {
        const c = compareAbsolute(r, o, absSlack);
        if (c.call === 'same') calls.same++;
        else calls[c.call].push(r.id);
        lines.push(
          `| ${group.join(',')} | ${r.workload} | ${cell(o.berth)} ${o.verdict ?? ''} | ${cell(r.berth)} ${r.verdict ?? ''} | ${c.change?.toFixed(2) ?? '—'} | ${c.call === 'worse' ? '❌ worse' : c.call} |`,
        );
        continue;
      }
      const c = compareRatios(r.ratio, o.ratio, slack);
      if (c.call === 'same') calls.same++;
      else calls[c.call].push(r.id);
      lines.push(
        `| ${group.join(',')} | ${r.workload} | ${x(o.ratio)} | ${x(r.ratio)} | ${c.change.toFixed(2)} | ${c.call === 'worse' ? '❌ worse' : c.call} |`,
      );
    }
    for (const o of rows.get(other) ?? [])
      if (!(rows.get(mine) ?? []).some((r) => r.id === o.id)) lines.push(`| ${group.join(',')} | ${o.workload} | ${x(o.ratio)} | — | — | only ${label} |`);
    await write(false);
  }
  process.stdout.write(await write(true));
  log(`wrote ${path.relative(REPO, out)}`);
}

if (require.main === module)
  main().catch((err: unknown) => {
    process.stderr.write(`[ab] FAILED: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
    process.exitCode = 1;
  });

/**
 * `make bench-sets`: an AttemptSet of 10,000 children alone (issue 14's speed targets); the same
 * workload is part of `make bench` (BENCH_ONLY=sets). See bench/workloads/sets.ts.
 *
 *   node --import tsx bench/sets.ts
 *
 * Environment: BENCH_ROUNDS (default 5), BENCH_SET_CELLS (default 100: a CELLS x CELLS set).
 */
import os from 'node:os';
import { fmtMs, summarize } from './lib/stats';
import { setRounds } from './workloads/sets';

const TARGET_MS = 1000;
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const cells = Number(process.env.BENCH_SET_CELLS ?? 100);

async function main(): Promise<void> {
  const load = os.loadavg();
  const r = await setRounds(cells, rounds, (m) => process.stderr.write(`[bench-sets] ${m}\n`));
  const s = summarize(r.setCold);
  const k = summarize(r.setKept);
  const o = summarize(r.one);
  const n = summarize(r.bareNode);
  const same = JSON.stringify(r.calls.set) === JSON.stringify(r.calls.one);
  const lines = [
    `AttemptSet of ${r.children} children, ${rounds} rounds, ${os.cpus().length} CPUs, load average before ${load.map((x) => x.toFixed(1)).join(' ')}, after ${os
      .loadavg()
      .map((x) => x.toFixed(1))
      .join(' ')}`,
    `berth plan (CLI, cold, fresh state) over the set: median ${fmtMs(s.median)} (min ${fmtMs(s.min)}, max ${fmtMs(s.max)}); target <= ${fmtMs(TARGET_MS)}: ${s.median <= TARGET_MS ? 'PASS' : 'MISS'}`,
    `berth plan (CLI, state folder kept) over the set: median ${fmtMs(k.median)} (min ${fmtMs(k.min)}, max ${fmtMs(k.max)})`,
    `berth plan (CLI, cold) over one attempt: median ${fmtMs(o.median)}; node -e 0: ${fmtMs(n.median)}; the set costs ${fmtMs(s.median - o.median)} more than one attempt`,
    `engine calls of a pass: set ${JSON.stringify(r.calls.set)}, one attempt ${JSON.stringify(r.calls.one)}: ${same ? 'the same (PASS)' : 'DIFFERENT (MISS)'}`,
  ];
  process.stdout.write(lines.join('\n') + '\n');
  if (s.median > TARGET_MS || !same) process.exitCode = 1;
}

main().catch((err: unknown) => {
  process.stderr.write(`bench/sets: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exitCode = 1;
});

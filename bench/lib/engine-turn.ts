/**
 * The cold-start and fleet rows on the newest engine of the compatibility matrix as well
 * (test/support/engine-matrix.ts; BENCH_NEWEST_ENGINE picks another, `none` skips it): a private
 * engine from the root scripts/engines-up.sh made, given the bench's image (`docker save | load`
 * from the machine's engine), and the bench itself run again in that engine's network namespace
 * with DOCKER_HOST its socket and BENCH_ONLY those workloads (BENCH_ENGINE_TURN says it is such a
 * turn: it writes its rows to BENCH_TURN_OUT, not to the results). Each of its ratios is against
 * that engine's own floor (the raw Engine API on that engine), measured in the same turn.
 */
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { engineTitle, MATRIX, matrixEngine } from '../../test/support/engine-matrix';
import type { Row } from './report';

export interface TurnOutput {
  rows: Row[];
  /** The engine, as the machine line names the machine's: `Docker Engine 28.5.2 (API 1.51, overlay2)`. */
  engine: string;
}

/** Which engine the newest-engine turn runs on; undefined: none (BENCH_NEWEST_ENGINE=none). */
export function newestEngineTag(): string | undefined {
  const tag = process.env.BENCH_NEWEST_ENGINE ?? 'e28';
  if (tag === 'none') return undefined;
  if (!MATRIX.some((e) => e.tag === tag)) throw new Error(`BENCH_NEWEST_ENGINE=${tag}: not one of ${MATRIX.map((e) => e.tag).join(', ')}, none`);
  return tag;
}

/** Runs `workloads` of the bench on the matrix engine `tag`; its rows, named `<id>@<tag>`. */
export async function engineTurn(tag: string, workloads: string[], log: (s: string) => void): Promise<TurnOutput> {
  const e = MATRIX.find((m) => m.tag === tag);
  if (!e) throw new Error(`no matrix engine ${tag}`);
  const pe = matrixEngine(e);
  const out = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'berth-bench-turn-')), 'rows.json');
  try {
    log(`${engineTitle(e)}: starting it for ${workloads.join(', ')}`);
    await pe.start();
    await pe.loadImages(['berth/busybox:local']);
    const code = await new Promise<number>((resolve) => {
      const child = spawn('nsenter', [`--net=/var/run/netns/${pe.netns}`, process.execPath, '--import', 'tsx', path.join(__dirname, '..', 'run.ts')], {
        env: {
          ...process.env,
          DOCKER_HOST: `unix://${pe.socket}`,
          BENCH_ONLY: workloads.join(','),
          BENCH_ENGINE_TURN: tag,
          BENCH_TURN_OUT: out,
          BENCH_PROFILE: '',
        },
        stdio: ['ignore', 'ignore', 'inherit'],
      });
      child.once('error', () => resolve(1));
      child.once('exit', (c) => resolve(c ?? 1));
    });
    if (code !== 0) throw new Error(`the bench's turn on ${engineTitle(e)} failed (exit ${code})`);
    const turn = JSON.parse(await fs.readFile(out, 'utf8')) as TurnOutput;
    return {
      engine: turn.engine,
      rows: turn.rows.map((r) => ({
        ...r,
        id: `${r.id}@${tag}`,
        workload: `${engineTitle(e)}: ${r.workload}`,
        ...(r.chart ? { chart: { ...r.chart, label: `${r.chart.label} (${e.expect.version})` } } : {}),
      })),
    };
  } finally {
    await pe.destroy();
    await fs.rm(path.dirname(out), { recursive: true, force: true });
  }
}

/**
 * Specs from git (`BENCH_ONLY=git`): a berth controller following a bare repository over
 * file:// (as a CLI process), measured three ways:
 * - poll: a commit adding one attempt → its container's start event, with `--git-interval 1s`
 *   (target: within the interval + 1 s);
 * - webhook: a signed POST right after the push → the start event, with an interval of an
 *   hour so only the webhook can bring the commit (target: ≤ 1 s);
 * - no-op polls: over a quiet window, how many `git fetch` the controller ran (a wrapper on its
 *   PATH counts them) and how many engine events its instance saw (target: one fetch a poll, no
 *   engine mutation).
 */
import { createHmac } from 'node:crypto';
import { promises as fs } from 'node:fs';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { TestRepo } from '../../test/support/git-repo';
import type { RawEngine } from '../lib/engine';
import { StartWatch } from '../lib/events';
import { specText, type BenchRun, type BerthSandbox } from '../lib/fixture';
import { BERTH_BIN, Daemon, REPO, sleep } from '../lib/proc';

export interface GitSamples {
  intervalMs: number;
  /** commit pushed → container started, ms, with polling. */
  poll: number[];
  /** signed POST sent → container started, ms. */
  hook: number[];
  noop: { windowMs: number; fetches: number; mutations: number };
}

const SECRET = 'bench-webhook-secret';
const INTERVAL_MS = 1000;

async function freePort(): Promise<number> {
  const net = await import('node:net');
  return new Promise((resolve) => {
    const s = net.createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

function controller(sb: BerthSandbox, url: string, interval: string, hookPort: number, bin: string): Daemon {
  return new Daemon(
    process.execPath,
    [
      BERTH_BIN,
      'reconcile',
      '--max-running',
      '50',
      '--git',
      url,
      '--git-path',
      'specs',
      '--git-interval',
      interval,
      '--webhook-addr',
      `127.0.0.1:${hookPort}`,
      '--webhook-secret-env',
      'BENCH_HOOK_SECRET',
      ...sb.globalArgs(),
    ],
    { cwd: REPO, env: { ...process.env, PATH: `${bin}:${process.env.PATH ?? ''}`, BENCH_HOOK_SECRET: SECRET } },
  );
}

export async function gitWorkload(engine: RawEngine, run: BenchRun, count: number, log: (m: string) => void): Promise<GitSamples> {
  const sb = await run.berthSandbox('g');
  const repo = await TestRepo.create('bench');
  const bin = await run.dir('git-bin');
  const argvLog = path.join(bin, 'argv.log');
  await fs.writeFile(path.join(bin, 'git'), `#!/bin/sh\nprintf '%s\\n' "$*" >> '${argvLog}'\nexec /usr/bin/git "$@"\n`, { mode: 0o755 });
  const watch = await StartWatch.open(engine, [`dev.berth.instance=${sb.instance}`]);
  const out: GitSamples = { intervalMs: INTERVAL_MS, poll: [], hook: [], noop: { windowMs: 0, fetches: 0, mutations: 0 } };
  const cmd = ['sh', '-c', 'sleep 3600'];
  try {
    await repo.commit('first', { 'specs/g0000.yaml': specText('g0000', cmd) });
    // webhook: polling once an hour, so only the POST brings a commit
    let port = await freePort();
    let ctl = controller(sb, repo.fileUrl, '1h', port, bin);
    try {
      await ctl.waitFor(/webhook on http/, 60_000);
      await watch.started(sb.containerName('g0000'), 60_000);
      for (let i = 0; i < count; i++) {
        const name = `h${String(i).padStart(4, '0')}`;
        await repo.commit(name, { [`specs/${name}.yaml`]: specText(name, cmd) });
        const body = JSON.stringify({ ref: 'refs/heads/main' });
        const t0 = performance.now();
        const res = await fetch(`http://127.0.0.1:${port}/`, {
          method: 'POST',
          body,
          headers: { 'x-hub-signature-256': `sha256=${createHmac('sha256', SECRET).update(body).digest('hex')}` },
        });
        if (res.status !== 202) throw new Error(`webhook answered ${res.status}`);
        await watch.started(sb.containerName(name), 30_000);
        out.hook.push(performance.now() - t0);
      }
    } finally {
      await ctl.stop();
    }
    log(`  webhook → started: ${out.hook.map((x) => x.toFixed(0)).join(' ')} ms`);
    // polling every second
    port = await freePort();
    ctl = controller(sb, repo.fileUrl, `${INTERVAL_MS}ms`, port, bin);
    try {
      await ctl.waitFor(/webhook on http/, 60_000);
      await sleep(2 * INTERVAL_MS);
      for (let i = 0; i < count; i++) {
        const name = `p${String(i).padStart(4, '0')}`;
        const t0 = performance.now();
        await repo.commit(name, { [`specs/${name}.yaml`]: specText(name, cmd) });
        await watch.started(sb.containerName(name), 30_000);
        out.poll.push(performance.now() - t0);
        // the next commit lands at a varied point of the poll cycle
        await sleep((i * 397) % INTERVAL_MS);
      }
      log(`  commit → started (interval ${INTERVAL_MS} ms): ${out.poll.map((x) => x.toFixed(0)).join(' ')} ms`);
      // no-op polls: a quiet window after everything settled
      await sleep(3 * INTERVAL_MS);
      let mutations = 0;
      const sub = await engine.subscribe({ label: [`dev.berth.instance=${sb.instance}`] }, () => mutations++);
      const fetchesBefore = (await fs.readFile(argvLog, 'utf8')).split('\n').filter((l) => / fetch /.test(` ${l} `)).length;
      const w0 = performance.now();
      await sleep(10 * INTERVAL_MS);
      out.noop.windowMs = performance.now() - w0;
      out.noop.fetches = (await fs.readFile(argvLog, 'utf8')).split('\n').filter((l) => / fetch /.test(` ${l} `)).length - fetchesBefore;
      sub.close();
      out.noop.mutations = mutations;
      log(`  quiet ${(out.noop.windowMs / 1000).toFixed(1)} s: ${out.noop.fetches} git fetches, ${mutations} engine events of the instance`);
    } finally {
      await ctl.stop();
    }
  } finally {
    watch.close();
    await repo.remove();
  }
  return out;
}

/**
 * Where the reconcile loop's time goes beside 100 execs at once (issue 52's exec-busy-loop row),
 * measured inside the controller's own process: the controller runs in-process, and this
 * process samples, every 50 ms, the event loop's delay and the latency of one small file-system
 * call (a stat: it goes through libuv's thread pool, as every status write, spec read and
 * execs.jsonl line of the controller does). Three phases alternate: idle, 100 execs of `sleep 1`
 * through berth's API, and 100 `docker exec` of the same made directly on the engine (no berth
 * in their path). Not a bench row: a tool to attribute the slowdown.
 *   npx tsx bench/tools/exec-busy-lag.ts [rounds] [seconds per phase]
 */
import { promises as fs } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import Dockerode from 'dockerode';
import { API } from '../../src/constants';
import { runController } from '../../src/cli/commands/controller';
import { makeContext } from '../../src/cli/context';
import { bufferIo } from '../../src/cli/io';
import { silentLogger } from '../../src/util/log';
import { BenchRun, specText } from '../lib/fixture';
import { BERTH_BIN, REPO, run as runCmd } from '../lib/proc';

function request(socket: string, method: string, p: string, body?: unknown): Promise<{ status: number; json: Record<string, unknown> }> {
  return new Promise((resolve, reject) => {
    const text = body === undefined ? undefined : JSON.stringify(body);
    const req = http.request(
      {
        socketPath: socket,
        method,
        path: p,
        agent: false,
        headers: text ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) } : {},
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const s = Buffer.concat(chunks).toString('utf8');
          resolve({ status: res.statusCode ?? 0, json: s ? (JSON.parse(s) as Record<string, unknown>) : {} });
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

const q = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(p * s.length))] ?? NaN;
};

async function main(): Promise<void> {
  const rounds = Number(process.argv[2] ?? 2);
  const phaseMs = Number(process.argv[3] ?? 8) * 1000;
  const run = new BenchRun();
  await run.init();
  const sb = await run.berthSandbox('xlag');
  await fs.writeFile(
    path.join(sb.specsDir, 'box.yaml'),
    specText('box', ['true'], ['  sandbox: true', '  deadlineSeconds: 3600']).replace(/ {2}command: .*\n/, ''),
  );
  const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, bufferIo(), { log: silentLogger() });
  const abort = new AbortController();
  const done = runController(ctx, { resync: 30, maxRunning: 50 } as never, abort.signal);
  const socket = path.join(sb.stateDir, sb.instance, API.socket);
  const docker = new Dockerode();
  const results: Record<string, { fsP50: number[]; fsP95: number[]; loopP99: number[]; ended: number }> = {};
  try {
    for (;;) {
      const r = await request(socket, 'GET', '/v1/attempts/box').catch(() => undefined);
      if ((r?.json.status as { phase?: string } | undefined)?.phase === 'Running') break;
      await new Promise((res) => setTimeout(res, 200));
    }
    const box = docker.getContainer(sb.containerName('box'));
    const kinds = ['idle', 'api', 'docker'] as const;
    for (let r = 0; r < rounds; r++) {
      for (let k = 0; k < 3; k++) {
        const kind = kinds[(k + r) % 3] as (typeof kinds)[number];
        let on = true;
        let ended = 0;
        const one =
          kind === 'api'
            ? () => request(socket, 'POST', '/v1/attempts/box/exec', { cmd: ['sleep', '1'] }).then(() => undefined)
            : async () => {
                const x = await box.exec({ Cmd: ['sleep', '1'], AttachStdout: true, AttachStderr: true });
                const st = await x.start({ hijack: true, stdin: false });
                await new Promise<void>((res) => {
                  st.on('end', res);
                  st.on('close', res);
                  st.resume();
                });
                await x.inspect();
              };
        const workers =
          kind === 'idle'
            ? []
            : Array.from({ length: 100 }, async () => {
                while (on) {
                  await one();
                  ended++;
                }
              });
        await new Promise((res) => setTimeout(res, 2000));
        const h = monitorEventLoopDelay({ resolution: 10 });
        h.enable();
        const fsMs: number[] = [];
        const until = Date.now() + phaseMs;
        while (Date.now() < until) {
          const t = performance.now();
          await fs.stat(sb.specsDir);
          fsMs.push(performance.now() - t);
          await new Promise((res) => setTimeout(res, 50));
        }
        h.disable();
        on = false;
        await Promise.all(workers);
        const e = (results[kind] ??= { fsP50: [], fsP95: [], loopP99: [], ended: 0 });
        e.fsP50.push(q(fsMs, 0.5));
        e.fsP95.push(q(fsMs, 0.95));
        e.loopP99.push(h.percentile(99) / 1e6);
        e.ended += ended;
        console.log(
          `round ${r + 1} ${kind}: stat p50 ${q(fsMs, 0.5).toFixed(2)} ms p95 ${q(fsMs, 0.95).toFixed(2)} ms; event loop delay p99 ${(h.percentile(99) / 1e6).toFixed(1)} ms; ${ended} execs ended`,
        );
      }
    }
    console.log(JSON.stringify(results));
  } finally {
    abort.abort();
    await done.catch(() => undefined);
    await runCmd(process.execPath, [BERTH_BIN, 'clean', ...sb.globalArgs('warn')], { cwd: REPO }).catch(() => undefined);
    await fs.rm(run.root, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

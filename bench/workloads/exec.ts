/**
 * Exec through berth's API (issue 52): BENCH_EXECS (default 1,000) execs of `true` in a running
 * sandbox through `POST /v1/attempts/NAME/exec` on the controller's Unix socket (one request at a
 * time, a new connection each, as a harness's tool calls come) against as many `docker exec`
 * calls of the docker CLI into the same container, in alternating blocks (one block of each a
 * round); and the round trip of one API exec (its p95). Then the reconcile loop beside 100
 * execs at once: a new spec's drop-to-running (the file written until the API says Running)
 * with the controller idle, against the same while 100 execs (`sleep 1`, started again as each
 * ends) keep going through the API, and while 100 such execs are made on the engine directly
 * (dockerode: no berth in their path), the three alternating: what the engine's own work for 100
 * execs costs a drop, told apart from what berth's API path adds.
 */
import http from 'node:http';
import Dockerode from 'dockerode';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { API } from '../../src/constants';
import { specText, type BenchRun } from '../lib/fixture';
import { BERTH_BIN, Daemon, REPO, run as runCmd } from '../lib/proc';
import { quantile } from '../lib/stats';

export interface ExecSamples {
  execs: number;
  /** ms of each round's block of API execs, and of the docker exec block beside it. */
  api: number[];
  docker: number[];
  /** ms of every single API exec round trip. */
  oneApi: number[];
  /** Drop-to-running ms, the controller idle / beside 100 execs at once. */
  dropIdle: number[];
  dropBusy: number[];
  /** Drop-to-running ms beside 100 execs made on the engine directly (no berth in their path). */
  dropEngine: number[];
  /** Execs that ended while the busy drops were measured (through the API; on the engine directly). */
  busyExecs: number;
  engineExecs: number;
}

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
          try {
            resolve({ status: res.statusCode ?? 0, json: s ? (JSON.parse(s) as Record<string, unknown>) : {} });
          } catch (err) {
            reject(err as Error);
          }
        });
      },
    );
    req.on('error', reject);
    req.end(text);
  });
}

async function phase(socket: string, name: string): Promise<string | undefined> {
  const r = await request(socket, 'GET', `/v1/attempts/${name}`).catch(() => undefined);
  return r?.status === 200 ? (r.json.status as { phase?: string } | undefined)?.phase : undefined;
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs: number, everyMs = 20): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`exec bench: ${what} not seen within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

export async function execRounds(run: BenchRun, execs: number, rounds: number, log: (m: string) => void): Promise<ExecSamples> {
  const sb = await run.berthSandbox('exec');
  await fs.writeFile(
    path.join(sb.specsDir, 'box.yaml'),
    specText('box', ['true'], ['  sandbox: true', '  deadlineSeconds: 3600']).replace(/ {2}command: .*\n/, ''),
  );
  const d = new Daemon(process.execPath, [BERTH_BIN, 'reconcile', '--max-running', '50', ...sb.globalArgs('warn')], { cwd: REPO });
  const socket = path.join(sb.stateDir, sb.instance, API.socket);
  const out: ExecSamples = { execs, api: [], docker: [], oneApi: [], dropIdle: [], dropBusy: [], dropEngine: [], busyExecs: 0, engineExecs: 0 };
  try {
    await until('the sandbox Running', async () => (await phase(socket, 'box')) === 'Running', 120_000, 100);
    const container = sb.containerName('box');
    const per = Math.max(1, Math.round(execs / rounds));
    log(`exec: ${per * rounds} execs of true through the API and as many docker exec calls into ${container}, ${rounds} blocks each`);
    const apiBlock = async () => {
      const t0 = performance.now();
      for (let i = 0; i < per; i++) {
        const t = performance.now();
        const r = await request(socket, 'POST', '/v1/attempts/box/exec', { cmd: ['true'] });
        out.oneApi.push(performance.now() - t);
        if (r.status !== 200 || r.json.exitCode !== 0) throw new Error(`exec bench: an API exec answered ${r.status} ${JSON.stringify(r.json)}`);
      }
      out.api.push(performance.now() - t0);
    };
    const dockerBlock = async () => {
      const t0 = performance.now();
      for (let i = 0; i < per; i++) await runCmd('docker', ['exec', container, 'true']);
      out.docker.push(performance.now() - t0);
    };
    for (let r = 0; r < rounds; r++) {
      if (r % 2 === 0) {
        await apiBlock();
        await dockerBlock();
      } else {
        await dockerBlock();
        await apiBlock();
      }
      log(
        `exec round ${r + 1}/${rounds}: ${per} API execs ${(out.api[r] as number).toFixed(0)} ms, ${per} docker exec ${(out.docker[r] as number).toFixed(0)} ms`,
      );
    }
    // the reconcile loop beside 100 execs at once: through the API, or made on the engine directly
    let busy = false;
    let stopped = false;
    const workers: Promise<void>[] = [];
    const box = new Dockerode().getContainer(container);
    const direct = async () => {
      const x = await box.exec({ Cmd: ['sleep', '1'], AttachStdout: true, AttachStderr: true });
      const st = await x.start({ hijack: true, stdin: false });
      await new Promise<void>((resolve) => {
        st.once('end', resolve);
        st.once('close', resolve);
        st.resume();
      });
      await x.inspect();
    };
    const startBusy = (how: 'api' | 'engine') => {
      busy = true;
      for (let i = 0; i < 100; i++)
        workers.push(
          (async () => {
            while (busy && !stopped) {
              if (how === 'api') {
                await request(socket, 'POST', '/v1/attempts/box/exec', { cmd: ['sleep', '1'] });
                out.busyExecs++;
              } else {
                await direct();
                out.engineExecs++;
              }
            }
          })(),
        );
    };
    const stopBusy = async () => {
      busy = false;
      await Promise.all(workers.splice(0));
    };
    const drop = async (name: string): Promise<number> => {
      const t0 = performance.now();
      await fs.writeFile(path.join(sb.specsDir, `${name}.yaml`), specText(name, ['sleep', '600']));
      await until(`${name} Running`, async () => (await phase(socket, name)) === 'Running', 120_000);
      const ms = performance.now() - t0;
      await fs.rm(path.join(sb.specsDir, `${name}.yaml`));
      await until(`${name} gone`, async () => (await phase(socket, name)) === undefined, 120_000, 100);
      return ms;
    };
    for (let r = 0; r < rounds; r++) {
      const idle = async () => out.dropIdle.push(await drop(`idle${r}`));
      const loaded = (how: 'api' | 'engine') => async () => {
        startBusy(how);
        try {
          (how === 'api' ? out.dropBusy : out.dropEngine).push(await drop(`${how}${r}`));
        } finally {
          await stopBusy();
        }
      };
      // the three in an order that rotates every round
      const order = [idle, loaded('api'), loaded('engine')];
      for (let k = 0; k < order.length; k++) await (order[(k + r) % order.length] as () => Promise<unknown>)();
      log(
        `exec round ${r + 1}/${rounds}: drop-to-running idle ${(out.dropIdle[r] as number).toFixed(0)} ms, beside 100 execs through the API ${(out.dropBusy[r] as number).toFixed(0)} ms, beside 100 made on the engine directly ${(out.dropEngine[r] as number).toFixed(0)} ms`,
      );
    }
    stopped = true;
  } finally {
    await d.stop();
    await runCmd(process.execPath, [BERTH_BIN, 'clean', ...sb.globalArgs('warn')], { cwd: REPO }).catch((err: unknown) =>
      log(`exec bench: berth clean: ${(err as Error).message}`),
    );
  }
  return out;
}

export const p95 = (ms: readonly number[]): number =>
  quantile(
    [...ms].sort((a, b) => a - b),
    0.95,
  );

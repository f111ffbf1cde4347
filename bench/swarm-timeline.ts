/**
 * Diagnostic (not part of `make bench`): where a swarm drop's time goes, step by step. A two-node
 * test swarm of its own (test/support/swarm.ts, torn down at the end); a controller
 * (`reconcile --backend swarm --log-level debug`, preloaded with a tracer of every HTTP request it
 * makes and every fsync) gets spec files one at a time; the manager is polled every 10 ms for the
 * run's service, its task's states (with the manager's timestamps) and its `none` overlay. After
 * each drop, two floors on the same node: services/create with no network (A), and an internal
 * overlay + services/create of berth's own service spec (B, what the bench's floor does).
 * Everything in ms from the spec's write (berth) or the first request (floors).
 *   node --import tsx bench/swarm-timeline.ts [DROPS]
 */
import { promises as fs, readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Dockerode from 'dockerode';
import { NAMING } from '../src/constants';
import { TestSwarm } from '../test/support/swarm';
import { specText } from './lib/fixture';
import { BERTH_BIN, Daemon, REPO, sleep } from './lib/proc';

const TAG = `swtl${process.pid}`;

/** The controller's preload: every HTTP request and response, and every fsync, with times, to $SWDROP_TRACE. */
const TRACER = `
const dc = require('node:diagnostics_channel');
const fs = require('node:fs');
const fsp = require('node:fs/promises');
const fd = fs.openSync(process.env.SWDROP_TRACE, 'a');
const ids = new WeakMap(); let n = 0;
const w = (o) => fs.writeSync(fd, JSON.stringify(o) + '\\n');
dc.subscribe('http.client.request.start', ({ request }) => {
  const id = ++n; ids.set(request, id);
  w({ t: Date.now(), ev: 'req', id, m: request.method, p: request.path, sock: request.socketPath || request.host });
});
dc.subscribe('http.client.response.finish', ({ request, response }) => w({ t: Date.now(), ev: 'res', id: ids.get(request), s: response.statusCode }));
const open0 = fsp.open;
fsp.open = async function (...a) {
  const h = await open0.apply(this, a);
  const s0 = h.sync.bind(h);
  h.sync = async () => { const t = Date.now(); try { return await s0(); } finally { w({ t, ev: 'fsync', end: Date.now(), p: String(a[0]) }); } };
  return h;
};
`;
const CMD = ['sleep', '600'];

interface Seen {
  [what: string]: number;
}

async function watch(m: Dockerode, service: string, net: string | undefined, t0: number, until: () => boolean): Promise<Seen> {
  const seen: Seen = {};
  const mark = (k: string, t: number) => {
    if (seen[k] === undefined) seen[k] = t - t0;
  };
  while (!until()) {
    const now = Date.now();
    const [svcs, tasks, nets] = await Promise.all([
      m.listServices({ filters: JSON.stringify({ name: [service] }) }) as Promise<{ CreatedAt: string; Spec: { Name: string } }[]>,
      m.listTasks({ filters: JSON.stringify({ service: [service] }) }).catch(() => []) as Promise<{ Status: { State: string; Timestamp: string } }[]>,
      net ? (m.listNetworks({ filters: JSON.stringify({ name: [net] }) }) as Promise<{ Name: string; Created: string }[]>) : Promise.resolve([]),
    ]);
    const s = svcs.find((x) => x.Spec.Name === service);
    if (s) {
      mark('service seen', now);
      mark('service CreatedAt', Date.parse(s.CreatedAt));
    }
    const n = nets.find((x) => x.Name === net);
    if (n) {
      mark('net seen', now);
      mark('net Created', Date.parse(n.Created));
    }
    for (const t of tasks) {
      mark(`task ${t.Status.State} seen`, now);
      mark(`task ${t.Status.State} @`, Date.parse(t.Status.Timestamp));
    }
    if (tasks.some((t) => t.Status.State === 'running')) break;
    await sleep(10);
  }
  return seen;
}

function show(label: string, s: Seen): void {
  const e = Object.entries(s).sort((a, b) => a[1] - b[1]);
  console.log(`${label}: ${e.map(([k, v]) => `${k} ${v}`).join(' | ')}`);
}

async function main(): Promise<void> {
  const drops = Number(process.argv[2] ?? 5);
  const s = new TestSwarm(TAG, { nodes: [{}, {}], images: ['berth/busybox:local', 'berth/egress-proxy:local'] });
  await s.up();
  console.log(`swarm up in ${s.startMs} ms`);
  const m = s.manager.docker;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'swtl-'));
  const instance = `swtl${process.pid}`;
  const specs = path.join(dir, 'specs');
  await fs.mkdir(specs);
  const trace = path.join(dir, 'trace.jsonl');
  const tracer = path.join(dir, 'trace.cjs');
  await fs.writeFile(tracer, TRACER);
  const env = { ...process.env, DOCKER_HOST: s.manager.address, SWDROP_TRACE: trace };
  const args = [
    '--specs',
    specs,
    '--state',
    path.join(dir, 'state'),
    '--results-root',
    path.join(dir, 'results'),
    '--instance',
    instance,
    '--log-level',
    'debug',
  ];
  const ctl = new Daemon(
    process.execPath,
    ['--require', tracer, BERTH_BIN, 'reconcile', '--backend', 'swarm', '--max-running', '50', '--concurrency', '8', ...args],
    { cwd: REPO, env },
  );
  const floors: string[] = [];
  const fnets: string[] = [];
  try {
    await ctl.waitFor(/controller started/, 60_000);
    for (let i = -1; i < drops; i++) {
      const name = `d${i < 0 ? 'warm' : i}`;
      const svc = NAMING.container(instance, name);
      const mark = Date.now();
      await fs.appendFile(trace, JSON.stringify({ t: mark, ev: 'drop', name }) + '\n');
      const logFrom = ctl.stderr.split('\n').length - 1;
      const t0 = Date.now();
      await fs.writeFile(path.join(specs, `${name}.yaml`), specText(name, CMD));
      const seen = await watch(m, svc, `${svc}-none`, t0, () => Date.now() - t0 > 60_000);
      if (i < 0) continue;
      // the controller's requests of this drop, relative to the write
      const lines = readFileSync(trace, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { t: number; ev: string; id?: number; m?: string; p?: string; sock?: string; s?: number });
      const from = lines.findIndex((l) => l.ev === 'drop' && (l as { name?: string }).name === name);
      const reqs = new Map<number, { t: number; m: string; p: string; sock: string; end?: number }>();
      for (const l of lines.slice(from + 1)) {
        if (l.ev === 'req' && l.id)
          reqs.set(l.id, { t: l.t - t0, m: l.m ?? '', p: (l.p ?? '').split('?')[0] ?? '', sock: (l.sock ?? '').replace(/.*bsw-[^-]+-(\d)\/d.sock/, 'n$1') });
        if (l.ev === 'res' && l.id && reqs.has(l.id)) (reqs.get(l.id) as { end?: number }).end = l.t - t0;
        if (l.ev === 'fsync')
          reqs.set(-reqs.size - 1, { t: l.t - t0, end: (l as unknown as { end: number }).end - t0, m: 'fsync', p: path.basename(l.p ?? ''), sock: '--' });
      }
      // berth's debug lines (HH:mm:ss.SSS, UTC) of this drop
      const day = new Date(t0).toISOString().slice(0, 11);
      for (const line of ctl.stderr.split('\n').slice(logFrom)) {
        const mm = /^(\d\d:\d\d:\d\d\.\d{3}) (\w+)\s+(.*)$/.exec(line);
        if (mm) reqs.set(-reqs.size - 1000, { t: Date.parse(`${day}${mm[1]}Z`) - t0, m: 'LOG', p: (mm[3] ?? '').slice(0, 140), sock: '  ' });
      }
      console.log(`--- drop ${name}`);
      show('  manager', seen);
      for (const r of [...reqs.values()].sort((a, b) => a.t - b.t))
        if (r.t < (seen['task running seen'] ?? 1e9) + 200)
          console.log(`    ${String(r.t).padStart(5)}–${String(r.end ?? '?').padStart(5)} ${r.sock} ${r.m} ${r.p.replace(/^\/v[\d.]+/, '')}`);
      const info = (await m.getService(svc).inspect()) as {
        Spec: Record<string, unknown> & {
          TaskTemplate: Record<string, unknown> & { ContainerSpec: Record<string, unknown> & { Mounts?: { Source: string }[] } };
        };
      };
      await sleep(300);
      // floor A: services/create with no network
      const fa = `swtl-fa-${i}`;
      const node = ((info.Spec.TaskTemplate.Placement as { Constraints: string[] }).Constraints[0] ?? '').slice('node.id=='.length);
      const ta = Date.now();
      await m.createService({
        Name: fa,
        TaskTemplate: {
          ContainerSpec: { Image: 'berth/busybox:local', Command: CMD, Init: true, CapabilityDrop: ['ALL'] },
          RestartPolicy: { Condition: 'none' },
          Placement: { Constraints: [`node.id==${node}`] },
        },
        Mode: { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } },
        EndpointSpec: { Mode: 'dnsrr' },
      } as never);
      floors.push(fa);
      show('  floor A (no net)', await watch(m, fa, undefined, ta, () => Date.now() - ta > 60_000));
      await sleep(300);
      // floor B: berth's own service spec, on a fresh internal overlay
      const fb = `swtl-fb-${i}`;
      const tb = Date.now();
      const n = (await m.createNetwork({ Name: `${fb}-none`, Driver: 'overlay', Internal: true, Attachable: false, CheckDuplicate: true })) as { id: string };
      fnets.push(n.id);
      const ts = Date.now();
      await m.createService({
        ...info.Spec,
        Name: fb,
        Labels: {},
        TaskTemplate: {
          ...info.Spec.TaskTemplate,
          ContainerSpec: {
            ...info.Spec.TaskTemplate.ContainerSpec,
            Labels: {},
            Mounts: (info.Spec.TaskTemplate.ContainerSpec.Mounts ?? []).map((x, k) => ({ ...x, Source: `${fb}-v${k}` })),
          },
          Networks: [{ Target: n.id }],
        },
      } as never);
      floors.push(fb);
      const sb = await watch(m, fb, `${fb}-none`, tb, () => Date.now() - tb > 60_000);
      sb['services/create sent'] = ts - tb;
      show('  floor B (overlay + berth spec)', sb);
      await sleep(300);
    }
  } finally {
    await ctl.stop();
    for (const f of floors)
      await m
        .getService(f)
        .remove()
        .catch(() => undefined);
    await sleep(2000);
    for (const n of fnets)
      await m
        .getNetwork(n)
        .remove()
        .catch(() => undefined);
    await s.down();
    console.log('left:', await s.traces());
    await fs.rm(dir, { recursive: true, force: true });
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});

/** Controller mode on the real engine and real files: folder and engine events drive it. */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { promises as fs } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { Writable } from 'node:stream';
import { LABELS, lockVolumeName } from '../../src/constants';
import type { Engine } from '../../src/engine/types';
import { startController } from '../support/controller';
import { docker, requireEngine } from '../support/engine';
import { containerEvents } from '../support/events';
import { listsLagging } from '../support/lagging-engine';
import { Sandbox } from '../support/sandbox';
import { createLogger } from '../../src/util/log';
import { waitFor } from '../support/wait';

const BIN = path.resolve(__dirname, '..', '..', 'bin', 'berth.js');

async function containers(sb: Sandbox, name?: string) {
  const label = [`${LABELS.instance}=${sb.instance}`, ...(name ? [`${LABELS.attempt}=${name}`] : [])];
  return docker.listContainers({ all: true, filters: JSON.stringify({ label }) });
}

async function runningContainer(sb: Sandbox, name: string, notId?: string) {
  return waitFor(`${name} running`, async () => (await containers(sb, name)).find((c) => c.State === 'running' && c.Id !== notId), { instance: sb.instance });
}

/** `src`, each item delivered `ms` after it came (in order; the source is read on meanwhile). */
function lateBy<T>(src: AsyncIterable<T>, ms: number): AsyncIterable<T> {
  const ready: T[] = [];
  let wake: (() => void) | undefined;
  let ended = false;
  let failure: unknown;
  void (async () => {
    try {
      for await (const v of src) setTimeout(() => (ready.push(v), wake?.()), ms);
    } catch (err) {
      failure = err;
    }
    setTimeout(() => ((ended = true), wake?.()), ms);
  })();
  return (async function* () {
    for (;;) {
      while (ready.length > 0) yield ready.shift() as T;
      if (ended) {
        if (failure) throw failure;
        return;
      }
      await new Promise<void>((r) => (wake = r));
    }
  })();
}

function get(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http
      .get(url, (res) => {
        let body = '';
        res.on('data', (c) => (body += String(c)));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      })
      .on('error', reject);
  });
}

describe('controller (real engine, real files)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('ctl');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('follows the folder: drop → running, edit → replaced, delete → collected', async function () {
    // resync 600 s: what happens within the test's waits comes from the folder watch
    const ctl = startController(sb, { metricsAddr: '127.0.0.1:0', resync: 600 });
    try {
      await waitFor('controller ready', async () => (await fs.readdir(sb.stateDir).catch(() => [])).some((f) => f.endsWith('.lock')), { dirs: [sb.stateDir] });
      // Another attempt stays in the folder: a folder left with no attempt at all removes nothing (slips.test.ts).
      await sb.write('keep.yaml', sb.attempt('keep', 'true'));
      await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
      const first = await runningContainer(sb, 'a');
      await sb.write('a.yaml', sb.attempt('a', 'sleep 301'));
      const second = await runningContainer(sb, 'a', first.Id);
      expect(second.Command).to.match(/sleep 301/);
      await waitFor('old container gone', async () => (await containers(sb, 'a')).length === 1, { instance: sb.instance });
      await sb.remove('a.yaml');
      await waitFor('collected', async () => (await containers(sb, 'a')).length === 0, { instance: sb.instance });
      await waitFor('status forgotten', async () => !(await sb.status('a')), { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] });
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });

  it('a specs folder that disappears under it removes nothing; its return is picked up', async function () {
    let logText = '';
    const log = createLogger({ level: 'info', format: 'text', stream: new Writable({ write: (c, _e, cb) => ((logText += String(c)), cb()) }) });
    const ctl = startController(sb, { resync: 1, metricsAddr: '127.0.0.1:0' }, undefined, log);
    try {
      await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
      const first = await runningContainer(sb, 'a');
      const url = await waitFor('metrics served', async () => /metrics and health on (http:\S+) /.exec(logText)?.[1], { timeoutMs: 5_000 });
      const passes = async () =>
        Number(/^controller_runtime_reconcile_total\{[^}]*result="success"[^}]*\} (\d+)/m.exec((await get(`${url}/metrics`)).body)?.[1] ?? 0);
      const moved = `${sb.specsDir}.moved`;
      await fs.rename(sb.specsDir, moved);
      await waitFor('the missing folder reported', async () => /cannot read the specs folder: .*the last specs read stay in force/.test(logText), {
        timeoutMs: 10_000,
      });
      // Resyncs go on (each loads again and plans from the last good specs): wait for two more.
      const n0 = await passes();
      await waitFor('two more full passes', async () => (await passes()) >= n0 + 2, { timeoutMs: 10_000 });
      expect((logText.match(/cannot read the specs folder/g) ?? []).length, 'reported once, not at every resync').to.equal(1);
      expect((await containers(sb, 'a')).map((c) => `${c.Id}:${c.State}`)).to.deep.equal([`${first.Id}:running`]);
      await fs.rename(moved, sb.specsDir);
      await sb.write('b.yaml', sb.attempt('b', 'sleep 300'));
      await runningContainer(sb, 'b');
      expect(logText).to.match(/specs folder readable again/);
      expect((await containers(sb, 'a')).map((c) => c.Id)).to.deep.equal([first.Id]);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });

  it('never launches from an editor-style atomic save or a half-written file', async function () {
    // The controller runs in this process: a stalled event loop fires this test's short timer and
    // the controller's settle timer in one turn, and its read can race the second write. A settle
    // time of 500 ms (`--settle`) leaves the 20 ms gap below far inside it on any machine.
    const ctl = startController(sb, { settle: 0.5 });
    try {
      await waitFor('controller ready', async () => (await fs.readdir(sb.stateDir).catch(() => [])).some((f) => f.endsWith('.lock')), { dirs: [sb.stateDir] });
      // its first look at the folder done (a walk reads every file as it is: the settling is for the changes it is told of)
      await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
      await runningContainer(sb, 'a');
      const since = Math.floor(Date.now() / 1000) - 1;
      // vim-like: swap file, backup file, then write a temp file and rename it over the target
      await sb.write('.b.yaml.swp', 'garbage');
      await sb.write('b.yaml~', sb.attempt('b-backup', 'sleep 300'));
      await sb.write('.b.yaml.tmp', sb.attempt('b', 'sleep 300'));
      await fs.rename(path.join(sb.specsDir, '.b.yaml.tmp'), path.join(sb.specsDir, 'b.yaml'));
      // a half-written file: the first bytes now, the rest a moment later
      const full = sb.attempt('c', 'sleep 300', '  deadlineSeconds: 100\n');
      const fh = await fs.open(path.join(sb.specsDir, 'c.yaml'), 'w');
      await fh.write(full.slice(0, full.indexOf('command')));
      await fh.sync();
      // the rest a moment later, inside the settle time
      await new Promise((r) => setTimeout(r, 20));
      await fh.write(full.slice(full.indexOf('command')));
      await fh.close();
      await runningContainer(sb, 'b');
      const st = await waitFor(
        'c Running',
        async () => {
          const s = await sb.status('c');
          return s?.phase === 'Running' ? s : undefined;
        },
        { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] },
      );
      expect(st.deadlineAt).to.be.a('string');
      const inspect = await docker.getContainer(st.containerId ?? '').inspect();
      expect(inspect.Config.Cmd).to.deep.equal(['sh', '-c', 'sleep 300']);
      const names = (await containers(sb)).map((x) => x.Labels[LABELS.attempt]).sort();
      expect(names).to.deep.equal(['a', 'b', 'c']);
      // nothing was ever created from the truncated file or the backup/swap files
      expect((await containerEvents(sb.instance, since, 'create')).filter((e) => e.attempt !== 'a')).to.have.length(2);
    } finally {
      await ctl.stop();
    }
  });

  it('notices a container killed by hand from the engine event, well before the resync', async function () {
    // resync 600 s: a record within the wait's 20 s comes from the engine's event
    const ctl = startController(sb, { resync: 600 });
    try {
      await sb.write('k.yaml', sb.attempt('k', 'sleep 300'));
      const c = await runningContainer(sb, 'k');
      await docker.getContainer(c.Id).kill();
      const st = await waitFor(
        'k Failed',
        async () => {
          const s = await sb.status('k');
          return s?.phase === 'Failed' ? s : undefined;
        },
        { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] },
      );
      expect([st.reason, st.exitCode]).to.deep.equal(['Error', 137]);
    } finally {
      await ctl.stop();
    }
  });

  it('after its first full list, the controller lists only the attempts a batch is about', async function () {
    const lists: string[][] = [];
    const containersOf = sb.engine.containers;
    const recording: Engine = {
      ...sb.engine,
      containers: new Proxy(containersOf, {
        get(t, p) {
          if (p === 'list') return (f: string[]) => (lists.push(f), t.list(f));
          const v = Reflect.get(t, p, t) as unknown;
          return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(t) : v;
        },
      }),
    };
    const attemptOf = (f: string[]) => f.find((x) => x.startsWith(`${LABELS.attempt}=`))?.slice(LABELS.attempt.length + 1);
    await sb.write('a.yaml', sb.attempt('a', 'sleep 300'));
    await sb.write('b.yaml', sb.attempt('b', 'sleep 300'));
    const ctl = startController(sb, { resync: 600 }, recording);
    try {
      await runningContainer(sb, 'a');
      await runningContainer(sb, 'b');
      expect(lists.filter((f) => attemptOf(f) === undefined).length, 'full lists at start').to.be.greaterThan(0);
      const from = lists.length;
      await sb.write('c.yaml', sb.attempt('c', 'sleep 300'));
      await runningContainer(sb, 'c');
      await waitFor('c Running', async () => (await sb.status('c'))?.phase === 'Running', { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] });
      const after = lists.slice(from);
      expect(after.map(attemptOf), 'every list after the drop names one attempt').to.not.include(undefined);
      expect(after.map(attemptOf)).to.include('c');
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });

  it('--max-running 2 holds in controller mode, with the engine state kept between batches and events arriving late', async function () {
    const since = Math.floor(Date.now() / 1000) - 1;
    // Every engine event reaches the controller a second late: admission must not lean on them.
    const late: Engine = {
      ...sb.engine,
      events: {
        stream: async (filters, opts) => lateBy(await sb.engine.events.stream(filters, opts), 1000),
        images: (opts) => sb.engine.events.images(opts),
        first: (id, actions, opts) => sb.engine.events.first(id, actions, opts),
      },
    };
    const ctl = startController(sb, { maxRunning: 2, resync: 600 }, late);
    const names = ['f', 'b', 'd', 'a', 'e', 'c'].map((n) => `m-${n}`);
    try {
      await waitFor('controller ready', async () => (await fs.readdir(sb.stateDir).catch(() => [])).some((f) => f.endsWith('.lock')), { dirs: [sb.stateDir] });
      // Long enough that two runs overlap even on a loaded machine (the peak must reach the cap, not only stay under it).
      for (const n of names) await sb.write(`${n}.yaml`, sb.attempt(n, 'sleep 1.5'));
      await waitFor('all 6 Succeeded', async () => (await Promise.all(names.map((n) => sb.status(n)))).every((s) => s?.phase === 'Succeeded'), {
        dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
        timeoutMs: 40_000,
      });
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    const starts = await containerEvents(sb.instance, since, 'start');
    const dies = await containerEvents(sb.instance, since, 'die');
    expect(starts.map((e) => e.attempt).sort()).to.deep.equal([...names].sort());
    const timeline = [...starts.map((e) => ({ t: e.time, d: 1 })), ...dies.map((e) => ({ t: e.time, d: -1 }))].sort((x, y) => x.t - y.t || x.d - y.d);
    let running = 0;
    let peak = 0;
    for (const e of timeline) peak = Math.max(peak, (running += e.d));
    expect(peak).to.equal(2);
  });

  it('finishes an isolated attempt with a sidecar promptly: the die event comes before the lists show the exit', async function () {
    const ctl = startController(sb, { resync: 600 });
    try {
      await sb.write(
        'iso.yaml',
        sb.attempt('iso', 'sleep 0.5', '  network: {mode: isolated}\n  sidecars:\n    - {name: aux, image: berth/busybox:local, command: [sleep, "600"]}\n'),
      );
      const st = await waitFor(
        'iso Succeeded',
        async () => {
          const s = await sb.status('iso');
          return s?.phase === 'Succeeded' ? s : undefined;
        },
        { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')], timeoutMs: 15_000 },
      );
      expect(st.exitCode).to.equal(0);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
  });

  it('finishes an attempt whose exit the lists do not show yet, from the inspect asked on the die', async function () {
    // The lists show the exit only once the test lets them (catchUp): a finished record written
    // before then came from the inspect asked on the die, whatever the machine's load.
    const lagging = listsLagging(sb.engine);
    const ctl = startController(sb, { resync: 600 }, lagging.engine);
    try {
      await sb.write('lag.yaml', sb.attempt('lag', 'sleep 0.5; exit 3'));
      const st = await waitFor(
        'lag Failed',
        async () => {
          const s = await sb.status('lag');
          return s?.phase === 'Failed' ? s : undefined;
        },
        { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')], timeoutMs: 30_000 },
      );
      expect(st.exitCode).to.equal(3);
      expect(lagging.diedAt.get(st.containerId ?? ''), 'the die passed through the lagging stream').to.be.a('number');
      // the lists still lag: the container is listed running while its record says Failed
      const listed = await lagging.engine.containers.list([`${LABELS.instance}=${sb.instance}`]);
      expect(listed.find((c) => c.id === st.containerId)?.state).to.equal('running');
    } finally {
      lagging.catchUp();
      expect(await ctl.stop()).to.equal(0);
    }
  });

  it('a restart that finds some attempts running admits only up to --max-running', async function () {
    const names = ['r1', 'r2', 'r3', 'r4', 'r5', 'r6'];
    for (const n of names) await sb.write(`${n}.yaml`, sb.attempt(n, 'sleep 300'));
    const first = startController(sb, { maxRunning: 1, resync: 600 });
    try {
      await runningContainer(sb, 'r1');
    } finally {
      expect(await first.stop()).to.equal(0);
    }
    const ctl = startController(sb, { maxRunning: 4, resync: 600 });
    try {
      await waitFor('4 running', async () => (await containers(sb)).filter((c) => c.State === 'running').length >= 4 || undefined, { instance: sb.instance });
      // Let every action and event of the admissions settle: the 5th must stay unstarted.
      await waitFor(
        '2 waiting for a slot',
        async () => {
          const recs = await Promise.all(names.map((n) => sb.status(n)));
          return recs.filter((r) => r?.phase === 'Pending' && r.reason === 'WaitingForSlot').length === 2 || undefined;
        },
        { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] },
      );
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    expect((await containers(sb)).filter((c) => c.State === 'running').length).to.equal(4);
  });

  it('refuses a second controller on the same instance, naming the holder', async function () {
    const ctl = startController(sb);
    try {
      await waitFor('lock', async () => (await fs.readdir(sb.stateDir).catch(() => [])).some((f) => f.endsWith('.lock')), { dirs: [sb.stateDir] });
      const second = await sb.cli('reconcile');
      expect(second.code).to.equal(1);
      expect(second.stderr).to.match(/pid \d+ on host/);
    } finally {
      await ctl.stop();
    }
  });

  it('serves metrics that move, /healthz and /readyz', async function () {
    const port = 20000 + (process.pid % 20000);
    const ctl = startController(sb, { metricsAddr: `127.0.0.1:${port}` });
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitFor('ready', async () => (await get(`${url}/readyz`).catch(() => ({ status: 0 }))).status === 200, { dirs: [sb.stateDir] });
      expect((await get(`${url}/healthz`)).status).to.equal(200);
      const value = (body: string, re: RegExp) => Number(re.exec(body)?.[1] ?? NaN);
      const before = (await get(`${url}/metrics`)).body;
      await sb.write('m.yaml', sb.attempt('m', 'true'));
      await waitFor('m finished', async () => (await sb.status('m'))?.phase === 'Succeeded', { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] });
      const after = (await get(`${url}/metrics`)).body;
      const reconciles = /controller_runtime_reconcile_total\{controller="attempt",result="success"\} (\d+)/;
      expect(value(after, reconciles)).to.be.greaterThan(value(before, reconciles));
      expect(value(after, /berth_engine_calls_total\{kind="containers",op="create",result="ok"\} (\d+)/)).to.equal(1);
      expect(after).to.match(/^workqueue_adds_total\{name="attempt"\} \d+$/m);
      expect(after).to.match(/^workqueue_depth\{name="attempt"\} \d+$/m);
      expect(after).to.match(/^berth_engine_event_stream_reconnects_total 0$/m);
      expect(after).to.match(/^berth_engine_up 1$/m);
      // every sample line parses as `name{labels} value` (values as Go's ParseFloat reads them: prom-client writes NaN as "Nan")
      for (const line of after.split('\n').filter((l) => l && !l.startsWith('#')))
        expect(line).to.match(/^[a-zA-Z_:][\w:]*(\{[^}]*\})? ([-+\d.eE]+|[Nn]a[Nn]|[-+]?Inf)$/);
    } finally {
      await ctl.stop();
    }
  });

  it('serves the live fleet report at / from its memory: the same page as berth report, its CSP also as a header, no links', async function () {
    const port = 20000 + ((process.pid + 7919) % 20000);
    const ctl = startController(sb, { metricsAddr: `127.0.0.1:${port}`, maxRunning: 3 });
    try {
      const url = `http://127.0.0.1:${port}`;
      await waitFor('ready', async () => (await get(`${url}/readyz`).catch(() => ({ status: 0 }))).status === 200, { dirs: [sb.stateDir] });
      const data = async () => {
        const res = await fetch(`${url}/`);
        expect(res.status).to.equal(200);
        expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8');
        const html = await res.text();
        const meta = /<meta http-equiv="Content-Security-Policy" content="([^"]+)">/.exec(html)?.[1]?.replace(/&#39;/g, "'");
        expect(res.headers.get('content-security-policy')).to.equal(meta);
        const json = /<script type="application\/json" id="report-data">([\s\S]*?)<\/script>/.exec(html)?.[1] as string;
        return JSON.parse(json) as { mode: string; maxRunning: number; attempts: { name: string; phase: string; links: unknown }[] };
      };
      expect((await data()).attempts).to.deep.equal([]);
      await sb.write('live.yaml', sb.attempt('live', 'true'));
      await waitFor('live finished', async () => (await sb.status('live'))?.phase === 'Succeeded', { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] });
      // The page is made from the controller's copy of the record, written just after the file.
      await waitFor('the page shows live Succeeded', async () => (await data()).attempts[0]?.phase === 'Succeeded', {
        dirs: [path.join(sb.stateDir, sb.instance, 'attempts')],
      });
      const d = await data();
      expect(d).to.include({ mode: 'live', maxRunning: 3 });
      // the live page has no links (the controller serves no run folders); the data never carries them
      expect(d.attempts.map((a) => [a.name, a.phase, 'links' in a])).to.deep.equal([['live', 'Succeeded', false]]);
      expect(await (await fetch(`${url}/`)).text()).not.to.match(/<a href=/);
    } finally {
      await ctl.stop();
    }
  });

  it('on SIGINT (Ctrl-C) stops cleanly: exit 0, its locks released, the running attempt left running', async function () {
    await sb.write('s.yaml', sb.attempt('s', 'sleep 300'));
    const child = spawn(process.execPath, [BIN, 'reconcile', ...sb.globalArgs(), '--log-level', 'info'], { stdio: ['ignore', 'ignore', 'pipe'] });
    let err = '';
    child.stderr.on('data', (c) => (err += String(c)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    try {
      await waitFor('s Running', async () => (await sb.status('s'))?.phase === 'Running', { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] });
      const before = (await containers(sb, 's')).map((c) => [c.Id, c.State]);
      expect(before).to.have.length(1);
      child.kill('SIGINT');
      expect(await exited, err).to.equal(0);
      expect(err)
        .to.match(/SIGINT: finishing the operations in flight; attempts keep running/)
        .and.match(/controller stopped/);
      expect(
        (await containers(sb, 's')).map((c) => [c.Id, c.State]),
        'the same container, running',
      ).to.deep.equal(before);
      const lock = await docker
        .getVolume(lockVolumeName(sb.instance))
        .inspect()
        .then(
          () => 'held',
          () => 'released',
        );
      expect(lock).to.equal('released');
      expect(await fs.readdir(sb.stateDir)).to.not.include(`${sb.instance}.lock`);
    } finally {
      child.kill('SIGKILL');
    }
  });

  it('on SIGTERM mid-work exits 0, leaves attempts running, and a restart adopts them', async function () {
    for (const n of ['s1', 's2', 's3', 's4', 's5', 's6']) await sb.write(`${n}.yaml`, sb.attempt(n, 'sleep 300'));
    const since = Math.floor(Date.now() / 1000) - 1;
    // One worker: when the first container exists, most attempts are not provisioned yet.
    const child = spawn(process.execPath, [BIN, 'reconcile', ...sb.globalArgs(), '--log-level', 'info', '--max-running', '10', '--workers', '1'], {
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let err = '';
    child.stderr.on('data', (c) => (err += String(c)));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    await waitFor('first container created', async () => (await containers(sb)).length > 0, { instance: sb.instance });
    child.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running 20 s after SIGTERM'), 20_000).unref())]);
    if (code !== 0) child.kill('SIGKILL');
    expect(code, err).to.equal(0);
    expect(err).to.match(/SIGTERM: finishing the operations in flight/);
    const left = await containers(sb);
    expect(left.length).to.be.greaterThan(0);
    expect(left.length, 'the SIGTERM came mid-work').to.be.lessThan(6);
    // restart: adopts what runs, finishes the rest, starts nothing twice
    const ctl = startController(sb, { maxRunning: 10 });
    try {
      for (const n of ['s1', 's2', 's3', 's4', 's5', 's6']) await runningContainer(sb, n);
      await waitFor(
        'all Running',
        async () => {
          const all = await sb.store().loadAll();
          return [...all.values()].filter((s) => s.phase === 'Running').length === 6 || undefined;
        },
        { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')] },
      );
    } finally {
      await ctl.stop();
    }
    expect(await containerEvents(sb.instance, since, 'start')).to.have.length(6);
  });
});

/**
 * `--backend swarm` end to end on a real two-node swarm (test/support/swarm.ts): the same specs,
 * the same CLI, each run a replicated job pinned to the node berth chose. Exit codes, a run on
 * the worker with its fixture in and its results back, a secret as a swarm secret that is gone
 * after clean, and a node without the daemon hardening refused.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS, REASONS, SWARM } from '../../../src/constants';
import type { Manifest } from '../../../src/harvest/manifest';
import { createSwarmEngine } from '../../../src/engine/swarm';
import { Sandbox } from '../../support/sandbox';
import { swarmCli } from '../../support/swarm-cli';
import { TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { thenTearDown } from '../../support/teardown';
import { waitFor } from '../../support/wait';

describe('--backend swarm on a real two-node swarm', function () {
  this.timeout(180_000);
  let s: TestSwarm;

  before(async () => {
    s = await twoNodeSwarm();
  });

  it('maps exit codes 0, 1 and 137 as on one engine', async () => {
    const sb = await Sandbox.create('sw-exit');
    try {
      await sb.write('ok.yaml', sb.attempt('ok', 'exit 0'));
      await sb.write('one.yaml', sb.attempt('one', 'exit 1'));
      await sb.write('kill.yaml', sb.attempt('kill', 'kill -9 $$'));
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '120');
      const got = await Promise.all(['ok', 'one', 'kill'].map(async (n) => [(await sb.status(n))?.phase, (await sb.status(n))?.exitCode]));
      expect(got, r.stderr).to.deep.equal([
        ['Succeeded', 0],
        ['Failed', 1],
        ['Failed', 137],
      ]);
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
  });

  it("brings home only what fits spec.harvest's caps, streamed; the manifest lists what was left out (ResultsTruncated)", async () => {
    const sb = await Sandbox.create('sw-caps');
    try {
      const cmd =
        'for f in a b c d; do dd if=/dev/urandom of=/results/$f bs=1048576 count=1 2>/dev/null; done; dd if=/dev/urandom of=/results/big bs=1048576 count=10 2>/dev/null';
      await sb.write('c.yaml', sb.attempt('c', cmd, '  harvest: {maxBytes: 3Mi}\n'));
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '120');
      const st = await sb.status('c');
      expect([st?.phase, st?.reason], r.stderr + JSON.stringify(st)).to.deep.equal(['Succeeded', REASONS.resultsTruncated]);
      const manifest = JSON.parse(await fs.readFile(path.join(path.dirname(st!.resultsDir!), 'manifest.json'), 'utf8')) as Manifest;
      // in the archive's order: three of the four 1 MiB files fit, the fourth and big do not
      expect(manifest.files).to.have.length(3);
      expect(manifest.files.every((f) => f.size === 1024 ** 2 && /^[0-9a-f]{64}$/.test(f.sha256 ?? ''))).to.equal(true);
      expect(manifest.truncation).to.include({ truncated: true, keptBytes: 3 * 1024 ** 2, leftOutEntries: 2, leftOutBytes: 11 * 1024 ** 2 });
      expect(manifest.truncation.leftOut.map((l) => l.path)).to.include('big');
      expect((await fs.readdir(st!.resultsDir!)).sort()).to.deep.equal(manifest.files.map((f) => f.path).sort());
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
  });

  it('runs on the worker with its fixture in and its results, logs, status and manifest back where berth runs', async () => {
    const sb = await Sandbox.create('sw-files');
    const worker = s.workers[0]!;
    await s.availability(s.manager, 'drain');
    try {
      await sb.write('fixtures/f/in.txt', 'fixture-content\n');
      await sb.write(
        'f.yaml',
        sb.attempt('f', 'cat in.txt; mkdir -p /results/sub; cp in.txt /results/sub/copy.txt; echo done > /results/out.txt', '  fixture: ./fixtures/f\n'),
      );
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '120');
      const st = await sb.status('f');
      expect([st?.phase, st?.exitCode], r.stderr + JSON.stringify(st)).to.deep.equal(['Succeeded', 0]);
      const runDir = path.dirname(st!.resultsDir!);
      expect(await fs.readFile(path.join(st!.resultsDir!, 'sub/copy.txt'), 'utf8')).to.equal('fixture-content\n');
      expect(await fs.readFile(path.join(st!.resultsDir!, 'out.txt'), 'utf8')).to.equal('done\n');
      expect(await fs.readFile(path.join(runDir, 'logs.txt'), 'utf8')).to.contain('fixture-content');
      const manifest = JSON.parse(await fs.readFile(path.join(runDir, 'manifest.json'), 'utf8')) as { files: { path: string }[] };
      expect(manifest.files.map((f) => f.path)).to.deep.equal(['out.txt', 'sub', 'sub/copy.txt']);
      expect(JSON.parse(await fs.readFile(path.join(runDir, 'status.json'), 'utf8')).phase).to.equal('Succeeded');
      // it really ran on the worker: its task's container was made by the worker's engine
      const sw = createSwarmEngine(s.manager.docker);
      const svc = (await sw.services.list([`${LABELS.instance}=${sb.instance}`]))[0];
      expect(svc?.nodeId).to.equal(worker.id);
      const tasks = await sw.tasks.list({ services: [svc!.id] });
      expect(tasks.map((t) => t.nodeId)).to.deep.equal([worker.id]);
    } finally {
      await s.availability(s.manager, 'active');
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
    // nothing of the run is left on the worker's engine
    const left = await worker.docker.listVolumes({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] }) });
    expect(left.Volumes ?? []).to.deep.equal([]);
    expect(await worker.docker.listContainers({ all: true, filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] }) })).to.deep.equal([]);
  });

  it('delivers a secret as a swarm secret with a content-hashed name, and clean removes it', async () => {
    const sb = await Sandbox.create('sw-secret');
    const VAR = 'BERTH_TEST_SWARM_SECRET';
    process.env[VAR] = `value-${sb.instance}`;
    const sw = createSwarmEngine(s.manager.docker);
    try {
      // The run outlives its deadline, so its secret can be seen while it runs.
      await sb.write(
        's.yaml',
        sb.attempt(
          's',
          `test "$(cat /run/secrets/token)" = "value-${sb.instance}" && sleep 600`,
          `  deadlineSeconds: 15\n  secrets:\n    - {name: token, fromEnv: ${VAR}}\n`,
        ),
      );
      const started = await swarmCli(sb, s, 'reconcile', '--once');
      expect(started.code, started.stderr).to.equal(0);
      const secrets = await sw.secrets.list([`${LABELS.instance}=${sb.instance}`]);
      expect(secrets.length).to.equal(1);
      expect(secrets[0]?.name).to.match(/^b-[0-9a-f]{16}-[0-9a-f]{16}$/);
      expect(JSON.stringify(secrets)).not.to.contain(`value-${sb.instance}`);
      expect(secrets[0]?.labels[SWARM.secretFileLabel]).to.match(/^token:/);
      // Its run ends (the deadline): the holder of a secret is removed right after the harvest, its swarm secret with it.
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150');
      expect((await sb.status('s'))?.phase, r.stderr).to.equal('TimedOut');
      expect(await sw.secrets.list([`${LABELS.instance}=${sb.instance}`])).to.deep.equal([]);
    } finally {
      delete process.env[VAR];
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
    expect(await sw.secrets.list([`${LABELS.instance}=${sb.instance}`])).to.deep.equal([]);
  });

  it('stops a run at its deadline through its node: TimedOut, after the deadline, never before', async () => {
    const sb = await Sandbox.create('sw-deadline');
    try {
      // sleep 300 outlives --timeout 120: the run can only have ended by berth's stop
      await sb.write('slow.yaml', sb.attempt('slow', 'sleep 300', '  deadlineSeconds: 2\n'));
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '120');
      expect(r.code, r.stderr).to.equal(3);
      const st = await sb.status('slow');
      expect([st?.phase, st?.reason]).to.deep.equal(['TimedOut', 'DeadlineExceeded']);
      expect(st?.exitCode).to.be.a('number');
      expect(Date.parse(st?.finishedAt ?? '') - Date.parse(st?.startedAt ?? ''), 'ran (ms, the node engine times)').to.be.at.least(2_000);
    } finally {
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
  });

  it('refuses a node whose daemon does not enforce the hardening: the attempt is Blocked naming the node', async () => {
    const bare = new TestSwarm('bare-refusal', { nodes: [{ hardened: false }], images: ['berth/busybox:local', 'berth/egress-proxy:local'] });
    await bare.up();
    const sb = await Sandbox.create('sw-refuse');
    try {
      await sb.write('r.yaml', sb.attempt('r', 'true'));
      await swarmCli(sb, bare, 'reconcile', '--once');
      const st = await sb.status('r');
      expect([st?.phase, st?.reason]).to.deep.equal(['Blocked', 'NodeRefused']);
      expect(st?.message).to.contain(bare.manager.id.slice(0, 12));
      expect(st?.message).to.contain(
        'does not enforce no-new-privileges (dockerd --no-new-privileges) nor a private cgroup namespace (dockerd --default-cgroupns-mode private)',
      );
      // nothing ran: no service of the instance
      expect(await createSwarmEngine(bare.manager.docker).services.list([`${LABELS.instance}=${sb.instance}`])).to.deep.equal([]);
    } finally {
      await swarmCli(sb, bare, 'clean');
      await sb.dispose();
      await bare.down();
    }
    expect(await bare.traces()).to.deep.equal([]);
  });

  it("the worker's dockerd killed mid-run: the run ends Lost after the grace, and is retried on the manager", async () => {
    const sb = await Sandbox.create('sw-lost');
    const worker = s.workers[0]!;
    await s.availability(s.manager, 'drain');
    let drained = true;
    await thenTearDown(
      async () => {
        await sb.write('l.yaml', sb.attempt('l', 'sleep 8; echo ran > /results/ran.txt', '  retries: 1\n'));
        const reconcile = swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150', '--retry-backoff', '1');
        await waitFor('the run to be Running on the worker', async () => (await sb.status('l'))?.phase === 'Running', {
          dirs: [sb.stateDir],
          timeoutMs: 60_000,
        });
        await s.availability(s.manager, 'active');
        drained = false;
        await worker.kill();
        const r = await reconcile;
        const st = await sb.status('l');
        expect([st?.phase, st?.run, st?.retriesUsed], r.stderr).to.deep.equal(['Succeeded', 2, 1]);
        expect(st?.history.map((h) => [h.run, h.phase, h.reason])).to.deep.equal([[1, 'Failed', 'Lost']]);
        expect(await fs.readFile(path.join(st!.resultsDir!, 'ran.txt'), 'utf8')).to.equal('ran\n');
      },
      async () => {
        if (drained) await s.availability(s.manager, 'active');
        // started again once the manager has it down (test/support/swarm.ts), and ready; only waited for if it was never killed
        const back = await s.startAgain(worker).then(
          () => undefined,
          (err: unknown) => err as Error,
        );
        const c = await swarmCli(sb, s, 'clean');
        const f = JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] });
        const left = back
          ? []
          : [
              ...(await worker.docker.listContainers({ all: true, filters: f })).map((x) => `worker ${x.Names[0]} ${x.State} ${JSON.stringify(x.Labels)}`),
              ...(await s.manager.docker.listContainers({ all: true, filters: f })).map((x) => `manager ${x.Names[0]} ${x.State}`),
            ];
        await sb.dispose();
        if (back) throw back;
        expect(c.code, c.stderr + c.stdout + left.join('\n')).to.equal(0);
      },
    );
  });
});

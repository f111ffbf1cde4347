/**
 * Network isolation on a real two-node swarm (test/support/swarm.ts), placed on the worker: an
 * isolated attempt with an egress allowlist reaches the allowed server through berth's egress
 * proxy (a service on the same node, on the attempt's internal overlay and an egress overlay)
 * and nothing else; an internal attempt and a default (`none`) one reach nothing; a task's
 * container put on `docker_gwbridge` is seen there; nothing is left after clean.
 *
 * Every destination is on this machine: two HTTP servers this test starts in the manager's own
 * network namespace (10.78.0.1, the swarm's link), ended by their pids.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { COMPONENTS, LABELS } from '../../../src/constants';
import { createSwarmBackend } from '../../../src/backend/swarm';
import { Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm, swarmCli } from '../../support/swarm-cli';
import { TestSwarm, twoNodeSwarm } from '../../support/swarm';

const ALLOWED = 18080;
const DENIED = 18081;

/** An HTTP server answering `<role>-body`, in the node's network namespace (started by pid, ended by pid). */
async function serve(netns: string, port: number, role: string): Promise<ChildProcess> {
  const js = `require('http').createServer((q,s)=>s.end('${role}-body')).listen(${port},()=>console.log('ready'));process.on('SIGTERM',()=>process.exit(0));`;
  const p = spawn('nsenter', [`--net=/var/run/netns/${netns}`, process.execPath, '-e', js], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise<void>((resolve, reject) => {
    p.stdout?.on('data', (b: Buffer) => {
      if (b.toString().includes('ready')) resolve();
    });
    p.once('exit', (code) => reject(new Error(`server ${role} exited ${code}`)));
  });
  return p;
}

async function end(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => p.once('exit', () => resolve()));
  p.kill('SIGTERM');
  await gone;
}

/** The probes of an attempt; each negative one bounded by 3 s. */
const PROBES = `
r=/results
wget -q -O $r/allowed.txt http://10.78.0.1:${ALLOWED}/; echo $? > $r/allowed.rc
wget -q -O $r/denied.txt http://10.78.0.1:${DENIED}/ 2> $r/denied.err; echo $? > $r/denied.rc
(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 10.78.0.1 ${ALLOWED} > $r/direct.txt 2>&1; echo $? > $r/direct.rc)
ip -o link | cut -d: -f2 | tr -d ' ' > $r/links.txt
exit 0
`;

/** A direct try at the allowed server, by address, bypassing any proxy. */
const DIRECT = `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 10.78.0.1 ${ALLOWED} > /results/out.txt 2>&1; echo $? > /results/rc; ip -o link | cut -d: -f2 | tr -d ' ' > /results/links.txt`;

describe('--backend swarm: network isolation on a real two-node swarm', function () {
  this.timeout(240_000);
  let s: TestSwarm;
  const servers: ChildProcess[] = [];

  before(async () => {
    s = await twoNodeSwarm();
    servers.push(await serve(s.manager.netns, ALLOWED, 'allowed'), await serve(s.manager.netns, DENIED, 'denied'));
  });

  after(async () => {
    for (const p of servers) await end(p);
  });

  it('an isolated attempt with egress on the worker reaches the allowed server through its proxy on that node, nothing else', async () => {
    const sb = await Sandbox.create('sw-egress');
    const worker = s.workers[0]!;
    await s.availability(s.manager, 'drain');
    try {
      await sb.write('e.yaml', sb.attempt('e', PROBES, `  network: {mode: isolated, egress: ["10.78.0.1:${ALLOWED}"]}\n`));
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150');
      const st = await sb.status('e');
      expect([st?.phase, st?.exitCode], r.stderr + JSON.stringify(st)).to.deep.equal(['Succeeded', 0]);
      const res = (f: string) => fs.readFile(path.join(st!.resultsDir!, f), 'utf8');
      expect(await res('allowed.txt')).to.equal('allowed-body');
      expect((await res('allowed.rc')).trim()).to.equal('0');
      expect((await res('denied.rc')).trim()).to.not.equal('0');
      expect(await res('denied.err')).to.match(/403/);
      expect((await res('direct.rc')).trim(), 'direct to the server by address').to.not.equal('0');
      expect(await res('direct.txt')).to.not.include('allowed-body');
      const links = (await res('links.txt')).split('\n').filter(Boolean).sort();
      expect(links, 'one interface on the internal overlay, and loopback').to.have.length(2);
      expect(links[1]).to.equal('lo');
      // attested at its start: only on its internal overlay
      expect(st?.lastAttestation?.ok, JSON.stringify(st?.lastAttestation)).to.equal(true);
      expect(st?.containerId, 'the run was on the worker').to.match(new RegExp(`@${worker.id}$`));
    } finally {
      await s.availability(s.manager, 'active');
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });

  it('an internal attempt and a default one (network none) on the worker reach nothing outside', async () => {
    const sb = await Sandbox.create('sw-closed');
    const worker = s.workers[0]!;
    await s.availability(s.manager, 'drain');
    try {
      await sb.write('closed.yaml', sb.attempt('closed', DIRECT, '  network: {mode: isolated}\n'));
      await sb.write('none.yaml', sb.attempt('none', DIRECT));
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '150');
      for (const name of ['closed', 'none']) {
        const st = await sb.status(name);
        expect([st?.phase, st?.exitCode], `${name}: ${r.stderr} ${JSON.stringify(st)}`).to.deep.equal(['Succeeded', 0]);
        expect(st?.containerId, `${name} ran on the worker`).to.match(new RegExp(`@${worker.id}$`));
        expect(st?.lastAttestation?.ok, JSON.stringify(st?.lastAttestation)).to.equal(true);
        const res = (f: string) => fs.readFile(path.join(st!.resultsDir!, f), 'utf8');
        expect((await res('rc')).trim(), `${name}: direct to the server by address`).to.not.equal('0');
        expect(await res('out.txt')).to.not.include('allowed-body');
        // an interface on an internal overlay (the attempt's, or the run's own for none), and loopback
        expect((await res('links.txt')).split('\n').filter(Boolean), name).to.have.length(2);
      }
    } finally {
      await s.availability(s.manager, 'active');
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });

  it("sees a task's container put on docker_gwbridge: its networks are no longer only its internal overlay", async () => {
    const sb = await Sandbox.create('sw-gw');
    const worker = s.workers[0]!;
    await s.availability(s.manager, 'drain');
    try {
      await sb.write('g.yaml', sb.attempt('g', 'sleep 300', '  deadlineSeconds: 120\n  network: {mode: isolated}\n'));
      const r = await swarmCli(sb, s, 'reconcile', '--once');
      expect(r.code, r.stderr).to.equal(0);
      const st = await sb.status('g');
      expect(st?.phase, JSON.stringify(st)).to.equal('Running');
      const backend = createSwarmBackend({ docker: s.manager.docker });
      const before = await backend.containers.inspect(st!.containerId!);
      const [net] = (await backend.networks.list([`${LABELS.instance}=${sb.instance}`, `${LABELS.component}=${COMPONENTS.network}`])).map((n) => n.name);
      expect(before.networks).to.deep.equal([net]);
      const [task] = await worker.docker.listContainers({ filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`] }) });
      expect(task, 'the task container on the worker').to.not.equal(undefined);
      await worker.docker.getNetwork('docker_gwbridge').connect({ Container: task!.Id });
      const after = await backend.containers.inspect(st!.containerId!);
      expect(after.networks).to.deep.equal(['docker_gwbridge', net].sort());
      // the executor's attestation compares these with the attempt's one network, exactly: refused;
      // its topology check reads the overlay's members from the nodes, by run id
      expect((await backend.networks.inspect(net!)).containers).to.deep.equal([st!.containerId]);
    } finally {
      await s.availability(s.manager, 'active');
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });
});

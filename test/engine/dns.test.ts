/**
 * DNS cannot carry data out of an isolated attempt. Engines before 23.0.11 / 25.0.4 / 26.0
 * (this project's docker.io 20.10 among them) forward lookups of outside names from an
 * `--internal` network through the host's namespace when the host's resolver is on loopback, as
 * systemd-resolved's 127.0.0.53 is (CVE-2024-29018). Here a private engine sees a resolv.conf
 * naming 127.0.0.1, where the test runs a DNS server that records every question, in the
 * engine's own network namespace: nothing can leave the machine. A plain container on an
 * internal network reaches it (the control); berth's isolated attempt and its sidecar do not,
 * while names on the attempt's network still resolve.
 */
import { expect } from 'chai';
import type { ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { createDockerEngine } from '../../src/engine/docker';
import { startController } from '../support/controller';
import { requireEngine, TEST_IMAGE, TEST_LABEL, TEST_RUN } from '../support/engine';
import { PrivateEngine } from '../support/private-engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

/** The DNS server the private engine's resolv.conf names: every question it got, as they come. */
class QuestionLog {
  readonly names: string[] = [];
  private waiters: (() => void)[] = [];
  constructor(readonly proc: ChildProcess) {
    let buf = '';
    proc.stdout?.on('data', (c: Buffer) => {
      buf += c.toString();
      for (let i = buf.indexOf('\n'); i >= 0; i = buf.indexOf('\n')) {
        const line = buf.slice(0, i);
        buf = buf.slice(i + 1);
        if (line.startsWith('query ')) this.names.push(line.slice(6));
        if (line === 'listening') this.names.push('<listening>');
        for (const w of this.waiters.splice(0)) w();
      }
    });
  }

  /** Resolves once a line satisfies `pred`; rejects after `ms`. */
  async until(pred: (names: string[]) => boolean, what: string, ms = 15_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!pred(this.names)) {
      if (this.proc.exitCode !== null) throw new Error(`the test DNS server exited ${this.proc.exitCode}`);
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`timed out waiting for ${what}; questions so far: ${this.names.join(', ')}`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, left);
        this.waiters.push(() => (clearTimeout(t), resolve()));
      });
    }
  }
}

describe('isolation: no DNS out of an internal network (private engine, loopback resolver)', function () {
  this.timeout(120_000);
  before(requireEngine);

  const pe = new PrivateEngine('dns', { resolvConf: 'nameserver 127.0.0.1\n' });
  let dns: QuestionLog;
  let sb: Sandbox;
  before(async function () {
    await pe.start();
    await pe.importImage();
    dns = new QuestionLog(pe.spawnInNetns(process.execPath, [path.resolve(__dirname, '..', 'support', 'fake-dns.cjs'), '127.0.0.1']));
    await dns.until((n) => n.includes('<listening>'), 'the test DNS server to listen');
    sb = await Sandbox.create('dns');
  });
  after(async function () {
    const p = dns?.proc;
    if (p && p.exitCode === null) {
      const gone = new Promise((resolve) => p.once('exit', resolve));
      p.kill('SIGTERM'); // by the pid this test started it with
      await gone;
    }
    await pe.destroy(); // its containers and networks go with it
    if (sb) await fs.rm(sb.dir, { recursive: true, force: true });
  });

  it('control: a plain container on an internal network gets its lookup forwarded to the host resolver', async function () {
    const labels = { [TEST_LABEL]: TEST_RUN };
    await pe.docker.createNetwork({ Name: `${TEST_RUN}-dns-control`, Internal: true, Labels: labels });
    const c = await pe.docker.createContainer({
      Image: TEST_IMAGE,
      Cmd: ['sh', '-c', 'timeout 3 nslookup control-probe.invalid; true'],
      Labels: labels,
      HostConfig: { NetworkMode: `${TEST_RUN}-dns-control` },
    });
    await c.start();
    await c.wait();
    expect(dns.names, 'the engine forwards from an internal network (if not, it is patched and this control needs another engine)').to.include(
      'control-probe.invalid',
    );
  });

  it("berth's isolated attempt and its sidecar cannot reach it; their own names still resolve", async function () {
    await sb.write(
      'sealed.yaml',
      [
        'apiVersion: berth.dev/v1',
        'kind: Attempt',
        'metadata: {name: sealed}',
        'spec:',
        `  image: ${TEST_IMAGE}`,
        '  command: [sh, -c, "timeout 3 nslookup berth-main-probe.invalid > /results/outside.txt 2>&1; echo $? > /results/outside.rc; nslookup helper > /results/helper.txt 2>&1; until wget -q -O /results/sidecar.txt http://helper:8081/; do sleep 0.2; done"]',
        '  network: {mode: isolated}',
        '  sidecars:',
        "    - {name: helper, image: berth/busybox:local, command: [sh, -c, 'timeout 3 nslookup berth-sidecar-probe.invalid; mkdir -p /w && echo probed > /w/index.html && exec httpd -f -p 8081 -h /w']}",
        '',
      ].join('\n'),
    );
    const ctl = startController(sb, { resync: 600 }, createDockerEngine(pe.docker));
    try {
      const st = await waitFor(
        'sealed Succeeded',
        async () => {
          const s = await sb.status('sealed');
          return s?.phase === 'Succeeded' || s?.phase === 'Failed' ? s : undefined;
        },
        { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')], timeoutMs: 60_000 },
      );
      expect(st.phase, JSON.stringify(st)).to.equal('Succeeded');
      const dnsCheck = st.lastAttestation?.checks.find((c) => c.name === 'dns');
      expect(dnsCheck?.ok, JSON.stringify(st.lastAttestation)).to.equal(true);
    } finally {
      expect(await ctl.stop()).to.equal(0);
    }
    const results = path.join(sb.resultsRoot, 'sealed', 'run-1', 'results');
    const read = (f: string) => fs.readFile(path.join(results, f), 'utf8');
    expect((await read('outside.rc')).trim(), await read('outside.txt')).to.not.equal('0');
    expect(await read('helper.txt')).to.match(/Address:?\s+\d+\.\d+\.\d+\.\d+/);
    expect((await read('sidecar.txt')).trim(), 'the sidecar ran its lookup before serving').to.equal('probed');
    expect(
      dns.names.filter((n) => n.startsWith('berth-')),
      'questions that left the internal network',
    ).to.deep.equal([]);
  });
});

/**
 * Isolation that holds, built by berth on the real engine: an isolated attempt with an egress
 * allowlist reaches the allowed server through berth's proxy and nothing else. All traffic is
 * between containers this test made: an "allowed" and a "denied" HTTP server on an egress
 * network the test owns (passed to berth with --egress-network).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import type Dockerode from 'dockerode';
import { LABELS } from '../../src/constants';
import { PROXY_IMAGE } from '../../src/proxy/contract';
import { docker, requireEngine, TEST_LABEL, TEST_RUN } from '../support/engine';
import { Sandbox } from '../support/sandbox';

const SERVER_JS =
  "require('http').createServer((q,s)=>s.end(process.env.BODY)).listen(8080,()=>console.log('ready'));process.on('SIGTERM',()=>process.exit(0));";

async function waitForLine(c: Dockerode.Container, want: string): Promise<void> {
  const stream = (await c.logs({ follow: true, stdout: true, stderr: true })) as NodeJS.ReadableStream & { destroy(): void };
  const out = new PassThrough();
  docker.modem.demuxStream(stream, out, new PassThrough());
  let text = '';
  await new Promise<void>((resolve, reject) => {
    out.on('data', (b: Buffer) => {
      text += b.toString();
      if (text.split('\n').includes(want)) {
        stream.destroy();
        resolve();
      }
    });
    stream.on('end', () => reject(new Error(`log ended before "${want}": ${text}`)));
  });
}

/** The attempt's probes; each negative one is bounded by 3 s and all run side by side. */
const PROBES = `
r=/results
wget -q -O $r/allowed.txt http://allowed:8080/; echo $? > $r/allowed.rc &
wget -q -O $r/denied.txt http://denied:8080/ 2> $r/denied.err; echo $? > $r/denied.rc &
(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 $ALLOWED_IP 8080 > $r/direct.txt 2>&1; echo $? > $r/direct.rc) &
(printf 'CONNECT allowed:9999 HTTP/1.1\\r\\nHost: allowed:9999\\r\\n\\r\\n' | nc -w 3 egress-proxy 3128 > $r/otherport.txt 2>&1) &
(printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 $ALLOWED_IP 3128 > $r/proxyport.txt 2>&1; echo $? > $r/proxyport.rc) &
# busybox wget ignores NO_PROXY (which berth sets for the sidecars): -Y off
wget -Y off -q -O $r/tools.txt http://tools:8081/ 2>/dev/null; echo $? > $r/tools.rc &
wait
ip -o link | cut -d: -f2 | tr -d ' ' > $r/links.txt
exit 0
`;

describe('isolation: egress allowlist through the proxy sidecar (real engine)', function () {
  this.timeout(90_000);
  const net = `${TEST_RUN}-iso-egress`;
  const labels = { [TEST_LABEL]: TEST_RUN };
  const servers: Dockerode.Container[] = [];
  let allowedIp = '';
  let sb: Sandbox;

  before(async function () {
    await requireEngine();
    await docker
      .getImage(PROXY_IMAGE)
      .inspect()
      .catch(() => {
        throw new Error(`${PROXY_IMAGE} is missing: run ./scripts/images.sh (make test does)`);
      });
    await docker.createNetwork({ Name: net, Driver: 'bridge', Internal: false, Labels: labels, CheckDuplicate: true });
    for (const role of ['allowed', 'denied']) {
      const c = await docker.createContainer({
        name: `${TEST_RUN}-iso-${role}`,
        Image: PROXY_IMAGE,
        Entrypoint: ['/usr/bin/node', '-e', SERVER_JS],
        Env: [`BODY=${role}-body`],
        Labels: labels,
        HostConfig: { NetworkMode: net },
        NetworkingConfig: { EndpointsConfig: { [net]: { Aliases: [role] } } },
      });
      await c.start();
      await waitForLine(c, 'ready');
      servers.push(c);
    }
    allowedIp = (await servers[0]!.inspect()).NetworkSettings.Networks[net]?.IPAddress ?? '';
    expect(allowedIp).to.match(/^\d+\.\d+\.\d+\.\d+$/);
    sb = await Sandbox.create('iso');
  });

  after(async function () {
    await sb?.destroy();
    for (const c of servers) await c.remove({ force: true });
    await docker
      .getNetwork(net)
      .remove()
      .catch(() => undefined);
  });

  it('reaches the allowed server through the proxy, nothing else; the decision log is harvested', async function () {
    await sb.write(
      'iso.yaml',
      sb.attempt(
        'iso',
        PROBES,
        [
          '  network: {mode: isolated, egress: ["allowed:8080"]}',
          `  env: {ALLOWED_IP: "${allowedIp}"}`,
          '  sidecars:',
          "    - {name: tools, image: berth/busybox:local, command: [sh, -c, 'mkdir -p /tmp/www && echo tool-ok > /tmp/www/index.html && exec httpd -f -p 8081 -h /tmp/www']}",
          '',
        ].join('\n'),
      ),
    );
    await sb.write('none.yaml', sb.attempt('none', 'ip -o link | cut -d: -f2 | tr -d " " > /results/links.txt'));
    await sb.write(
      'closed.yaml',
      sb.attempt(
        'closed',
        `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${allowedIp} 8080 > /results/out.txt 2>&1; echo $? > /results/rc`,
        '  network: {mode: isolated}\n',
      ),
    );
    const r = await sb.cli('reconcile', '--once', '--wait', '--egress-network', net);
    expect(r.code, r.stderr + r.stdout).to.equal(0);

    const res = (f: string) => fs.readFile(path.join(sb.resultsRoot, 'iso', 'run-1', 'results', f), 'utf8');
    expect(await res('allowed.txt')).to.equal('allowed-body');
    expect((await res('allowed.rc')).trim()).to.equal('0');
    expect((await res('denied.rc')).trim()).to.not.equal('0');
    expect(await res('denied.err')).to.match(/403/);
    expect((await res('direct.rc')).trim(), 'direct to the server by address').to.not.equal('0');
    expect(await res('direct.txt')).to.not.include('allowed-body');
    expect(await res('otherport.txt'), 'CONNECT to the allowed host on another port').to.match(/^HTTP\/1\.1 403/);
    expect((await res('proxyport.rc')).trim(), 'the server on the proxy port, directly').to.not.equal('0');
    expect((await res('tools.rc')).trim(), 'the sidecar answers by its name').to.equal('0');
    expect(await res('tools.txt')).to.equal('tool-ok\n');
    const isoLinks = (await res('links.txt')).split('\n').filter(Boolean).sort();
    expect(isoLinks, 'one interface on the internal network, and loopback').to.have.length(2);
    expect(isoLinks[0]).to.match(/^eth0@if\d+$/);
    expect(isoLinks[1]).to.equal('lo');

    // the proxy's decisions, harvested beside the results
    const decisions = (await fs.readFile(path.join(sb.resultsRoot, 'iso', 'run-1', 'egress.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event: string; target?: string; allowed?: boolean; status?: number });
    const decided = decisions.filter((d) => d.event === 'decision');
    expect(decided.some((d) => d.target === 'allowed:8080' && d.allowed === true)).to.equal(true);
    expect(decided.some((d) => d.target === 'denied:8080' && d.allowed === false && d.status === 403)).to.equal(true);
    expect(decided.some((d) => d.target === 'allowed:9999' && d.allowed === false)).to.equal(true);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'iso', 'run-1', 'sidecars', 'tools.log'), 'utf8')).to.be.a('string');

    // network none: loopback only; isolated without egress: nothing outside
    const links = (await fs.readFile(path.join(sb.resultsRoot, 'none', 'run-1', 'results', 'links.txt'), 'utf8')).split('\n').filter(Boolean);
    expect(links).to.deep.equal(['lo']);
    expect((await fs.readFile(path.join(sb.resultsRoot, 'closed', 'run-1', 'results', 'rc'), 'utf8')).trim()).to.not.equal('0');

    // describe shows the topology checks
    const d = await sb.cli('describe', 'iso');
    expect(d.stdout).to.match(/ok\s+topology\s+berth_.*_iso is internal and holds only the attempt's 3 containers/);
    expect(d.stdout).to.match(/ok\s+egress-proxy: networks/);
  });

  it('fails the attempt, main never started, when its proxy cannot start', async function () {
    await sb.write('noproxy.yaml', sb.attempt('noproxy', 'echo should-not-run', '  network: {mode: isolated, egress: ["allowed:8080"]}\n'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--egress-network', net, '--egress-proxy-image', 'berth/busybox:local');
    // berth's own proxy failing is no failure of the attempt: an infrastructure outcome
    expect(r.code).to.equal(5);
    expect(r.stdout).to.match(/ 1 infrastructure \(1 ProxyFailed: noproxy\)\n$/);
    const st = await sb.status('noproxy');
    expect([st?.phase, st?.reason]).to.deep.equal(['Failed', 'ProxyFailed']);
    expect(st?.message).to.match(/egress proxy .*listening/);
    const mains = await docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=noproxy`, `${LABELS.component}=main`] }),
    });
    expect(mains).to.have.length(0);
  });
});

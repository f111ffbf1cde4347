/**
 * Credentials the attempt never holds, on the real engine. An HTTPS upstream with a CA of the
 * test's own (openssl, made here) answers only with the right Authorization header; it runs on a
 * network the test made (internal: nothing here reaches outside the machine), given to berth as
 * the egress network. An isolated attempt calls it with plain HTTP through its proxy and gets its
 * answers, a streamed one included; then it looks for the key everywhere it can and never finds
 * it, and no file berth wrote for the run holds it either.
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
import { makeTestCa } from '../support/tls-ca';

/** The proxy image under test: the shared one, or (BERTH_TEST_PROXY_IMAGE) a work tree's own build (images.sh, BERTH_PROXY_TAG). */
const IMAGE = process.env.BERTH_TEST_PROXY_IMAGE || PROXY_IMAGE;
const KEY = `sk-berth-${TEST_RUN}-9f3b7c`;
const KEY_ENV = `BERTH_TEST_CRED_${TEST_RUN.replace(/[^A-Za-z0-9]/g, '_')}`;

/**
 * The upstream: HTTPS on 443 (api.upstream) that wants `Bearer KEY`, and a plain HTTP echo of
 * request headers on 8080 (echo.upstream, another allowed host).
 */
const UPSTREAM_JS = `
const https = require('https'), http = require('http');
const want = 'Bearer ' + process.env.KEY;
let go = null;
https.createServer({ key: process.env.TLS_KEY, cert: process.env.TLS_CERT }, (q, s) => {
  if (q.headers.authorization !== want) { s.writeHead(401); return s.end('no key\\n'); }
  const u = new URL(q.url, 'http://x');
  if (u.pathname === '/hello') return s.end(JSON.stringify({ hello: 'world', host: q.headers.host }));
  if (u.pathname === '/sse') { s.writeHead(200, { 'content-type': 'text/event-stream' }); s.write('data: one\\n\\n'); go = () => s.end('data: two\\n\\n'); return; }
  if (u.pathname === '/go') { if (go) go(); go = null; return s.end('went\\n'); }
  if (u.pathname === '/redirect') { s.writeHead(302, { location: u.searchParams.get('to') }); return s.end(); }
  s.writeHead(404); s.end();
}).listen(443, () => console.log('ready'));
http.createServer((q, s) => s.end(JSON.stringify(q.headers))).listen(8080);
process.on('SIGTERM', () => process.exit(0));
`;

/** A sidecar with a way out of its own: it fetches from its upstream, then serves what it got to the attempt. */
const SIDECAR = 'mkdir -p /tmp/www; wget -q -O /tmp/www/got.json http://side.upstream/hello; exec httpd -f -p 8081 -h /tmp/www';

/**
 * `req REQUEST FILE [PORT]`: REQUEST sent to the proxy with busybox nc, the answer into
 * /results/FILE. nc leaves soon after its input ends, so the input stays open until nc has
 * ended (when the proxy closes): no fixed sleep (it was 4 s a request).
 */
const REQ =
  'req() { (printf "$1"; until [ -e "$r/.done-$2" ]; do sleep 0.05; done) | { nc egress-proxy ${3:-3128} > "$r/$2" 2>&1; touch "$r/.done-$2"; }; rm -f "$r/.done-$2"; }';

/** The attempt: uses the upstream, then looks for the key everywhere it can. */
const ATTEMPT = `
r=/results
${REQ}
wget -q -O $r/hello.json http://api.upstream/hello; echo $? > $r/hello.rc
# streamed: the first event arrives while the upstream still holds the second
req 'GET http://api.upstream/sse HTTP/1.1\\r\\nHost: api.upstream\\r\\nConnection: close\\r\\n\\r\\n' sse.raw &
i=0; until grep -q 'data: one' $r/sse.raw 2>/dev/null || [ $i -ge 150 ]; do sleep 0.1; i=$((i+1)); done
if grep -q 'data: two' $r/sse.raw; then echo buffered; elif grep -q 'data: one' $r/sse.raw; then echo streamed; else echo nothing; fi > $r/sse.order
wget -q -O $r/go.txt http://api.upstream/go
wait
# looking for the key
env > $r/env.txt
cat /proc/*/environ > $r/environ.txt 2>/dev/null
ls -laR /run/secrets > $r/secrets-ls.txt 2>&1; cat /run/secrets/* > $r/secrets.txt 2>&1
find / -xdev -type f ! -path '/proc/*' ! -path '/sys/*' ! -path '/bin/*' ! -path '/results/*' -exec cat {} + > $r/files.txt 2>/dev/null
req 'GET http://api.upstream/hello HTTP/1.1\\r\\nHost: api.upstream\\r\\nAuthorization: Bearer mine\\r\\nConnection: close\\r\\n\\r\\n' hello.raw &
req 'GET http://denied.upstream/ HTTP/1.1\\r\\nHost: denied.upstream\\r\\nConnection: close\\r\\n\\r\\n' denied.raw &
req 'CONNECT api.upstream:443 HTTP/1.1\\r\\nHost: api.upstream:443\\r\\n\\r\\n' connect.raw &
req 'GET http://api.upstream:8443/hello HTTP/1.1\\r\\nHost: api.upstream:8443\\r\\nConnection: close\\r\\n\\r\\n' otherport.raw &
req 'GET http://echo.upstream:8080/ HTTP/1.1\\r\\nHost: echo.upstream:8080\\r\\nConnection: close\\r\\n\\r\\n' echo.raw &
wait
# the sidecar's own way out is not the attempt's: its upstream, asked directly or on the sidecar's port of the proxy
req 'GET http://side.upstream/hello HTTP/1.1\\r\\nHost: side.upstream\\r\\nConnection: close\\r\\n\\r\\n' side-own.raw &
req 'GET http://side.upstream/hello HTTP/1.1\\r\\nHost: side.upstream\\r\\nConnection: close\\r\\n\\r\\n' side-port.raw 3129 &
wait
# what the sidecar got (busybox wget ignores NO_PROXY: -Y off)
i=0; until wget -Y off -q -O $r/side-got.json http://side:8081/got.json 2>/dev/null || [ $i -ge 50 ]; do sleep 0.2; i=$((i+1)); done
# a redirect to a server the attempt runs: the proxy passes it back and never follows it
me=$(ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)
nc -l -p 9000 > $r/captured.txt &
listener=$!
req "GET http://api.upstream/redirect?to=http://$me:9000/x HTTP/1.1\\r\\nHost: api.upstream\\r\\nConnection: close\\r\\n\\r\\n" redirect.raw
sleep 1
kill $listener 2>/dev/null
exit 0
`;

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

/** Every file below `dir`, with its content. */
async function allFiles(dir: string): Promise<{ file: string; text: string }[]> {
  const out: { file: string; text: string }[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const file = path.join(e.parentPath, e.name);
    out.push({ file, text: await fs.readFile(file, 'latin1') });
  }
  return out;
}

describe('credentials the attempt never holds (real engine)', function () {
  this.timeout(120_000);
  const net = `${TEST_RUN}-cred-egress`;
  const labels = { [TEST_LABEL]: TEST_RUN };
  let upstream: Dockerode.Container | undefined;
  let sb: Sandbox;

  before(async function () {
    await requireEngine();
    await docker
      .getImage(IMAGE)
      .inspect()
      .catch(() => {
        throw new Error(`${IMAGE} is missing: run ./scripts/images.sh (make test does)`);
      });
    const ca = makeTestCa(['api.upstream', 'side.upstream']);
    await docker.createNetwork({ Name: net, Driver: 'bridge', Internal: true, Labels: labels, CheckDuplicate: true });
    upstream = await docker.createContainer({
      name: `${TEST_RUN}-cred-upstream`,
      Image: IMAGE,
      User: '0',
      Entrypoint: ['/usr/bin/node', '-e', UPSTREAM_JS],
      Env: [`KEY=${KEY}`, `TLS_KEY=${ca.key}`, `TLS_CERT=${ca.cert}`],
      Labels: labels,
      HostConfig: { NetworkMode: net },
      NetworkingConfig: { EndpointsConfig: { [net]: { Aliases: ['api.upstream', 'side.upstream', 'echo.upstream'] } } },
    });
    await upstream.start();
    await waitForLine(upstream, 'ready');
    sb = await Sandbox.create('cred');
    await sb.write('ca.pem', ca.ca);
    process.env[KEY_ENV] = KEY;
  });

  after(async function () {
    delete process.env[KEY_ENV];
    await sb?.destroy();
    await upstream?.remove({ force: true });
    await docker
      .getNetwork(net)
      .remove()
      .catch(() => undefined);
  });

  it('the attempt calls the upstream through plain HTTP, streams included, and finds the key nowhere', async function () {
    await sb.write(
      'cred.yaml',
      sb.attempt(
        'cred',
        ATTEMPT,
        [
          '  secrets:',
          `    - {name: api-key, fromEnv: ${KEY_ENV}}`,
          '    - {name: upstream-ca, fromFile: ./ca.pem}',
          '  network:',
          '    mode: isolated',
          '    egress: ["echo.upstream:8080"]',
          '    credentials:',
          "      - {host: 'api.upstream:443', secret: api-key, caSecret: upstream-ca}",
          '  sidecars:',
          '    - name: side',
          '      image: berth/busybox:local',
          `      command: [sh, -c, ${JSON.stringify(SIDECAR)}]`,
          "      credentials: [{host: 'side.upstream:443', secret: api-key, caSecret: upstream-ca}]",
          '',
        ].join('\n'),
      ),
    );
    const r = await sb.cli('reconcile', '--once', '--wait', '--egress-network', net, '--egress-proxy-image', IMAGE);
    expect(r.code, r.stderr + r.stdout).to.equal(0);
    expect(r.stdout + r.stderr).to.not.include(KEY);

    const run = path.join(sb.resultsRoot, 'cred', 'run-1');
    const res = (f: string) => fs.readFile(path.join(run, 'results', f), 'utf8');
    // its answers
    expect((await res('hello.rc')).trim()).to.equal('0');
    expect(JSON.parse(await res('hello.json'))).to.deep.equal({ hello: 'world', host: 'api.upstream' });
    expect((await res('sse.order')).trim(), 'the first event came before the upstream sent the second').to.equal('streamed');
    expect(await res('sse.raw'))
      .to.match(/^HTTP\/1\.1 200/)
      .and.include('data: one')
      .and.include('data: two');
    expect(await res('go.txt')).to.equal('went\n');
    // the header it sent itself was replaced
    expect(await res('hello.raw')).to.match(/^HTTP\/1\.1 200/);
    // the proxy's own answers say why
    expect(await res('denied.raw'))
      .to.match(/^HTTP\/1\.1 403/)
      .and.include('denied.upstream:80 is not in the egress allowlist');
    expect(await res('connect.raw'))
      .to.match(/^HTTP\/1\.1 403/)
      .and.include('api.upstream has a credential the proxy adds');
    expect(await res('otherport.raw')).to.match(/^HTTP\/1\.1 403/);
    // another allowed host sees no credential
    const echo = await res('echo.raw');
    expect(echo).to.match(/^HTTP\/1\.1 200/);
    expect(echo.toLowerCase()).to.not.include('authorization');
    // the sidecar reached its upstream through its own port of the proxy; the attempt could not
    expect(JSON.parse(await res('side-got.json'))).to.deep.equal({ hello: 'world', host: 'side.upstream' });
    expect(await res('side-own.raw'))
      .to.match(/^HTTP\/1\.1 403/)
      .and.include('side.upstream:80 is not in the egress allowlist');
    expect(await res('side-port.raw'))
      .to.match(/^HTTP\/1\.1 403/)
      .and.include('serves sidecar side only');
    // the redirect came back to the attempt; nothing was sent to its server
    expect(await res('redirect.raw'))
      .to.match(/^HTTP\/1\.1 302/)
      .and.match(/location: http:\/\/[\d.]+:9000\/x/i);
    expect(await res('captured.txt')).to.equal('');
    // no secret file for the main container: the key went to the proxy only
    expect(await res('secrets-ls.txt')).to.not.include('api-key');
    expect(await res('env.txt')).to.include('HTTP_PROXY=');

    // the key is in nothing the attempt could see nor anything berth wrote for the run
    const files = await allFiles(run);
    expect(files.map((f) => path.relative(run, f.file))).to.include.members([
      'egress.jsonl',
      'logs.txt',
      'status.json',
      'results/files.txt',
      'results/environ.txt',
    ]);
    for (const f of files) expect(f.text.includes(KEY), path.relative(run, f.file)).to.equal(false);
    for (const f of await allFiles(sb.stateDir)) expect(f.text.includes(KEY), f.file).to.equal(false);

    // egress.jsonl shows the calls, the upstream named, no header
    const lines = (await fs.readFile(path.join(run, 'egress.jsonl'), 'utf8'))
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { event: string; target?: string; status?: number; reason?: string; method?: string; sidecar?: string });
    const decided = lines.filter((l) => l.event === 'decision');
    expect(decided.filter((l) => l.target === 'api.upstream:443' && l.status === 200 && l.reason === 'forwarded with its credential').length).to.be.at.least(4);
    expect(decided.some((l) => l.method === 'CONNECT' && l.target === 'api.upstream:443' && l.status === 403)).to.equal(true);
    expect(decided.some((l) => l.target === 'api.upstream:443' && l.status === 302)).to.equal(true);
    expect(decided.some((l) => l.sidecar === 'side' && l.target === 'side.upstream:443' && l.status === 200)).to.equal(true);

    // the main container's configuration holds no key
    const mains = await docker.listContainers({
      all: true,
      filters: JSON.stringify({ label: [`${LABELS.instance}=${sb.instance}`, `${LABELS.attempt}=cred`] }),
    });
    for (const c of mains) {
      const i = await docker.getContainer(c.Id).inspect();
      if (i.Config.Labels[LABELS.component] === 'main') expect(JSON.stringify(i.Config)).to.not.include(KEY);
      expect(JSON.stringify(i.Config.Labels)).to.not.include(KEY);
    }
    const d = await sb.cli('describe', 'cred');
    expect(d.stdout + d.stderr).to.not.include(KEY);
  });

  it('network.mode none with a sidecar: the sidecar reaches its upstream, the main container has no way out', async function () {
    const main = [
      'r=/results',
      'i=0; until wget -Y off -q -O $r/side-got.json http://side:8081/got.json 2>/dev/null || [ $i -ge 50 ]; do sleep 0.2; i=$((i+1)); done',
      'env > $r/env.txt; ls /run/secrets > $r/secrets.txt 2>&1',
      REQ,
      "req 'GET http://side.upstream/hello HTTP/1.1\\r\\nHost: side.upstream\\r\\nConnection: close\\r\\n\\r\\n' own.raw 3128 &",
      "req 'GET http://side.upstream/hello HTTP/1.1\\r\\nHost: side.upstream\\r\\nConnection: close\\r\\n\\r\\n' port.raw 3129 &",
      'wait',
    ].join('\n');
    await sb.write(
      'none.yaml',
      sb.attempt(
        'cred-none',
        main,
        [
          '  secrets:',
          `    - {name: api-key, fromEnv: ${KEY_ENV}}`,
          '    - {name: upstream-ca, fromFile: ./ca.pem}',
          '  network: {mode: none}',
          '  sidecars:',
          '    - name: side',
          '      image: berth/busybox:local',
          `      command: [sh, -c, ${JSON.stringify(SIDECAR)}]`,
          "      credentials: [{host: 'side.upstream:443', secret: api-key, caSecret: upstream-ca}]",
          '',
        ].join('\n'),
      ),
    );
    const r = await sb.cli('reconcile', '--once', '--wait', '--egress-network', net, '--egress-proxy-image', IMAGE);
    expect(r.code, r.stderr + r.stdout).to.equal(0);
    const run = path.join(sb.resultsRoot, 'cred-none', 'run-1');
    const res = (f: string) => fs.readFile(path.join(run, 'results', f), 'utf8');
    expect(JSON.parse(await res('side-got.json'))).to.deep.equal({ hello: 'world', host: 'side.upstream' });
    expect(await res('own.raw'))
      .to.match(/^HTTP\/1\.1 403/)
      .and.include('side.upstream:80 is not in the egress allowlist');
    expect(await res('port.raw'))
      .to.match(/^HTTP\/1\.1 403/)
      .and.include('serves sidecar side only');
    expect(await res('env.txt')).to.not.match(/_proxy=/i);
    expect((await res('secrets.txt')).trim()).to.not.include('api-key');
    for (const f of await allFiles(run)) expect(f.text.includes(KEY), path.relative(run, f.file)).to.equal(false);
  });
});

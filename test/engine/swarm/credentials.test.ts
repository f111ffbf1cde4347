/**
 * Credentials the attempt never holds, a sidecar's own way out and sidecar readiness, on a real
 * two-node swarm (test/support/swarm.ts), placed on the worker (the manager drained).
 *
 * The upstreams run in namespaces of the swarm's own (nothing leaves this machine), started and
 * ended by their pids: in the manager's (10.78.0.1), HTTPS on UPSTREAM (a CA of the test's own, a
 * certificate for the address) that answers only with `Bearer KEY`; in the worker's (10.78.0.2,
 * another host: a credentialed host is reached on its credential's port only), a plain HTTP echo
 * of request headers on ECHO and a plain HTTP server on SIDE that only a sidecar may reach.
 *
 * In one pass:
 *  - `cred`, isolated, with a credential for UPSTREAM and two sidecars: `side` has a way out of
 *    its own (SIDE in its egress, through its own port of the egress proxy, which serves only its
 *    task) and is ready once its `ready: {command}` finds what it fetched (after 6 s); `web`
 *    serves after 6 s and is ready once its `ready: {tcp}` port accepts. The main run reads what
 *    both serve once, first thing (no retry: only the probes make it wait), calls UPSTREAM with
 *    plain HTTP and gets its answers (the header injected by the proxy), a streamed one as it
 *    comes, asks for SIDE itself and on the sidecar's port (403 both), prints a secret of its own
 *    (plain, split, base64) and looks for the key. No file berth wrote for the run holds the key,
 *    nor the attempt's own secret.
 *  - `cnone`, network none, with a sidecar that has a credential of its own for UPSTREAM and is
 *    ready once its output says it fetched (`ready: {log}`, after 6 s): the main run reads what
 *    the sidecar got once, first thing; it has no proxy variables and gets 403 on both ports.
 *  - `ftcp` and `fcmd`: a tcp port and a command that never pass end SidecarFailed, saying why,
 *    no main run made.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { Sandbox } from '../../support/sandbox';
import { nothingLeftOnSwarm, swarmCli } from '../../support/swarm-cli';
import { TestSwarm, twoNodeSwarm } from '../../support/swarm';
import { makeTestCa } from '../../support/tls-ca';
import { needles } from '../../support/secret-needles';

const HOST = '10.78.0.1';
/** The worker's address on the swarm's link. */
const OTHER = '10.78.0.2';
const UPSTREAM = 18443;
const ECHO = 18444;
const SIDE = 18445;
const KEY = `sk-berth-${randomBytes(12).toString('hex')}`;
const TOKEN = `tok_${randomBytes(24).toString('base64url')}`;
const KEY_ENV = `BERTH_TEST_SWARM_KEY_${randomBytes(4).toString('hex')}`;
const TOKEN_ENV = `BERTH_TEST_SWARM_TOKEN_${randomBytes(4).toString('hex')}`;

/** The HTTPS upstream, in the manager's namespace. */
const UPSTREAM_JS = `
const want = 'Bearer ' + process.env.KEY;
let go = null;
require('https').createServer({ key: process.env.TLS_KEY, cert: process.env.TLS_CERT }, (q, s) => {
  if (q.headers.authorization !== want) { s.writeHead(401); return s.end('no key\\n'); }
  if (q.url === '/hello') return s.end(JSON.stringify({ hello: 'world', host: q.headers.host }));
  if (q.url === '/sse') { s.writeHead(200, { 'content-type': 'text/event-stream' }); s.write('data: one\\n\\n'); go = () => s.end('data: two\\n\\n'); return; }
  if (q.url === '/go') { if (go) go(); go = null; return s.end('went\\n'); }
  s.writeHead(404); s.end();
}).listen(${UPSTREAM}, '${HOST}', () => console.log('ready'));
process.on('SIGTERM', () => process.exit(0));
`;

/** The echo and the sidecar's server, in the worker's namespace (another host: a credentialed host is reached on its credential's port only). */
const PLAIN_JS = `
const http = require('http');
let n = 0; const up = () => { if (++n === 2) console.log('ready'); };
http.createServer((q, s) => s.end(JSON.stringify(q.headers))).listen(${ECHO}, '${OTHER}', up);
http.createServer((q, s) => s.end('side-body')).listen(${SIDE}, '${OTHER}', up);
process.on('SIGTERM', () => process.exit(0));
`;

/** A node process in a namespace, once it printed `ready` (ended by its pid). */
async function serve(netns: string, js: string, env: Record<string, string>): Promise<ChildProcess> {
  const p = spawn('nsenter', [`--net=/var/run/netns/${netns}`, process.execPath, '-e', js], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { PATH: process.env.PATH ?? '', ...env },
  });
  await new Promise<void>((resolve, reject) => {
    p.stdout?.on('data', (b: Buffer) => {
      if (b.toString().includes('ready')) resolve();
    });
    p.once('exit', (code) => reject(new Error(`a server in ${netns} exited ${code}`)));
  });
  return p;
}

/** Every file below `dir` (links not followed), with its content. */
async function allFiles(dir: string): Promise<{ file: string; text: string }[]> {
  const out: { file: string; text: string }[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!e.isFile()) continue;
    const file = path.join(e.parentPath, e.name);
    out.push({ file, text: await fs.readFile(file, 'latin1') });
  }
  return out;
}

/** `side`: serves a folder, and after 6 s (the 200 ms fallback would start the main run too early) fetches into it from its upstream through its own
 * port of the proxy. */
const SIDECAR =
  'mkdir -p /tmp/www; httpd -p 8081 -h /tmp/www; sleep 6; wget -q -O /tmp/www/got.txt.part http://10.78.0.2:18445/ && mv /tmp/www/got.txt.part /tmp/www/got.txt; exec sleep 600';
/** `web`: serves only after 6 s (the 200 ms fallback would start the main run too early). */
const LATE = 'sleep 6; mkdir -p /tmp/w; echo up > /tmp/w/index.html; exec httpd -f -p 8082 -h /tmp/w';

/** `side` of the `none` attempt: serves a folder and after 6 s fetches into it from the HTTPS upstream with its own credential (injected by its port
 * of the proxy), then says so. */
const SIDECAR_CRED = `mkdir -p /tmp/www; httpd -p 8081 -h /tmp/www; sleep 6; wget -q -O /tmp/www/got.part http://${HOST}:${UPSTREAM}/hello && mv /tmp/www/got.part /tmp/www/got.json && echo fetched-now; exec sleep 600`;

/**
 * `req REQUEST FILE [PORT]`: REQUEST sent to the proxy with busybox nc, the answer into
 * /results/FILE. nc leaves soon after its input ends, so the input stays open until nc has
 * ended (when the proxy closes): no fixed sleep (it was 4 s a request).
 */
const REQ =
  'req() { (printf "$1"; until [ -e "$r/.done-$2" ]; do sleep 0.05; done) | { nc egress-proxy ${3:-3128} > "$r/$2" 2>&1; touch "$r/.done-$2"; }; rm -f "$r/.done-$2"; }';

/** The `none` attempt's main run: what its sidecar got; its own tries at the upstream through the proxy (its port allows nothing, the sidecar's serves
 * the sidecar only). */
const NONE_MAIN = [
  'r=/results',
  'wget -Y off -q -O $r/side-got.json http://side:8081/got.json; echo $? > $r/side-got.rc',
  'env > $r/env.txt',
  REQ,
  `req 'GET http://${HOST}:${UPSTREAM}/hello HTTP/1.1\\r\\nHost: ${HOST}:${UPSTREAM}\\r\\nConnection: close\\r\\n\\r\\n' own.raw 3128 &`,
  `req 'GET http://${HOST}:${UPSTREAM}/hello HTTP/1.1\\r\\nHost: ${HOST}:${UPSTREAM}\\r\\nConnection: close\\r\\n\\r\\n' port.raw 3129 &`,
  'wait',
].join('\n');

const ATTEMPT = `
r=/results
# once each, no retry: the sidecars' probes made this run wait until they were ready (busybox wget ignores NO_PROXY: -Y off)
wget -Y off -q -O $r/side-got.txt http://side:8081/got.txt; echo $? > $r/side-got.rc
wget -Y off -q -O $r/web.txt http://web:8082/; echo $? > $r/web.rc
${REQ}
wget -q -O $r/hello.json http://${HOST}:${UPSTREAM}/hello; echo $? > $r/hello.rc
# streamed: the first event arrives while the upstream still holds the second
req 'GET http://${HOST}:${UPSTREAM}/sse HTTP/1.1\\r\\nHost: ${HOST}:${UPSTREAM}\\r\\nConnection: close\\r\\n\\r\\n' sse.raw &
i=0; until grep -q 'data: one' $r/sse.raw 2>/dev/null || [ $i -ge 150 ]; do sleep 0.1; i=$((i+1)); done
if grep -q 'data: two' $r/sse.raw; then echo buffered; elif grep -q 'data: one' $r/sse.raw; then echo streamed; else echo nothing; fi > $r/sse.order
wget -q -O $r/go.txt http://${HOST}:${UPSTREAM}/go
wait
req 'GET http://${HOST}:${UPSTREAM}/hello HTTP/1.1\\r\\nHost: ${HOST}:${UPSTREAM}\\r\\nAuthorization: Bearer mine\\r\\nConnection: close\\r\\n\\r\\n' mine.raw &
req 'CONNECT ${HOST}:${UPSTREAM} HTTP/1.1\\r\\nHost: ${HOST}:${UPSTREAM}\\r\\n\\r\\n' connect.raw &
req 'GET http://${OTHER}:${ECHO}/ HTTP/1.1\\r\\nHost: ${OTHER}:${ECHO}\\r\\nConnection: close\\r\\n\\r\\n' echo.raw &
req 'GET http://${OTHER}:${SIDE}/ HTTP/1.1\\r\\nHost: ${OTHER}:${SIDE}\\r\\nConnection: close\\r\\n\\r\\n' side-own.raw &
req 'GET http://${OTHER}:${SIDE}/ HTTP/1.1\\r\\nHost: ${OTHER}:${SIDE}\\r\\nConnection: close\\r\\n\\r\\n' side-port.raw 3129 &
wait
# looking for the key
env > $r/env.txt
cat /proc/*/environ > $r/environ.txt 2>/dev/null
ls -laR /run/secrets > $r/secrets-ls.txt 2>&1
# its own secret, printed: plain, split, across lines, base64
T=$(cat /run/secrets/token)
echo "plain $T"; printf "split %s" "\${T:0:12}"; sleep 1; printf "%s end\\n" "\${T:12}"
echo "lines \${T:0:20}"; echo "\${T:20} end"; printf %s "$T" | busybox base64; echo "stderr $T" >&2
exit 0
`;

describe('--backend swarm: credentials, a sidecar of its own way out, readiness and redaction on a real two-node swarm', function () {
  this.timeout(300_000);
  let s: TestSwarm;
  const servers: ChildProcess[] = [];
  let ca: ReturnType<typeof makeTestCa>;

  before(async () => {
    s = await twoNodeSwarm();
    ca = makeTestCa([], [HOST]);
    servers.push(await serve(s.manager.netns, UPSTREAM_JS, { KEY, TLS_KEY: ca.key, TLS_CERT: ca.cert }), await serve(s.workers[0]!.netns, PLAIN_JS, {}));
    process.env[KEY_ENV] = KEY;
    process.env[TOKEN_ENV] = TOKEN;
  });

  after(async () => {
    delete process.env[KEY_ENV];
    delete process.env[TOKEN_ENV];
    for (const p of servers) {
      if (p.exitCode !== null || p.signalCode !== null) continue;
      const gone = new Promise<void>((resolve) => p.once('exit', () => resolve()));
      p.kill('SIGTERM');
      await gone;
    }
  });

  it("an attempt on the worker gets its upstream's answers with the key injected, its sidecars their own way out (the attempt 403 for the same host), probes tcp, command and log wait or fail, the key and its own secret are in nothing berth wrote", async () => {
    const sb = await Sandbox.create('sw-cred');
    const worker = s.workers[0]!;
    await s.availability(s.manager, 'drain');
    try {
      await sb.write('ca.pem', ca.ca);
      await sb.write(
        'cred.yaml',
        sb.attempt(
          'cred',
          ATTEMPT,
          [
            '  secrets:',
            `    - {name: api-key, fromEnv: ${KEY_ENV}}`,
            '    - {name: upstream-ca, fromFile: ./ca.pem}',
            `    - {name: token, fromEnv: ${TOKEN_ENV}}`,
            '  network:',
            '    mode: isolated',
            `    egress: ["${OTHER}:${ECHO}"]`,
            '    credentials:',
            `      - {host: '${HOST}:${UPSTREAM}', secret: api-key, caSecret: upstream-ca}`,
            '  sidecars:',
            '    - name: side',
            '      image: berth/busybox:local',
            `      command: [sh, -c, ${JSON.stringify(SIDECAR)}]`,
            `      egress: ["${OTHER}:${SIDE}"]`,
            '      ready: {command: [test, -f, /tmp/www/got.txt], deadlineSeconds: 60}',
            '    - name: web',
            '      image: berth/busybox:local',
            `      command: [sh, -c, ${JSON.stringify(LATE)}]`,
            '      ready: {tcp: 8082, deadlineSeconds: 60}',
            '',
          ].join('\n'),
        ),
      );
      // probes that never pass: the sidecar is refused, the main run never made
      const failing = (name: string, ready: string) =>
        sb.attempt(
          name,
          'exit 0',
          [
            '  network: {mode: isolated}',
            '  sidecars:',
            '    - name: web',
            '      image: berth/busybox:local',
            `      command: [sh, -c, ${JSON.stringify(LATE)}]`,
            ready,
            '',
          ].join('\n'),
        );
      await sb.write('ftcp.yaml', failing('ftcp', '      ready: {tcp: 9, deadlineSeconds: 10}'));
      await sb.write('fcmd.yaml', failing('fcmd', '      ready: {command: [test, -f, /nowhere], deadlineSeconds: 3}'));
      // network none with a sidecar that has a credential of its own: its own internal network, no way out for the main run
      await sb.write(
        'cnone.yaml',
        sb.attempt(
          'cnone',
          NONE_MAIN,
          [
            '  secrets:',
            `    - {name: api-key, fromEnv: ${KEY_ENV}}`,
            '    - {name: upstream-ca, fromFile: ./ca.pem}',
            '  network: {mode: none}',
            '  sidecars:',
            '    - name: side',
            '      image: berth/busybox:local',
            `      command: [sh, -c, ${JSON.stringify(SIDECAR_CRED)}]`,
            `      credentials: [{host: '${HOST}:${UPSTREAM}', secret: api-key, caSecret: upstream-ca}]`,
            "      ready: {log: 'fetched-now', deadlineSeconds: 60}",
            '',
          ].join('\n'),
        ),
      );
      const r = await swarmCli(sb, s, 'reconcile', '--once', '--wait', '--timeout', '200');
      expect(r.code, r.stdout + r.stderr).to.equal(5);
      const ftcp = await sb.status('ftcp');
      expect([ftcp?.phase, ftcp?.reason]).to.deep.equal(['Failed', 'SidecarFailed']);
      expect(ftcp?.message, ftcp?.message).to.match(/web.* port 9 did not accept within 10 s \(ECONNREFUSED\)/);
      const fcmd = await sb.status('fcmd');
      expect([fcmd?.phase, fcmd?.reason]).to.deep.equal(['Failed', 'SidecarFailed']);
      expect(fcmd?.message, fcmd?.message).to.match(/web.* its ready command did not exit 0 within 3 s \(last: exit code 1\)/);
      for (const f of [ftcp, fcmd]) expect(f?.containerId, `${f?.name}: no main run for a sidecar not ready`).to.equal(undefined);

      const st = await sb.status('cred');
      expect([st?.phase, st?.exitCode], r.stderr + JSON.stringify(st)).to.deep.equal(['Succeeded', 0]);
      expect(st?.containerId, 'the run was on the worker').to.match(new RegExp(`@${worker.id}$`));
      expect(r.stdout + r.stderr).to.not.include(KEY);
      const run = path.dirname(st!.resultsDir!);
      const res = (f: string) => fs.readFile(path.join(st!.resultsDir!, f), 'utf8');

      // its upstream's answers, the key injected by the proxy (the upstream answers 401 without it)
      expect((await res('hello.rc')).trim()).to.equal('0');
      expect(JSON.parse(await res('hello.json'))).to.deep.equal({ hello: 'world', host: `${HOST}:${UPSTREAM}` });
      expect((await res('sse.order')).trim(), 'the first event came before the upstream sent the second').to.equal('streamed');
      expect(await res('sse.raw'))
        .to.match(/^HTTP\/1\.1 200/)
        .and.include('data: one')
        .and.include('data: two');
      expect(await res('go.txt')).to.equal('went\n');
      expect(await res('mine.raw'), 'the header it sent itself was replaced').to.match(/^HTTP\/1\.1 200/);
      expect(await res('connect.raw'))
        .to.match(/^HTTP\/1\.1 403/)
        .and.include(`${HOST} has a credential the proxy adds`);
      const echo = await res('echo.raw');
      expect(echo, `another allowed host: ${echo}`).to.match(/^HTTP\/1\.1 200/);
      expect(echo.toLowerCase()).to.not.include('authorization');

      // the sidecar's own way out: it got its upstream's answer; the attempt, asking for the same host, 403
      expect((await res('side-got.rc')).trim(), 'what side fetched, read once').to.equal('0');
      expect(await res('side-got.txt')).to.equal('side-body');
      expect(await res('side-own.raw'))
        .to.match(/^HTTP\/1\.1 403/)
        .and.include(`${OTHER}:${SIDE} is not in the egress allowlist`);
      expect(await res('side-port.raw'))
        .to.match(/^HTTP\/1\.1 403/)
        .and.include('serves sidecar side only');
      // web's tcp probe made the run wait for it
      expect((await res('web.rc')).trim(), "web's port, read once").to.equal('0');
      expect(await res('web.txt')).to.equal('up\n');

      // the key went to the proxy only
      expect(await res('secrets-ls.txt')).to.not.include('api-key');
      expect(await res('env.txt')).to.include('HTTP_PROXY=');
      const lines = (await fs.readFile(path.join(run, 'egress.jsonl'), 'utf8'))
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { event: string; target?: string; status?: number; reason?: string; sidecar?: string });
      const decided = lines.filter((l) => l.event === 'decision');
      expect(
        decided.filter((l) => l.target === `${HOST}:${UPSTREAM}` && l.status === 200 && l.reason === 'forwarded with its credential').length,
      ).to.be.at.least(4);
      expect(decided.some((l) => l.sidecar === 'side' && l.target === `${OTHER}:${SIDE}` && l.status === 200)).to.equal(true);
      expect(decided.some((l) => l.sidecar === undefined && l.target === `${OTHER}:${SIDE}` && l.status === 403)).to.equal(true);

      // no file berth wrote for the run holds the key, nor the attempt's own secret in any form
      // but the results the attempt wrote itself (left as it wrote them; none holds either here)
      const files = await allFiles(run);
      expect(files.map((f) => path.relative(run, f.file))).to.include.members(['egress.jsonl', 'logs.txt', 'status.json', 'results/environ.txt']);
      const logs = await fs.readFile(path.join(run, 'logs.txt'), 'utf8');
      expect(logs, 'the attempt printed its secret (redacted)').to.include('plain ');
      for (const f of [...files, ...(await allFiles(sb.stateDir))])
        for (const n of [KEY, ...needles(TOKEN)])
          expect(f.text.includes(n), `${f.file} holds ${n === KEY ? 'the key' : 'a piece of the token'}`).to.equal(false);

      // network none: the sidecar got its upstream's answer with its own credential; the main run has no way out
      const none = await sb.status('cnone');
      expect([none?.phase, none?.exitCode], JSON.stringify(none)).to.deep.equal(['Succeeded', 0]);
      expect(none?.containerId, 'the run was on the worker').to.match(new RegExp(`@${worker.id}$`));
      const nres = (f: string) => fs.readFile(path.join(none!.resultsDir!, f), 'utf8');
      expect((await nres('side-got.rc')).trim()).to.equal('0');
      expect(JSON.parse(await nres('side-got.json'))).to.deep.equal({ hello: 'world', host: `${HOST}:${UPSTREAM}` });
      expect(await nres('own.raw'))
        .to.match(/^HTTP\/1\.1 403/)
        .and.include(`${HOST}:${UPSTREAM} is not in the egress allowlist`);
      expect(await nres('port.raw'))
        .to.match(/^HTTP\/1\.1 403/)
        .and.include('serves sidecar side only');
      expect(await nres('env.txt')).to.not.match(/_proxy=/i);
      for (const f of await allFiles(path.dirname(none!.resultsDir!))) expect(f.text.includes(KEY), f.file).to.equal(false);
    } finally {
      await s.availability(s.manager, 'active');
      const c = await swarmCli(sb, s, 'clean');
      expect(c.code, c.stderr).to.equal(0);
      await sb.dispose();
    }
    await nothingLeftOnSwarm(s, sb.instance);
  });
});

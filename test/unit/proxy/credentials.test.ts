/**
 * Injected credentials, in process: an HTTPS origin with a CA of the test's own that answers only
 * with the right header; the client speaks plain HTTP through the proxy and never sends or sees
 * the value. Streams pass chunk by chunk, redirects come back unfollowed, CONNECT to the host is
 * refused, an upstream the CA does not vouch for is refused, and no log line holds the value.
 */
import { expect } from 'chai';
import http from 'node:http';
import https from 'node:https';
import type net from 'node:net';
import { loadConfig } from '../../../src/proxy/config';
import { parseAllowlist } from '../../../src/proxy/allowlist';
import { type Credential, parseCredentials } from '../../../src/proxy/credentials';
import { Exchanges } from '../../../src/proxy/exchange';
import { createProxyServer, type ProxyServer } from '../../../src/proxy/server';
import { SourceGate } from '../../../src/proxy/source-gate';
import { makeTestCa, type TestCa } from '../../support/tls-ca';
import { closeServer, connectTunnel, LineLog, listen, proxyRequest, rawExchange } from './harness';

const SECRET = 'sk-test-5d8c1f0e9a';
const toLocal: net.LookupFunction = (_host, opts, cb) => {
  if (opts.all) cb(null, [{ address: '127.0.0.1', family: 4 }]);
  else cb(null, '127.0.0.1', 4);
};

describe('proxy/credentials (in process)', function () {
  let ca: TestCa;
  let origin: https.Server;
  let port: number;
  /** The next SSE event is sent when this is called. */
  let sendSecond: (() => void) | undefined;
  const seen: http.IncomingHttpHeaders[] = [];

  before(async () => {
    ca = makeTestCa(['api.test'], ['127.0.0.1']);
    origin = https.createServer({ key: ca.key, cert: ca.cert }, (req, res) => {
      seen.push(req.headers);
      if (req.headers.authorization !== `Bearer ${SECRET}`) {
        res.writeHead(401, { 'content-type': 'text/plain' }).end('no key\n');
        return;
      }
      if (req.url === '/sse') {
        res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
        res.write('data: one\n\n');
        sendSecond = () => res.end('data: two\n\n');
        return;
      }
      if (req.url === '/redirect') {
        res.writeHead(302, { location: 'http://127.0.0.1:1/elsewhere' }).end();
        return;
      }
      const body: Buffer[] = [];
      req.on('data', (c: Buffer) => body.push(c));
      req.on('end', () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ method: req.method, url: req.url, host: req.headers.host, body: Buffer.concat(body).toString() }));
      });
    });
    port = await listen(origin);
  });
  after(async () => {
    await closeServer(origin);
  });

  async function start(creds: Credential[], allow = ''): Promise<{ port: number; log: LineLog; proxy: ProxyServer }> {
    const parsed = parseAllowlist(allow);
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    const log = new LineLog();
    const proxy = createProxyServer({ allowlist: parsed.value, credentials: creds, connectTimeoutMs: 5000, sink: log.sink, lookup: toLocal });
    return { port: await proxy.listen(0, '127.0.0.1'), log, proxy };
  }
  function credential(over: Partial<{ target: string; header: string; value: string; ca: string | undefined }> = {}): Credential[] {
    const raw = { target: `api.test:${port}`, header: 'Authorization', value: `Bearer ${SECRET}`, ca: ca.ca, ...over };
    const parsed = parseCredentials(JSON.stringify([raw]), 'CREDS');
    if (!parsed.ok) throw new Error(parsed.errors.join('; '));
    return parsed.value;
  }

  it('sends a plain-HTTP request on over TLS with the header set, replacing the one the client sent', async () => {
    const p = await start(credential());
    try {
      const r = await proxyRequest(p.port, 'http://api.test/v1/models?x=1', { method: 'POST', headers: { Authorization: 'Bearer mine' }, body: 'hello' });
      expect(r.status).to.equal(200);
      expect(JSON.parse(r.body)).to.deep.equal({ method: 'POST', url: '/v1/models?x=1', host: `api.test:${port}`, body: 'hello' });
      expect(seen.at(-1)?.authorization).to.equal(`Bearer ${SECRET}`);
      // the TLS port named explicitly is the same upstream
      expect((await proxyRequest(p.port, `http://api.test:${port}/x`)).status).to.equal(200);
      const line = await p.log.waitFor((l) => l.event === 'decision' && l.status === 200);
      expect(line).to.deep.include({ target: `api.test:${port}`, allowed: true, reason: 'forwarded with its credential' });
      await p.log.waitFor((l) => l.event === 'close');
      expect(p.log.lines.join('\n')).to.not.include(SECRET);
    } finally {
      await p.proxy.close();
    }
  });

  it('streams a server-sent event before the upstream sends the next', async () => {
    const p = await start(credential());
    try {
      const got = await new Promise<string>((resolve, reject) => {
        const req = http.request({ host: '127.0.0.1', port: p.port, path: 'http://api.test/sse', headers: { Host: 'api.test' }, agent: false });
        req.on('error', reject);
        req.on('response', (res) => {
          let soFar = '';
          res.on('data', (c: Buffer) => {
            soFar += c.toString();
            // the first event arrived while the upstream still holds the second
            if (soFar === 'data: one\n\n') sendSecond?.();
          });
          res.on('end', () => resolve(soFar));
        });
        req.end();
      });
      expect(got).to.equal('data: one\n\ndata: two\n\n');
    } finally {
      await p.proxy.close();
    }
  });

  it('passes a redirect back to the client, never following it', async () => {
    const p = await start(credential());
    try {
      const r = await proxyRequest(p.port, 'http://api.test/redirect');
      expect(r.status).to.equal(302);
      expect(r.headers.location).to.equal('http://127.0.0.1:1/elsewhere');
      expect(p.log.records().filter((l) => l.event === 'decision')).to.have.length(1);
    } finally {
      await p.proxy.close();
    }
  });

  it('refuses CONNECT to a credentialed host with 403 saying why, even when the allowlist names it', async () => {
    const p = await start(credential(), `api.test:${port},*.test:${port}`);
    try {
      const r = await connectTunnel(p.port, `api.test:${port}`);
      expect(r.status).to.equal(403);
      expect(r.body).to.match(/api\.test has a credential the proxy adds: send plain http:\/\/api\.test\/ requests/);
      expect(r.body).to.not.include(SECRET);
    } finally {
      await p.proxy.close();
    }
  });

  it('refuses the credentialed host on another port (403) and another host without an allowlist entry', async () => {
    const p = await start(credential());
    try {
      const other = await proxyRequest(p.port, 'http://api.test:8080/');
      expect(other.status).to.equal(403);
      expect(other.body).to.include('is reached only as http://api.test/');
      expect((await proxyRequest(p.port, 'http://other.test/')).status).to.equal(403);
      expect(other.body + JSON.stringify(other.headers)).to.not.include(SECRET);
    } finally {
      await p.proxy.close();
    }
  });

  it('refuses an upstream its CA does not vouch for (502, the TLS error named), sending nothing', async () => {
    const before = seen.length;
    const p = await start(credential({ ca: undefined }));
    try {
      const r = await proxyRequest(p.port, 'http://api.test/');
      expect(r.status).to.equal(502);
      expect(r.body).to.match(
        /^berth egress proxy: TLS to api\.test:\d+ failed \((UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY)\)/,
      );
      expect(r.body).to.not.include(SECRET);
      expect(seen.length).to.equal(before);
      expect(p.log.lines.join('\n')).to.not.include(SECRET);
    } finally {
      await p.proxy.close();
    }
  });

  it('checks the host name: a certificate for another name is refused', async () => {
    const p = await start(credential({ target: `other.test:${port}` }));
    try {
      const r = await proxyRequest(p.port, 'http://other.test/');
      expect(r.status).to.equal(502);
      expect(r.body).to.include('ERR_TLS_CERT_ALTNAME_INVALID');
    } finally {
      await p.proxy.close();
    }
  });

  it('the raw response head the client gets holds no credential', async () => {
    const p = await start(credential());
    try {
      const raw = await rawExchange(p.port, 'GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n');
      expect(raw).to.match(/^HTTP\/1\.1 200/);
      expect(raw).to.not.include(SECRET);
    } finally {
      await p.proxy.close();
    }
  });

  describe('configuration', () => {
    it('reads BERTH_PROXY_CREDENTIALS beside the allowlist', () => {
      const c = loadConfig({ BERTH_EGRESS_ALLOW: '', BERTH_PROXY_CREDENTIALS: JSON.stringify([{ target: 'API.test:443', header: 'X-Key', value: SECRET }]) });
      expect(c.ok).to.equal(true);
      if (!c.ok) return;
      expect(c.value.credentials.map((x) => [x.target.text, x.header])).to.deep.equal([['api.test:443', 'x-key']]);
    });

    it('reports bad entries without ever quoting a value', () => {
      const bad = [
        { target: '*.test:443', header: 'A', value: SECRET },
        { target: 'a.test', header: 'A', value: SECRET },
        { target: 'b.test:443', header: 'Bad Header', value: SECRET },
        { target: 'c.test:443', header: 'A', value: `${SECRET}\r\nX: y` },
        { target: 'd.test:443', header: 'A', value: SECRET, ca: SECRET },
        { target: 'e.test:443', header: 'A', value: SECRET },
        { target: 'e.test:8443', header: 'A', value: SECRET },
      ];
      const c = loadConfig({ BERTH_EGRESS_ALLOW: '', BERTH_PROXY_CREDENTIALS: JSON.stringify(bad) });
      expect(c.ok).to.equal(false);
      if (c.ok) return;
      expect(c.errors).to.have.length(6);
      expect(c.errors.join('\n')).to.not.include(SECRET);
      expect(loadConfig({ BERTH_EGRESS_ALLOW: '', BERTH_PROXY_CREDENTIALS: `[${SECRET}` })).to.deep.equal({
        ok: false,
        errors: ['BERTH_PROXY_CREDENTIALS: not valid JSON'],
      });
    });
  });
});

describe("proxy: a sidecar's own listener (in process)", function () {
  let origin: http.Server;
  let originPort: number;

  before(async () => {
    origin = http.createServer((_req, res) => res.end('origin-body'));
    originPort = await listen(origin);
  });
  after(async () => {
    await closeServer(origin);
  });

  /** A plain-HTTP proxy request from `from` (a loopback address). */
  function from(local: string, port: number, url: string): Promise<{ status: number; body: string }> {
    return new Promise((resolve, reject) => {
      const req = http.request({ host: '127.0.0.1', port, localAddress: local, path: url, headers: { Host: new URL(url).host }, agent: false });
      req.on('error', reject);
      req.on('response', (res) => {
        let body = '';
        res.on('data', (c: Buffer) => (body += c.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      });
      req.end();
    });
  }

  it("serves its sidecar's allowlist to its sidecar only; the attempt's listener refuses the same host", async () => {
    const log = new LineLog();
    const exchanges = new Exchanges(log.sink);
    const main = createProxyServer({ allowlist: { entries: [] }, connectTimeoutMs: 5000, sink: log.sink, exchanges });
    const allow = parseAllowlist(`127.0.0.1:${originPort}`);
    if (!allow.ok) throw new Error('allowlist');
    const side = createProxyServer({
      allowlist: allow.value,
      connectTimeoutMs: 5000,
      sink: log.sink,
      exchanges,
      sidecar: { name: 'mcp', gate: new SourceGate('sidecar.test', async () => ['127.0.0.2']) },
    });
    const mainPort = await main.listen(0, '127.0.0.1');
    const sidePort = await side.listen(0, '127.0.0.1');
    try {
      const url = `http://127.0.0.1:${originPort}/`;
      expect(await from('127.0.0.2', sidePort, url)).to.deep.equal({ status: 200, body: 'origin-body' });
      const stranger = await from('127.0.0.1', sidePort, url);
      expect(stranger.status).to.equal(403);
      expect(stranger.body).to.equal('berth egress proxy: this port of the proxy serves sidecar mcp only\n');
      const attempt = await from('127.0.0.1', mainPort, url);
      expect(attempt.status).to.equal(403);
      expect(attempt.body).to.include('is not in the egress allowlist');
      const tunnel = await connectTunnel(sidePort, `127.0.0.1:${originPort}`);
      expect(tunnel.status).to.equal(403);
      await log.waitFor((l) => l.event === 'close');
      const decided = log.records().filter((l) => l.event === 'decision');
      expect(decided.map((l) => [l.id, (l as { sidecar?: string }).sidecar ?? '-', l.status])).to.deep.equal([
        [1, 'mcp', 200],
        [2, 'mcp', 403],
        [3, '-', 403],
        [4, 'mcp', 403],
      ]);
    } finally {
      await side.close();
      await main.close();
    }
  });

  it('looks the name up again when a peer does not match (the sidecar made again)', async () => {
    let answer = ['10.0.0.5'];
    let lookups = 0;
    const gate = new SourceGate('sidecar.test', async () => {
      lookups++;
      return answer;
    });
    expect(await gate.allows('10.0.0.5')).to.equal(true);
    expect(await gate.allows('::ffff:10.0.0.5')).to.equal(true);
    expect(lookups).to.equal(1);
    answer = ['10.0.0.9'];
    expect(await gate.allows('10.0.0.9')).to.equal(true);
    expect(await gate.allows('10.0.0.5')).to.equal(false);
    expect(await gate.allows(undefined)).to.equal(false);
    expect(await new SourceGate('sidecar.test', () => Promise.reject(new Error('no'))).allows('10.0.0.5')).to.equal(false);
  });

  it('reads BERTH_PROXY_SIDECARS: listeners with their own allowlist and credentials, one port each', () => {
    const c = loadConfig({
      BERTH_EGRESS_ALLOW: 'a.test:443',
      BERTH_PROXY_SIDECARS: JSON.stringify([
        {
          name: 'mcp',
          port: 3129,
          source: 'berth_i_a_mcp',
          allow: ['mcp.test:443'],
          credentials: [{ target: 'api.test:443', header: 'X-Key', value: SECRET }],
        },
      ]),
    });
    expect(c.ok).to.equal(true);
    if (!c.ok) return;
    expect(
      c.value.sidecars.map((s) => [s.name, s.port, s.source, s.allowlist.entries.map((e) => e.text), s.credentials.map((x) => x.target.text)]),
    ).to.deep.equal([['mcp', 3129, 'berth_i_a_mcp', ['mcp.test:443'], ['api.test:443']]]);
    const bad = loadConfig({
      BERTH_EGRESS_ALLOW: '',
      BERTH_PROXY_SIDECARS: JSON.stringify([
        { name: 'a', port: 3128, source: 's', allow: [], credentials: [] },
        { name: 'b', port: 3130, source: 's', allow: ['nope'], credentials: [] },
        { name: 'c', port: 3131, source: 's', allow: [], credentials: [{ target: 'x.test:443', header: 'A', value: `${SECRET}\n` }] },
      ]),
    });
    expect(bad.ok).to.equal(false);
    if (bad.ok) return;
    expect(bad.errors.join('\n')).to.include('(b): entry 1 "nope": missing :port').and.include('(c) credentials: entry 1: value').and.not.include(SECRET);
  });
});

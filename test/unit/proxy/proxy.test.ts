/**
 * The proxy in process, on 127.0.0.1 with ephemeral ports, against local origin servers:
 * forwarding with streaming bodies, refusals (400/403), upstream failures (502/504), CONNECT
 * tunnels, shutdown, and the decision log (parseable, no header values, no paths).
 * Every wait is on an event: a response, a log line, a socket closing.
 */
import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import { closeServer, connectTunnel, deadPort, listen, proxyRequest, rawExchange, readUntil, type RunningProxy, startProxy } from './harness';

/** Origin: answers `origin <method> <url>` plus what it received, and records requests. */
function makeOrigin(): { server: http.Server; seen: http.IncomingMessage[] } {
  const seen: http.IncomingMessage[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req);
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      res.setHeader('X-Origin', 'yes');
      res.end(`origin ${req.method} ${req.url} ${Buffer.concat(chunks).toString()}`);
    });
  });
  return { server, seen };
}

describe('proxy/server (in process)', function () {
  let origin: ReturnType<typeof makeOrigin>;
  let originPort: number;
  let other: ReturnType<typeof makeOrigin>;
  let otherPort: number;
  let echo: net.Server;
  let echoPort: number;
  let p: RunningProxy;

  before(async () => {
    origin = makeOrigin();
    originPort = await listen(origin.server);
    other = makeOrigin();
    otherPort = await listen(other.server);
    // A TCP echo server for tunnels: echoes, and ends when the client ends.
    echo = net.createServer({ allowHalfOpen: true }, (s) => {
      s.on('error', () => s.destroy());
      s.pipe(s);
    });
    echoPort = await listen(echo);
  });

  after(async () => {
    await Promise.all([closeServer(origin.server), closeServer(other.server), closeServer(echo)]);
  });

  beforeEach(async () => {
    origin.seen.length = 0;
    other.seen.length = 0;
    p = await startProxy(`127.0.0.1:${originPort}, localhost:${originPort}, 127.0.0.1:${echoPort}`);
  });

  afterEach(async () => {
    await p.proxy.close();
  });

  describe('plain HTTP', () => {
    it('forwards an allowed request and its response, Host set from the URI', async () => {
      const url = `http://127.0.0.1:${originPort}/hello?x=1`;
      const reply = await proxyRequest(p.port, url);
      expect(reply.status).to.equal(200);
      expect(reply.body).to.equal('origin GET /hello?x=1 ');
      expect(reply.headers['x-origin']).to.equal('yes');
      expect(origin.seen[0]?.headers.host).to.equal(`127.0.0.1:${originPort}`);
      const d = await p.log.waitEvent('decision', `127.0.0.1:${originPort}`);
      expect(d).to.include({ method: 'GET', allowed: true, status: 200 });
      const c = await p.log.waitEvent('close', `127.0.0.1:${originPort}`);
      expect(c).to.include({ id: d.id, allowed: true, status: 200, reason: 'response complete', bytesUp: 0 });
      expect(c.bytesDown).to.equal(Buffer.byteLength(reply.body));
    });

    it('allows by host name too (localhost entry), case and trailing dot ignored', async () => {
      const reply = await proxyRequest(p.port, `http://LocalHost.:${originPort}/n`);
      expect(reply.status).to.equal(200);
      expect(reply.body).to.equal('origin GET /n ');
      expect((await p.log.waitEvent('decision', `localhost:${originPort}`)).allowed).to.equal(true);
    });

    it('forwards an HTTP/1.1 request without a Host header, setting Host from the URI', async () => {
      const reply = await rawExchange(p.port, `GET http://127.0.0.1:${originPort}/nohost HTTP/1.1\r\nConnection: close\r\n\r\n`);
      expect(reply).to.match(/^HTTP\/1\.1 200 OK\r\n/);
      expect(reply).to.match(/origin GET \/nohost $/);
      expect(origin.seen[0]?.headers.host).to.equal(`127.0.0.1:${originPort}`);
    });

    it('strips hop-by-hop headers and Proxy-Authorization, keeps end-to-end ones', async () => {
      await proxyRequest(p.port, `http://127.0.0.1:${originPort}/h`, {
        headers: {
          'Proxy-Authorization': 'Basic cHJveHk6cGFzcw==',
          Connection: 'X-Hop',
          'X-Hop': 'gone',
          'Keep-Alive': 'timeout=5',
          'Proxy-Connection': 'keep-alive',
          Authorization: 'Bearer end-to-end',
          'X-Kept': 'kept',
        },
      });
      const h = origin.seen[0]?.headers ?? {};
      expect(h).to.not.have.any.keys('proxy-authorization', 'x-hop', 'keep-alive', 'proxy-connection');
      expect(h).to.include({ authorization: 'Bearer end-to-end', 'x-kept': 'kept', connection: 'close' });
    });

    it('streams request and response bodies both ways, chunk by chunk, and counts the bytes', async () => {
      // The origin answers each request chunk as it arrives; the client sends the next chunk
      // only after it has read the answer to the previous one. Buffering anywhere would deadlock.
      const duplex = http.createServer((req, res) => {
        res.writeHead(200, { 'Content-Type': 'text/plain' });
        req.on('data', (c: Buffer) => res.write(`ack:${c.toString()};`));
        req.on('end', () => res.end('done'));
      });
      const duplexPort = await listen(duplex);
      const q = await startProxy(`127.0.0.1:${duplexPort}`);
      try {
        const body = await new Promise<string>((resolve, reject) => {
          const req = http.request({
            host: '127.0.0.1',
            port: q.port,
            method: 'POST',
            path: `http://127.0.0.1:${duplexPort}/up`,
            headers: { Host: `127.0.0.1:${duplexPort}`, 'Transfer-Encoding': 'chunked' },
            agent: false,
          });
          req.on('error', reject);
          req.flushHeaders();
          req.write('one');
          req.on('response', (res) => {
            let got = '';
            res.on('data', (c: Buffer) => {
              got += c.toString();
              if (got === 'ack:one;') req.write('two');
              else if (got === 'ack:one;ack:two;') req.end();
            });
            res.on('end', () => resolve(got));
          });
        });
        expect(body).to.equal('ack:one;ack:two;done');
        const c = await q.log.waitEvent('close', `127.0.0.1:${duplexPort}`);
        expect(c).to.include({ method: 'POST', status: 200, bytesUp: 6, bytesDown: body.length });
      } finally {
        await q.proxy.close();
        await closeServer(duplex);
      }
    });

    it('forwards a body with Content-Length unchanged', async () => {
      const reply = await proxyRequest(p.port, `http://127.0.0.1:${originPort}/put`, { method: 'PUT', body: 'payload' });
      expect(reply.body).to.equal('origin PUT /put payload');
      expect(origin.seen[0]?.headers['content-length']).to.equal('7');
    });

    it('denies a target that is not in the allowlist with 403 naming it', async () => {
      const reply = await proxyRequest(p.port, `http://127.0.0.1:${otherPort}/`);
      expect(reply.status).to.equal(403);
      expect(reply.body).to.equal(`berth egress proxy: 127.0.0.1:${otherPort} is not in the egress allowlist\n`);
      expect(other.seen).to.have.length(0);
      const d = await p.log.waitEvent('decision', `127.0.0.1:${otherPort}`);
      expect(d).to.include({ allowed: false, status: 403, bytesUp: 0, bytesDown: 0 });
    });

    it('denies a listed host on another port, and a name the listed address answers for', async () => {
      // 127.0.0.1 is listed, but with other ports than otherPort.
      expect((await proxyRequest(p.port, `http://127.0.0.1:${otherPort}/`)).status).to.equal(403);
      const q = await startProxy(`localhost:${otherPort}`);
      try {
        expect((await proxyRequest(q.port, `http://127.0.0.1:${otherPort}/`)).status).to.equal(403);
      } finally {
        await q.proxy.close();
      }
      expect(other.seen).to.have.length(0);
    });

    it('refuses a Host header that disagrees with the URI (400), deciding on the URI', async () => {
      const reply = await proxyRequest(p.port, `http://127.0.0.1:${originPort}/`, { headers: { Host: `127.0.0.1:${otherPort}` } });
      expect(reply.status).to.equal(400);
      expect(reply.body).to.match(/Host header disagrees/);
      expect(origin.seen).to.have.length(0);
      expect(other.seen).to.have.length(0);
    });

    it('refuses origin-form requests with 400', async () => {
      const reply = await rawExchange(p.port, 'GET /index.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n');
      expect(reply).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(reply).to.match(/origin-form request/);
      const d = await p.log.waitFor((r) => r.event === 'decision' && r.status === 400);
      expect(d).to.include({ method: 'GET', target: '', allowed: false });
    });

    it('refuses userinfo in the URI with 400', async () => {
      const reply = await proxyRequest(p.port, `http://127.0.0.1:${originPort}/`.replace('//', '//user@'), {
        headers: { Host: `127.0.0.1:${originPort}` },
      });
      expect(reply.status).to.equal(400);
      expect(reply.body).to.match(/userinfo/);
      expect(origin.seen).to.have.length(0);
    });

    it('refuses plain-HTTP protocol upgrades: 501 (use CONNECT) when allowed, 403 when not', async () => {
      const upgrade = (port: number): string =>
        `GET http://127.0.0.1:${port}/ws HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`;
      expect(await rawExchange(p.port, upgrade(originPort))).to.match(/^HTTP\/1\.1 501 Not Implemented\r\n[\s\S]*use CONNECT/);
      expect(await rawExchange(p.port, upgrade(otherPort))).to.match(/^HTTP\/1\.1 403 Forbidden\r\n/);
      expect(origin.seen).to.have.length(0);
      const d = await p.log.waitFor((r) => r.status === 501);
      expect(d).to.include({ method: 'GET', target: `127.0.0.1:${originPort}`, allowed: false });
    });

    it('answers 400 to what the HTTP parser cannot read', async () => {
      const reply = await rawExchange(p.port, 'NOT HTTP AT ALL\r\n\r\n');
      expect(reply).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
      await p.log.waitFor((r) => r.reason === 'malformed HTTP request' && r.status === 400);
    });
  });

  describe('upstream failures', () => {
    it('answers 502 when the target refuses the connection', async () => {
      const port = await deadPort();
      const q = await startProxy(`127.0.0.1:${port}`);
      try {
        const reply = await proxyRequest(q.port, `http://127.0.0.1:${port}/`);
        expect(reply.status).to.equal(502);
        expect(reply.body).to.equal(`berth egress proxy: connection refused by 127.0.0.1:${port}\n`);
        const tunnel = await connectTunnel(q.port, `127.0.0.1:${port}`);
        expect(tunnel.status).to.equal(502);
        const d = await q.log.waitFor((r) => r.event === 'decision' && r.method === 'CONNECT');
        expect(d).to.include({ allowed: true, status: 502 });
        const c = await q.log.waitFor((r) => r.event === 'close' && r.method === 'CONNECT');
        expect(c).to.include({ id: d.id, status: 502, bytesUp: 0, bytesDown: 0 });
      } finally {
        await q.proxy.close();
      }
    });

    it('answers 502 naming DNS when the name does not resolve', async () => {
      const notFound: net.LookupFunction = (hostname, _opts, cb) => {
        const err = Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
        (cb as (e: Error) => void)(err);
      };
      const q = await startProxy('nowhere.invalid:80', { lookup: notFound });
      try {
        const reply = await proxyRequest(q.port, 'http://nowhere.invalid/');
        expect(reply.status).to.equal(502);
        expect(reply.body).to.match(/DNS lookup failed for nowhere\.invalid:80 \(ENOTFOUND\)/);
      } finally {
        await q.proxy.close();
      }
    });

    it('answers 504 when connecting takes longer than the connect timeout', async () => {
      const never: net.LookupFunction = () => undefined;
      const q = await startProxy('slow.example:443,slow.example:80', { lookup: never, connectTimeoutMs: 30 });
      try {
        const tunnel = await connectTunnel(q.port, 'slow.example:443');
        expect(tunnel.status).to.equal(504);
        expect(tunnel.body).to.match(/connect to slow\.example:443 timed out after 30 ms/);
        const reply = await proxyRequest(q.port, 'http://slow.example/');
        expect(reply.status).to.equal(504);
      } finally {
        await q.proxy.close();
      }
    });
  });

  describe('CONNECT', () => {
    it('tunnels bytes both ways, half-close aware, and logs the byte counts', async () => {
      const t = await connectTunnel(p.port, `127.0.0.1:${echoPort}`);
      expect(t.status).to.equal(200);
      const s = t.socket as net.Socket;
      s.write('ping');
      expect(await readUntil(s, (x) => x === 'ping')).to.equal('ping');
      s.write('-pong');
      const rest = new Promise<string>((resolve) => {
        let got = '';
        s.on('data', (c: Buffer) => (got += c.toString()));
        s.on('end', () => resolve(got));
      });
      s.end();
      expect(await rest).to.equal('-pong');
      const d = await p.log.waitEvent('decision', `127.0.0.1:${echoPort}`);
      expect(d).to.include({ method: 'CONNECT', allowed: true, status: 200, reason: 'tunnel established' });
      const c = await p.log.waitEvent('close', `127.0.0.1:${echoPort}`);
      expect(c).to.include({ id: d.id, reason: 'tunnel closed', bytesUp: 9, bytesDown: 9 });
    });

    it('tears down both sides when the upstream resets the connection', async () => {
      const resetter = net.createServer((s) => s.once('data', () => s.resetAndDestroy()));
      const resetPort = await listen(resetter);
      const q = await startProxy(`127.0.0.1:${resetPort}`);
      try {
        const t = await connectTunnel(q.port, `127.0.0.1:${resetPort}`);
        const s = t.socket as net.Socket;
        s.on('error', () => undefined);
        const gone = new Promise<void>((resolve) => s.once('close', () => resolve()));
        s.write('boom');
        await gone;
        const c = await q.log.waitEvent('close', `127.0.0.1:${resetPort}`);
        expect(c).to.include({ reason: 'tunnel reset', bytesUp: 4, bytesDown: 0 });
      } finally {
        await q.proxy.close();
        await closeServer(resetter);
      }
    });

    it('carries HTTP through a tunnel (as HTTPS clients do)', async () => {
      const t = await connectTunnel(p.port, `localhost:${originPort}`);
      expect(t.status).to.equal(200);
      const s = t.socket as net.Socket;
      s.write(`GET /via-tunnel HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
      const text = await readUntil(s, (x) => x.endsWith('origin GET /via-tunnel '));
      expect(text).to.match(/^HTTP\/1\.1 200 OK\r\n/);
      s.destroy();
    });

    it('denies an unlisted target, and a listed host on another port, with 403', async () => {
      const t = await connectTunnel(p.port, `127.0.0.1:${otherPort}`);
      expect(t.status).to.equal(403);
      expect(t.body).to.equal(`berth egress proxy: 127.0.0.1:${otherPort} is not in the egress allowlist\n`);
      const t2 = await connectTunnel(p.port, `localhost:${echoPort}`);
      expect(t2.status).to.equal(403);
      expect(other.seen).to.have.length(0);
      const d = await p.log.waitEvent('decision', `127.0.0.1:${otherPort}`);
      expect(d).to.include({ method: 'CONNECT', allowed: false, status: 403 });
    });

    it('refuses a CONNECT without a port or with userinfo (400)', async () => {
      const reply = await rawExchange(p.port, `CONNECT 127.0.0.1 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
      expect(reply).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
      const reply2 = await rawExchange(p.port, `CONNECT u@127.0.0.1:${echoPort} HTTP/1.1\r\n\r\n`);
      expect(reply2).to.match(/^HTTP\/1\.1 400 Bad Request\r\n[\s\S]*userinfo/);
    });

    it('passes bytes the client sent right behind the CONNECT request', async () => {
      const s = net.connect(p.port, '127.0.0.1');
      s.write(`CONNECT 127.0.0.1:${echoPort} HTTP/1.1\r\nHost: 127.0.0.1:${echoPort}\r\n\r\nearly-bytes`);
      const text = await readUntil(s, (x) => x.endsWith('early-bytes'));
      expect(text).to.equal('HTTP/1.1 200 Connection Established\r\n\r\nearly-bytes');
      s.destroy();
    });
  });

  describe('decision log', () => {
    it('is one JSON object per line, in a fixed field order, without header values or paths', async () => {
      const secret = { Authorization: 'Bearer s3cret', Cookie: 'session=s3cret', 'Proxy-Authorization': 'Basic s3cret' };
      await proxyRequest(p.port, `http://127.0.0.1:${originPort}/p?token=qs3cret`, { headers: secret });
      await proxyRequest(p.port, `http://127.0.0.1:${otherPort}/p?token=qs3cret`, { headers: secret });
      await p.log.waitEvent('close', `127.0.0.1:${originPort}`);
      await p.log.waitEvent('decision', `127.0.0.1:${otherPort}`);
      const all = p.log.lines.join('\n');
      expect(all).to.not.include('s3cret');
      expect(all).to.not.include('token');
      expect(all).to.not.include('/p');
      for (const line of p.log.lines) {
        const r = JSON.parse(line) as Record<string, unknown>;
        expect(Object.keys(r)).to.deep.equal(['ts', 'event', 'id', 'method', 'target', 'allowed', 'status', 'reason', 'bytesUp', 'bytesDown', 'durationMs']);
        expect(new Date(r.ts as string).toISOString()).to.equal(r.ts);
        expect(r.durationMs).to.be.a('number').and.at.least(0);
      }
    });

    it('writes one decision line per request and one close line per allowed request', async () => {
      await proxyRequest(p.port, `http://127.0.0.1:${originPort}/a`);
      await proxyRequest(p.port, `http://127.0.0.1:${otherPort}/b`);
      await rawExchange(p.port, 'GET /c HTTP/1.1\r\nConnection: close\r\n\r\n');
      await p.log.waitEvent('close', `127.0.0.1:${originPort}`);
      const rs = p.log.records();
      expect(rs.map((r) => [r.event, r.id, r.allowed, r.status])).to.deep.equal([
        ['decision', 1, true, 200],
        ['close', 1, true, 200],
        ['decision', 2, false, 403],
        ['decision', 3, false, 400],
      ]);
    });
  });

  describe('shutdown', () => {
    it('close() stops accepting, cuts open tunnels and logs their close lines', async () => {
      const t = await connectTunnel(p.port, `127.0.0.1:${echoPort}`);
      const s = t.socket as net.Socket;
      const gone = new Promise<void>((resolve) => s.once('close', () => resolve()));
      s.on('error', () => undefined);
      s.write('x');
      await readUntil(s, (x) => x === 'x');
      await p.proxy.close();
      await gone;
      const c = await p.log.waitEvent('close', `127.0.0.1:${echoPort}`);
      expect(c).to.include({ reason: 'proxy shutting down', bytesUp: 1, bytesDown: 1 });
      const refused = await new Promise<string>((resolve) => {
        const x = net.connect(p.port, '127.0.0.1');
        x.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? ''));
        x.on('connect', () => resolve('connected'));
      });
      expect(refused).to.equal('ECONNREFUSED');
      p = await startProxy(''); // afterEach closes whatever p is
    });
  });
});

/**
 * In-process harness for the proxy tests: the proxy and origin servers on 127.0.0.1 with
 * ephemeral ports, a log that can be awaited line by line (no sleeps), and small clients
 * that speak through the proxy the way curl and wget do.
 */
import http from 'node:http';
import net from 'node:net';
import { parseAllowlist } from '../../../src/proxy/allowlist';
import { createProxyServer, type ProxyServer } from '../../../src/proxy/server';

export interface LogRecord {
  ts: string;
  event: 'decision' | 'close';
  id: number;
  method: string;
  target: string;
  allowed: boolean;
  status: number;
  reason: string;
  bytesUp: number;
  bytesDown: number;
  durationMs: number;
}

/** Collected log lines, with a way to wait for one that matches. */
export class LineLog {
  readonly lines: string[] = [];
  private waiters: { match: (r: LogRecord) => boolean; resolve: (r: LogRecord) => void }[] = [];

  readonly sink = (line: string): void => {
    this.lines.push(line);
    const record = JSON.parse(line) as LogRecord;
    this.waiters = this.waiters.filter((w) => {
      if (!w.match(record)) return true;
      w.resolve(record);
      return false;
    });
  };

  records(): LogRecord[] {
    return this.lines.map((l) => JSON.parse(l) as LogRecord);
  }

  /** Resolves with the first record (already logged or still to come) that matches. */
  waitFor(match: (r: LogRecord) => boolean): Promise<LogRecord> {
    const found = this.records().find(match);
    if (found) return Promise.resolve(found);
    return new Promise((resolve) => this.waiters.push({ match, resolve }));
  }

  waitEvent(event: 'decision' | 'close', target: string): Promise<LogRecord> {
    return this.waitFor((r) => r.event === event && r.target === target);
  }
}

export interface RunningProxy {
  readonly port: number;
  readonly log: LineLog;
  readonly proxy: ProxyServer;
}

export async function startProxy(allow: string, opts: { connectTimeoutMs?: number; lookup?: net.LookupFunction } = {}): Promise<RunningProxy> {
  const parsed = parseAllowlist(allow);
  if (!parsed.ok) throw new Error(parsed.errors.join('; '));
  const log = new LineLog();
  const proxy = createProxyServer({
    allowlist: parsed.value,
    connectTimeoutMs: opts.connectTimeoutMs ?? 10_000,
    sink: log.sink,
    lookup: opts.lookup,
  });
  const port = await proxy.listen(0, '127.0.0.1');
  return { port, log, proxy };
}

/** Listens on 127.0.0.1 with an ephemeral port; resolves with the port. */
export function listen(server: net.Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve((server.address() as net.AddressInfo).port));
  });
}

export function closeServer(server: net.Server): Promise<void> {
  if (server instanceof http.Server) server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

/** A port nothing listens on (bound, then released). */
export async function deadPort(): Promise<number> {
  const s = net.createServer();
  const port = await listen(s);
  await closeServer(s);
  return port;
}

export interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** Sends one plain-HTTP proxy request (absolute URI), as a proxy-aware client would. */
export function proxyRequest(proxyPort: number, url: string, opts: { method?: string; headers?: Record<string, string>; body?: string } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const target = new URL(url);
    const req = http.request({
      host: '127.0.0.1',
      port: proxyPort,
      method: opts.method ?? 'GET',
      path: url,
      headers: { Host: target.host, ...opts.headers },
      agent: false,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.end(opts.body);
  });
}

/**
 * Writes raw bytes to the proxy and collects everything it sends back until it closes the
 * connection (refusals always close).
 */
export function rawExchange(proxyPort: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = net.connect(proxyPort, '127.0.0.1');
    const chunks: Buffer[] = [];
    s.on('data', (c: Buffer) => chunks.push(c));
    s.on('error', reject);
    s.on('close', () => resolve(Buffer.concat(chunks).toString()));
    s.write(text);
  });
}

/** Opens a CONNECT tunnel; resolves with the proxy's status and, on 200, the tunnel socket. */
export function connectTunnel(proxyPort: number, authority: string): Promise<{ status: number; body: string; socket?: net.Socket }> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port: proxyPort, method: 'CONNECT', path: authority, agent: false });
    req.on('error', reject);
    req.on('connect', (res, socket, head: Buffer) => {
      if (res.statusCode === 200) {
        if (head.length > 0) socket.unshift(head);
        resolve({ status: 200, body: '', socket });
        return;
      }
      const chunks: Buffer[] = [head];
      socket.on('data', (c: Buffer) => chunks.push(c));
      socket.on('close', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString() }));
    });
    req.end();
  });
}

/** Reads from `socket` until `predicate` holds for everything read so far. */
export function readUntil(socket: net.Socket, predicate: (soFar: string) => boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    let soFar = '';
    const onData = (c: Buffer): void => {
      soFar += c.toString();
      if (predicate(soFar)) {
        socket.off('data', onData);
        resolve(soFar);
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('close', () => reject(new Error(`closed after ${JSON.stringify(soFar)}`)));
  });
}

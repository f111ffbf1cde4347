/**
 * The proxy server: one `node:http` server whose `request` event serves plain HTTP, whose
 * `connect` event serves tunnels, and whose `upgrade` event refuses plain-HTTP upgrades. It tracks every client socket so `close()` can stop
 * accepting, cut what is open (each cut exchange logs its close line) and resolve once the
 * last line is written.
 */
import http from 'node:http';
import type { LookupFunction, Socket } from 'node:net';
import type { Allowlist } from './allowlist';
import type { ProxyContext } from './context';
import type { Credential } from './credentials';
import { dial } from './dial';
import { Exchanges } from './exchange';
import { handleRequest } from './forward';
import type { LineSink } from './log-lines';
import { handleConnect } from './tunnel';
import { refuseResponse, refuseSocket } from './refusal';
import type { SourceGate } from './source-gate';
import { handleUpgrade } from './upgrade';
import type { Duplex } from 'node:stream';

export interface ProxyOptions {
  readonly allowlist: Allowlist;
  /** Injected credentials; none by default. */
  readonly credentials?: readonly Credential[];
  /**
   * A sidecar's listener: serves only connections from `gate`'s source (others get 403), and its
   * exchanges are logged with the sidecar's name. Undefined: the attempt's own listener.
   */
  readonly sidecar?: { readonly name: string; readonly gate: SourceGate };
  /** The registry of open exchanges, shared by the listeners of one proxy (one id sequence); default: its own. */
  readonly exchanges?: Exchanges;
  readonly connectTimeoutMs: number;
  /** Where decision and close lines go (one JSON object per call, no newline). */
  readonly sink: LineSink;
  /** Name lookup for upstream connections; tests inject one. */
  readonly lookup?: LookupFunction;
  readonly now?: () => number;
}

export interface ProxyServer {
  readonly server: http.Server;
  /** Listens; resolves with the bound port (useful with port 0). */
  listen(port: number, host: string): Promise<number>;
  /** Stops accepting, cuts open exchanges, resolves when every log line is written. */
  close(): Promise<void>;
}

/** Answer for requests the HTTP parser could not read. */
const BAD_REQUEST = 'HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n';

export function createProxyServer(opts: ProxyOptions): ProxyServer {
  const exchanges = opts.exchanges ?? new Exchanges(opts.sink, opts.now);
  const ctx: ProxyContext = {
    allowlist: opts.allowlist,
    credentials: opts.credentials ?? [],
    tlsTimeoutMs: opts.connectTimeoutMs,
    exchanges,
    ...(opts.sidecar ? { sidecar: opts.sidecar.name } : {}),
    dial: (host, port) => dial(host, port, { timeoutMs: opts.connectTimeoutMs, lookup: opts.lookup }),
  };
  // requestTimeout 0: a long upload through the proxy is not cut; headersTimeout still applies.
  // requireHostHeader false: the absolute URI decides; a Host header, when sent, must agree.
  const server = http.createServer({ requestTimeout: 0, requireHostHeader: false });
  const sockets = new Set<Socket>();
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.once('close', () => sockets.delete(s));
  });
  const side = opts.sidecar;
  if (side) {
    // Nothing is read or dialled before the peer is known to be the sidecar.
    const notYours = `this port of the proxy serves sidecar ${side.name} only`;
    const gated = (req: http.IncomingMessage, refuse: () => void, serve: () => void): void => {
      void side.gate.allows(req.socket.remoteAddress).then((ok) => {
        if (ok) return serve();
        exchanges.begin(req.method ?? '', side.name).refuse(403, notYours);
        refuse();
      });
    };
    server.on('request', (req, res) =>
      gated(
        req,
        () => refuseResponse(res, 403, notYours),
        () => handleRequest(ctx, req, res),
      ),
    );
    server.on('connect', (req, socket: Duplex, head: Buffer) =>
      gated(
        req,
        () => refuseSocket(socket, 403, notYours),
        () => handleConnect(ctx, req, socket, head),
      ),
    );
    server.on('upgrade', (req, socket: Duplex) =>
      gated(
        req,
        () => refuseSocket(socket, 403, notYours),
        () => handleUpgrade(ctx, req, socket),
      ),
    );
  } else {
    server.on('request', (req, res) => handleRequest(ctx, req, res));
    server.on('connect', (req, socket, head: Buffer) => handleConnect(ctx, req, socket, head));
    server.on('upgrade', (req, socket) => handleUpgrade(ctx, req, socket));
  }
  server.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    // Resets and timeouts on idle keep-alive sockets are not requests; parse errors are.
    if (typeof err.code === 'string' && err.code.startsWith('HPE_') && socket.writable) {
      exchanges.begin('').refuse(400, 'malformed HTTP request');
      socket.end(BAD_REQUEST);
    } else {
      socket.destroy();
    }
  });

  return {
    server,
    listen(port, host) {
      return new Promise((resolve, reject) => {
        server.once('error', reject);
        server.listen(port, host, () => {
          server.off('error', reject);
          const addr = server.address();
          resolve(typeof addr === 'object' && addr ? addr.port : port);
        });
      });
    },
    async close() {
      exchanges.stopping = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
      await exchanges.idle();
    },
  };
}

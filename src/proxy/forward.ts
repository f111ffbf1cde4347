/**
 * Plain HTTP through the proxy: `GET http://host:port/path HTTP/1.1`. The decision is on the
 * URI's host:port; a Host header that names anything else is refused. Allowed requests go
 * upstream on a fresh connection with hop-by-hop headers and Proxy-Authorization removed and
 * Host set from the URI; bodies stream both ways with back-pressure. Origin-form and other
 * non-proxy targets get 400, denied targets 403, unreachable 502, connect timeout 504.
 */
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { admitHttp } from './admit';
import type { ProxyContext } from './context';
import type { Credential } from './credentials';
import { admitThenDial } from './admitted';
import type { Exchange } from './exchange';
import { endToEndHeaders, hasTransferEncoding } from './headers';
import { refuseResponse } from './refusal';
import { type HttpTarget, hostHeaderFor, type Target } from './target';

/** The Host header for a TLS upstream: the port is left out when it is the default 443. */
function tlsHostHeader(t: Target): string {
  return t.port === 443 ? t.host : t.text;
}

export function handleRequest(ctx: ProxyContext, req: IncomingMessage, res: ServerResponse): void {
  const ex = ctx.exchanges.begin(req.method ?? '', ctx.sidecar);
  admitThenDial(
    ctx,
    ex,
    admitHttp(ctx, req),
    res,
    (status, reason) => refuseResponse(res, status, reason),
    (socket, target, credential) => relay(req, res, socket, target, ex, credential),
  );
}

/**
 * Sends the request on `socket` and streams the response back. With a credential, `socket` is the
 * TLS connection to its upstream: Host names the upstream, and the credential's header replaces
 * any the client sent.
 */
function relay(req: IncomingMessage, res: ServerResponse, socket: Socket, target: HttpTarget, ex: Exchange, credential?: Credential): void {
  const headers = credential
    ? ['Host', tlsHostHeader(credential.target), ...endToEndHeaders(req.rawHeaders, ['host', credential.header]), credential.header, credential.value]
    : ['Host', hostHeaderFor(target), ...endToEndHeaders(req.rawHeaders, ['host'])];
  // The body's framing is hop-by-hop: re-chunk a chunked body (Content-Length passes as is).
  if (hasTransferEncoding(req.rawHeaders)) headers.push('Transfer-Encoding', 'chunked');
  headers.push('Connection', 'close');
  const upstream = http.request({
    method: req.method,
    path: target.path,
    headers,
    setHost: false,
    createConnection: () => socket,
  });

  let outcome = 'response complete';
  upstream.on('response', (up: IncomingMessage) => {
    ex.decide(up.statusCode ?? 502, credential ? 'forwarded with its credential' : 'forwarded');
    res.writeHead(up.statusCode ?? 502, up.statusMessage, endToEndHeaders(up.rawHeaders));
    up.on('data', (chunk: Buffer) => {
      ex.bytesDown += chunk.length;
    });
    up.on('error', () => {
      outcome = 'upstream closed mid-response';
      res.destroy();
    });
    up.pipe(res);
  });
  upstream.on('error', (err: NodeJS.ErrnoException) => {
    const reason = `upstream ${credential?.target.text ?? target.text} failed (${err.code ?? 'error'})`;
    outcome = reason;
    if (!ex.answered) {
      ex.decide(502, reason);
      refuseResponse(res, 502, reason);
    } else {
      res.destroy();
    }
  });

  req.on('data', (chunk: Buffer) => {
    ex.bytesUp += chunk.length;
  });
  req.pipe(upstream);

  res.once('close', () => {
    if (!res.writableFinished) {
      upstream.destroy();
      socket.destroy();
      if (outcome === 'response complete') outcome = 'client closed before the response was complete';
    }
    ex.finish(outcome);
  });
}

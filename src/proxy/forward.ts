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
import type { DialFailure } from './dial';
import type { Exchange } from './exchange';
import { endToEndHeaders, hasTransferEncoding } from './headers';
import { refuseResponse } from './refusal';
import { type HttpTarget, hostHeaderFor } from './target';

export function handleRequest(ctx: ProxyContext, req: IncomingMessage, res: ServerResponse): void {
  const ex = ctx.exchanges.begin(req.method ?? '');
  const admission = admitHttp(ctx, req);
  ex.target = admission.ok ? admission.target.text : admission.target;
  if (!admission.ok) {
    ex.refuse(admission.status, admission.reason);
    refuseResponse(res, admission.status, admission.reason);
    return;
  }
  const target = admission.target;
  ex.allowed = true;

  const dialing = ctx.dial(target.host, target.port);
  const onEarlyClose = (): void => {
    dialing.cancel();
    ex.finish('client closed before the upstream connection was made');
  };
  res.once('close', onEarlyClose);
  dialing.socket.then(
    (socket) => {
      res.off('close', onEarlyClose);
      if (res.destroyed) {
        socket.destroy();
        ex.finish('client closed before the upstream connection was made');
        return;
      }
      relay(req, res, socket, target, ex);
    },
    (failure: DialFailure) => {
      res.off('close', onEarlyClose);
      ex.decide(failure.status, failure.reason);
      refuseResponse(res, failure.status, failure.reason);
      ex.finish(failure.reason);
    },
  );
}

/** Sends the request on `socket` and streams the response back. */
function relay(req: IncomingMessage, res: ServerResponse, socket: Socket, target: HttpTarget, ex: Exchange): void {
  const headers = ['Host', hostHeaderFor(target), ...endToEndHeaders(req.rawHeaders, ['host'])];
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
    ex.decide(up.statusCode ?? 502, 'forwarded');
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
    const reason = `upstream ${target.text} failed (${err.code ?? 'error'})`;
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

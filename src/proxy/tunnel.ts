/**
 * CONNECT host:port — the way HTTPS (and any TCP protocol) leaves through the proxy. Allowed:
 * dial upstream, answer `200 Connection Established`, then copy bytes both ways, half-close
 * aware, until both sides are done. Refused: 400 (bad target) or 403 (not allowlisted).
 * Upstream unreachable: 502; connect deadline passed: 504.
 */
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { admitConnect } from './admit';
import type { ProxyContext } from './context';
import { admitThenDial } from './admitted';
import { refuseSocket } from './refusal';

export function handleConnect(ctx: ProxyContext, req: IncomingMessage, client: Duplex, head: Buffer): void {
  const ex = ctx.exchanges.begin('CONNECT', ctx.sidecar);
  client.on('error', () => client.destroy());
  admitThenDial(
    ctx,
    ex,
    admitConnect(ctx, req),
    client,
    (status, reason) => refuseSocket(client, status, reason),
    (upstream) => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      ex.decide(200, 'tunnel established');
      if (head.length > 0) upstream.write(head);
      splice(client, upstream, (broken) => {
        ex.bytesUp = upstream.bytesWritten;
        ex.bytesDown = upstream.bytesRead;
        ex.finish(broken ? 'tunnel reset' : 'tunnel closed');
      });
    },
  );
}

/**
 * Copies bytes both ways. An end (FIN) on one side ends the other's writing side; an error
 * on either side destroys both. `done` runs once, when both have closed, and says whether an
 * error cut the tunnel.
 */
function splice(client: Duplex, upstream: Socket, done: (broken: boolean) => void): void {
  let closed = 0;
  let broken = false;
  const onClose = (): void => {
    if (++closed === 2) done(broken);
  };
  const destroyBoth = (): void => {
    broken = true;
    client.destroy();
    upstream.destroy();
  };
  client.on('error', destroyBoth);
  upstream.on('error', destroyBoth);
  // A side that has fully closed can neither send nor receive: finish the other politely
  // (flushing what is buffered), then let it go.
  client.once('close', () => {
    upstream.end(() => upstream.destroy());
    onClose();
  });
  upstream.once('close', () => {
    if (!client.destroyed) client.end(() => client.destroy());
    onClose();
  });
  client.pipe(upstream);
  upstream.pipe(client);
}

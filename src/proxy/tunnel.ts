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
import type { DialFailure } from './dial';
import { refuseSocket } from './refusal';

export function handleConnect(ctx: ProxyContext, req: IncomingMessage, client: Duplex, head: Buffer): void {
  const ex = ctx.exchanges.begin('CONNECT');
  client.on('error', () => client.destroy());
  const admission = admitConnect(ctx, req);
  ex.target = admission.ok ? admission.target.text : admission.target;
  if (!admission.ok) {
    ex.refuse(admission.status, admission.reason);
    refuseSocket(client, admission.status, admission.reason);
    return;
  }
  const target = admission.target;
  ex.allowed = true;

  const dialing = ctx.dial(target.host, target.port);
  const onEarlyClose = (): void => {
    dialing.cancel();
    ex.finish('client closed before the upstream connection was made');
  };
  client.once('close', onEarlyClose);

  dialing.socket.then(
    (upstream) => {
      client.off('close', onEarlyClose);
      if (client.destroyed) {
        upstream.destroy();
        ex.finish('client closed before the upstream connection was made');
        return;
      }
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      ex.decide(200, 'tunnel established');
      if (head.length > 0) upstream.write(head);
      splice(client, upstream, (broken) => {
        ex.bytesUp = upstream.bytesWritten;
        ex.bytesDown = upstream.bytesRead;
        ex.finish(broken ? 'tunnel reset' : 'tunnel closed');
      });
    },
    (failure: DialFailure) => {
      client.off('close', onEarlyClose);
      ex.decide(failure.status, failure.reason);
      refuseSocket(client, failure.status, failure.reason);
      ex.finish(failure.reason);
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

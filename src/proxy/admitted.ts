/**
 * The first half of every proxied exchange, the same for CONNECT and plain HTTP: record the
 * admission decision on the exchange, refuse (400/403) or dial the target, and hand over the
 * upstream socket only while the client is still there. A client that closes first cancels the
 * dial; a dial that fails is answered (502/504) on the client side by `refuse`.
 */
import type { Socket } from 'node:net';
import { type Credential, secure } from './credentials';
import type { Admission } from './admit';
import type { ProxyContext } from './context';
import type { DialFailure } from './dial';
import type { Exchange } from './exchange';
import type { Target } from './target';

/** The client's side, as far as this half needs it: a Duplex socket or a ServerResponse. */
export interface ClientSide {
  once(event: 'close', listener: () => void): unknown;
  off(event: 'close', listener: () => void): unknown;
  readonly destroyed: boolean;
}

const EARLY_CLOSE = 'client closed before the upstream connection was made';

export function admitThenDial<T extends Target>(
  ctx: ProxyContext,
  ex: Exchange,
  admission: Admission<T>,
  client: ClientSide,
  refuse: (status: number, reason: string) => void,
  connected: (upstream: Socket, target: T, credential: Credential | undefined) => void,
): void {
  const credential = admission.ok ? admission.credential : undefined;
  // A credentialed request is logged under the upstream it goes to.
  ex.target = admission.ok ? (credential?.target.text ?? admission.target.text) : admission.target;
  if (!admission.ok) {
    ex.refuse(admission.status, admission.reason);
    refuse(admission.status, admission.reason);
    return;
  }
  const target = admission.target;
  ex.allowed = true;

  const dialing = credential ? dialSecure(ctx, credential) : ctx.dial(target.host, target.port);
  const onEarlyClose = (): void => {
    dialing.cancel();
    ex.finish(EARLY_CLOSE);
  };
  client.once('close', onEarlyClose);
  dialing.socket.then(
    (upstream) => {
      client.off('close', onEarlyClose);
      if (client.destroyed) {
        upstream.destroy();
        ex.finish(EARLY_CLOSE);
        return;
      }
      connected(upstream, target, credential);
    },
    (failure: DialFailure) => {
      client.off('close', onEarlyClose);
      ex.decide(failure.status, failure.reason);
      refuse(failure.status, failure.reason);
      ex.finish(failure.reason);
    },
  );
}

/** TCP to the credential's upstream, then TLS over it: one cancellable dial. */
function dialSecure(ctx: ProxyContext, c: Credential): { socket: Promise<Socket>; cancel(): void } {
  const tcp = ctx.dial(c.target.host, c.target.port);
  let handshake: ReturnType<typeof secure> | undefined;
  let cancelled = false;
  const socket = tcp.socket.then((s) => {
    if (cancelled) {
      s.destroy();
      return new Promise<Socket>(() => undefined);
    }
    handshake = secure(s, c, ctx.tlsTimeoutMs);
    return handshake.socket;
  });
  socket.catch(() => undefined);
  return {
    socket,
    cancel() {
      cancelled = true;
      tcp.cancel();
      handshake?.cancel();
    },
  };
}

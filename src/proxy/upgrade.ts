/**
 * Plain-HTTP protocol upgrades (`Upgrade: websocket` on an absolute-URI request) are not
 * relayed: the request is admitted like any other (400/403 when it would be refused), and an
 * admitted one gets 501 telling the client to tunnel with CONNECT, which is what proxy-aware
 * WebSocket clients do anyway. Without this handler Node would leave the socket hanging.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { admitHttp } from './admit';
import type { ProxyContext } from './context';
import { refuseSocket } from './refusal';

export const UPGRADE_REFUSED = 'protocol upgrades are not relayed on plain HTTP; use CONNECT';

export function handleUpgrade(ctx: ProxyContext, req: IncomingMessage, client: Duplex): void {
  const ex = ctx.exchanges.begin(req.method ?? '', ctx.sidecar);
  client.on('error', () => client.destroy());
  const admission = admitHttp(ctx, req);
  ex.target = admission.ok ? admission.target.text : admission.target;
  const [status, reason] = admission.ok ? [501, UPGRADE_REFUSED] : [admission.status, admission.reason];
  ex.refuse(status, reason);
  refuseSocket(client, status, reason);
}

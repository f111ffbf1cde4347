/**
 * The admission decision for one request, before anything is opened: is the target well
 * formed (else 400), does a plain-HTTP Host header agree with the URI (else 400), and is the
 * normalized host:port in the allowlist (else 403)? Pure: it reads the request line and
 * headers, and returns data.
 */
import type { IncomingMessage } from 'node:http';
import { deniedReason, isAllowed, type ProxyContext } from './context';
import { connectRefusedReason, type Credential, credentialFor, otherPortReason } from './credentials';
import { checkHostHeader } from './headers';
import { type HttpTarget, parseConnectTarget, parseHttpTarget, type Target } from './target';

export type Admission<T extends Target> =
  /** `credential`: the request goes on over TLS to the credential's upstream, its header set. */
  | { ok: true; target: T; credential?: Credential }
  /** `target` is the normalized host:port when the request named one, else "". */
  | { ok: false; status: 400 | 403; reason: string; target: string };

function decide<T extends Target>(ctx: ProxyContext, target: T): Admission<T> {
  if (!isAllowed(ctx, target)) return { ok: false, status: 403, reason: deniedReason(target), target: target.text };
  return { ok: true, target };
}

export function admitConnect(ctx: ProxyContext, req: IncomingMessage): Admission<Target> {
  const parsed = parseConnectTarget(req.url ?? '');
  if (!parsed.ok) return { ok: false, status: 400, reason: parsed.reason, target: '' };
  // A tunnel to a credentialed host, on any port, would bypass the credential (and its log).
  const credential = credentialFor(ctx.credentials, parsed.value);
  if (credential) return { ok: false, status: 403, reason: connectRefusedReason(credential), target: parsed.value.text };
  return decide(ctx, parsed.value);
}

export function admitHttp(ctx: ProxyContext, req: IncomingMessage): Admission<HttpTarget> {
  const parsed = parseHttpTarget(req.url ?? '');
  if (!parsed.ok) return { ok: false, status: 400, reason: parsed.reason, target: '' };
  const host = checkHostHeader(req.rawHeaders, parsed.value);
  if (!host.ok) return { ok: false, status: 400, reason: host.reason, target: parsed.value.text };
  // A credentialed host: http://host/ (port 80) or http://host:TLSPORT/ go to the credential's
  // upstream, whatever the allowlist says; any other port is refused.
  const credential = credentialFor(ctx.credentials, parsed.value);
  if (credential) {
    if (parsed.value.port !== 80 && parsed.value.port !== credential.target.port) {
      return { ok: false, status: 403, reason: otherPortReason(credential, parsed.value), target: parsed.value.text };
    }
    return { ok: true, target: parsed.value, credential };
  }
  return decide(ctx, parsed.value);
}

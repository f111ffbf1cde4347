/**
 * The admission decision for one request, before anything is opened: is the target well
 * formed (else 400), does a plain-HTTP Host header agree with the URI (else 400), and is the
 * normalized host:port in the allowlist (else 403)? Pure: it reads the request line and
 * headers, and returns data.
 */
import type { IncomingMessage } from 'node:http';
import { deniedReason, isAllowed, type ProxyContext } from './context';
import { checkHostHeader } from './headers';
import { type HttpTarget, parseConnectTarget, parseHttpTarget, type Target } from './target';

export type Admission<T extends Target> =
  | { ok: true; target: T }
  /** `target` is the normalized host:port when the request named one, else "". */
  | { ok: false; status: 400 | 403; reason: string; target: string };

function decide<T extends Target>(ctx: ProxyContext, target: T): Admission<T> {
  if (!isAllowed(ctx, target)) return { ok: false, status: 403, reason: deniedReason(target), target: target.text };
  return { ok: true, target };
}

export function admitConnect(ctx: ProxyContext, req: IncomingMessage): Admission<Target> {
  const parsed = parseConnectTarget(req.url ?? '');
  if (!parsed.ok) return { ok: false, status: 400, reason: parsed.reason, target: '' };
  return decide(ctx, parsed.value);
}

export function admitHttp(ctx: ProxyContext, req: IncomingMessage): Admission<HttpTarget> {
  const parsed = parseHttpTarget(req.url ?? '');
  if (!parsed.ok) return { ok: false, status: 400, reason: parsed.reason, target: '' };
  const host = checkHostHeader(req.rawHeaders, parsed.value);
  if (!host.ok) return { ok: false, status: 400, reason: host.reason, target: parsed.value.text };
  return decide(ctx, parsed.value);
}

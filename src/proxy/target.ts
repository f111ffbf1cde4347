/**
 * Request targets, parsed by hand with one strict grammar (host.ts) rather than by the WHATWG
 * URL parser, so the string the allowlist decides on is exactly the string the proxy connects
 * to. Three shapes reach a forward proxy:
 *   - authority-form `host:port` (CONNECT): the port is required;
 *   - absolute-form  `http://host[:port]/path` (plain HTTP): port 80 by default;
 *   - anything else (origin-form `/path`, `*`, `https://...`) is not a request this proxy serves.
 * Userinfo (`http://user@host/`, `CONNECT user@host:443`) is refused: it is how `a.com@b.com`
 * confusions are built, and credentials have no business in a proxied URI.
 */
import { formatTarget, type Host, parseHost, parsePort } from './host';

export interface Target extends Host {
  readonly port: number;
  /** `host:port`, normalized. */
  readonly text: string;
}

export interface HttpTarget extends Target {
  /** Path and query to send upstream, always starting with `/`; the fragment is dropped. */
  readonly path: string;
}

export type TargetError = { ok: false; reason: string };

/** Parses `host[:port]`; without a port, `defaultPort` applies (or the port is required). */
export function parseAuthority(raw: string, defaultPort?: number): { ok: true; value: Target } | TargetError {
  if (raw.includes('@')) return { ok: false, reason: 'userinfo (user@host) is not allowed in a proxy target' };
  if (raw.startsWith('[')) return { ok: false, reason: 'IPv6 literals are not supported' };
  const colon = raw.lastIndexOf(':');
  let hostPart = raw;
  let port = defaultPort;
  if (colon >= 0) {
    hostPart = raw.slice(0, colon);
    const p = parsePort(raw.slice(colon + 1));
    if (!p.ok) return p;
    port = p.value;
  }
  if (port === undefined) return { ok: false, reason: 'missing :port' };
  const host = parseHost(hostPart);
  if (!host.ok) return host;
  return { ok: true, value: { ...host.value, port, text: formatTarget(host.value.host, port) } };
}

/** The target of a CONNECT request: `host:port`, port required. */
export function parseConnectTarget(url: string): { ok: true; value: Target } | TargetError {
  return parseAuthority(url);
}

/** The target of a plain HTTP proxy request: an absolute `http://` URI. */
export function parseHttpTarget(url: string): { ok: true; value: HttpTarget } | TargetError {
  if (url.startsWith('/') || url === '*') {
    return { ok: false, reason: 'origin-form request: this is a forward proxy; send an absolute http:// URI or CONNECT' };
  }
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(url);
  if (!scheme) return { ok: false, reason: 'the request target is not an absolute URI' };
  if (scheme[1]?.toLowerCase() !== 'http') {
    return { ok: false, reason: `scheme ${scheme[1]?.toLowerCase()} is not proxied as a plain request; use CONNECT` };
  }
  const rest = url.slice(scheme[0].length);
  const end = rest.search(/[/?#]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const parsed = parseAuthority(authority, 80);
  if (!parsed.ok) return parsed;
  let path = end < 0 ? '' : rest.slice(end);
  const hash = path.indexOf('#');
  if (hash >= 0) path = path.slice(0, hash);
  if (!path.startsWith('/')) path = `/${path}`;
  return { ok: true, value: { ...parsed.value, path } };
}

/** The Host header value to send upstream: the port is left out when it is the default 80. */
export function hostHeaderFor(t: Target): string {
  return t.port === 80 ? t.host : t.text;
}

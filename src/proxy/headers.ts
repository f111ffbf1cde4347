/**
 * Header handling for forwarded plain-HTTP requests and their responses, on Node's flat
 * `rawHeaders` arrays ([name, value, name, value, ...]) so case and repeated headers survive.
 * Hop-by-hop headers (RFC 9110 §7.6.1) are dropped, with any header the Connection header
 * names, and Proxy-Authorization never leaves the proxy. Values are never logged.
 */
import { parseAuthority, type Target } from './target';

const HOP_BY_HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
]);

/** Lower-cased names of all headers named `name` in a flat rawHeaders array, with their values. */
function valuesOf(raw: readonly string[], name: string): string[] {
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) if (raw[i]?.toLowerCase() === name) out.push(raw[i + 1] ?? '');
  return out;
}

/** The end-to-end headers of a message, minus `alsoDrop` (lower-case names). */
export function endToEndHeaders(raw: readonly string[], alsoDrop: readonly string[] = []): string[] {
  const drop = new Set([...HOP_BY_HOP, ...alsoDrop]);
  for (const v of valuesOf(raw, 'connection')) {
    for (const token of v.split(',')) if (token.trim() !== '') drop.add(token.trim().toLowerCase());
  }
  const out: string[] = [];
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] ?? '';
    if (!drop.has(name.toLowerCase())) out.push(name, raw[i + 1] ?? '');
  }
  return out;
}

/** True when the message carried a body framed by Transfer-Encoding (so no Content-Length). */
export function hasTransferEncoding(raw: readonly string[]): boolean {
  return valuesOf(raw, 'transfer-encoding').length > 0;
}

/**
 * Checks that the Host header, when present, names the same host:port as the absolute URI.
 * A missing Host header (HTTP/1.0) is fine: the URI decides and the proxy sets Host.
 * The reason never quotes the header's value.
 */
export function checkHostHeader(raw: readonly string[], target: Target): { ok: true } | { ok: false; reason: string } {
  const hosts = valuesOf(raw, 'host');
  if (hosts.length === 0) return { ok: true };
  if (hosts.length > 1) return { ok: false, reason: 'more than one Host header' };
  const parsed = parseAuthority((hosts[0] ?? '').trim(), 80);
  if (!parsed.ok) return { ok: false, reason: 'the Host header is not a valid host[:port]' };
  if (parsed.value.text !== target.text) return { ok: false, reason: 'the Host header disagrees with the request URI' };
  return { ok: true };
}

/**
 * Host and port syntax, shared by the allowlist and by request targets, so both sides of every
 * comparison are normalized by the same rules: lower case, one trailing dot dropped, and a
 * strict grammar. A host is either a dotted-quad IPv4 literal or a DNS name whose last label is
 * not numeric. Everything else — IPv6 literals, percent-encoding, `0x7f.1`, `2130706433`,
 * octal-looking `010.0.0.1`, userinfo — is refused, so no string can mean one host to this
 * check and another to the resolver that later connects to it.
 */

export type HostKind = 'ipv4' | 'name';

export interface Host {
  /** Normalized: lower case, no trailing dot. */
  readonly host: string;
  readonly kind: HostKind;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; reason: string };

/** One DNS label: letters, digits, `_` and `-` (not at either end), 1..63 characters. */
const LABEL = /^[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?$/;
const DOTTED_QUAD = /^\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;
const OCTET = /^(?:0|[1-9]\d{0,2})$/;
/** A last label the WHATWG URL parser (and inet_aton) would read as a number. */
const NUMERIC_LABEL = /^(?:\d+|0x[0-9a-f]*)$/;
const MAX_NAME = 253;

/** Normalizes and classifies a host (no port, no brackets). */
export function parseHost(raw: string): Parsed<Host> {
  let host = raw.toLowerCase();
  if (host.endsWith('.')) host = host.slice(0, -1);
  if (host === '') return { ok: false, reason: 'empty host' };
  if (host.includes(':') || host.startsWith('[')) return { ok: false, reason: 'IPv6 literals are not supported' };
  if (DOTTED_QUAD.test(host)) {
    const octets = host.split('.');
    if (octets.every((o) => OCTET.test(o) && Number(o) <= 255)) return { ok: true, value: { host, kind: 'ipv4' } };
    return { ok: false, reason: 'invalid IPv4 address (octets are 0-255, without leading zeros)' };
  }
  if (host.length > MAX_NAME) return { ok: false, reason: `host name longer than ${MAX_NAME} characters` };
  const labels = host.split('.');
  if (!labels.every((l) => LABEL.test(l))) {
    return { ok: false, reason: 'invalid host name (labels of letters, digits, "-" and "_", separated by dots)' };
  }
  if (NUMERIC_LABEL.test(labels[labels.length - 1] ?? '')) {
    return { ok: false, reason: 'a host name may not end in a numeric label (only dotted-quad IPv4 literals are addresses)' };
  }
  return { ok: true, value: { host, kind: 'name' } };
}

/** A TCP port in decimal, 1..65535, without sign or leading zeros. */
export function parsePort(raw: string): Parsed<number> {
  if (!/^[1-9]\d{0,4}$/.test(raw) || Number(raw) > 65535) {
    return { ok: false, reason: 'invalid port (a decimal number 1-65535)' };
  }
  return { ok: true, value: Number(raw) };
}

/** `host:port` as written in logs, allowlist echoes and error bodies. */
export function formatTarget(host: string, port: number): string {
  return `${host}:${port}`;
}

/**
 * The egress allowlist: `host:port` entries, parsed strictly and matched on the requested
 * host string as normalized (never on what it resolves to). An entry is
 *   - an exact host name:    `api.example.com:443`  matches only api.example.com:443;
 *   - an IPv4 literal:       `10.1.2.3:8080`        matches only that literal, never a name;
 *   - a wildcard:            `*.example.com:443`    matches any subdomain at any depth
 *                            (a.example.com, a.b.example.com) but NOT example.com itself.
 * Matching is case-insensitive, ignores one trailing dot, and the port must be equal.
 */
import { formatTarget, type Host, type Parsed, parseHost, parsePort } from './host';

export interface AllowEntry {
  /** Normalized form, as echoed in the `listening` line: `host:port` or `*.suffix:port`. */
  readonly text: string;
  /** The host, or for a wildcard the suffix after `*.`. */
  readonly host: string;
  readonly wildcard: boolean;
  readonly port: number;
}

export interface Allowlist {
  readonly entries: readonly AllowEntry[];
}

/** Parses one entry; the reason names what is wrong with it. */
export function parseAllowEntry(raw: string): Parsed<AllowEntry> {
  const text = raw.trim();
  if (text === '') return { ok: false, reason: 'empty entry' };
  if (text.includes('://')) return { ok: false, reason: 'expected host:port, without a scheme' };
  if (/[/?#@]/.test(text)) return { ok: false, reason: 'expected host:port, without a path or user' };
  const colon = text.lastIndexOf(':');
  if (colon < 0) return { ok: false, reason: 'missing :port' };
  const hostPart = text.slice(0, colon);
  if (hostPart.includes(':') || hostPart.startsWith('[')) return { ok: false, reason: 'IPv6 literals are not supported' };
  const port = parsePort(text.slice(colon + 1));
  if (!port.ok) return port;
  if (hostPart === '*') return { ok: false, reason: 'a bare * would allow every host; write *.example.com' };
  const wildcard = hostPart.startsWith('*.');
  if (!wildcard && hostPart.includes('*')) {
    return { ok: false, reason: 'a wildcard must be the whole first label, as in *.example.com' };
  }
  const host = parseHost(wildcard ? hostPart.slice(2) : hostPart);
  if (!host.ok) return host;
  if (wildcard && host.value.kind !== 'name') return { ok: false, reason: 'a wildcard needs a host name suffix, not an address' };
  const prefix = wildcard ? '*.' : '';
  return {
    ok: true,
    value: { text: formatTarget(prefix + host.value.host, port.value), host: host.value.host, wildcard, port: port.value },
  };
}

/**
 * Parses a comma-separated list (whitespace around entries is ignored). An empty or blank
 * string is a valid, empty allowlist (everything denied). Duplicates are dropped, first kept.
 */
export function parseAllowlist(raw: string): { ok: true; value: Allowlist } | { ok: false; errors: string[] } {
  if (raw.trim() === '') return { ok: true, value: { entries: [] } };
  const entries: AllowEntry[] = [];
  const errors: string[] = [];
  const seen = new Set<string>();
  raw.split(',').forEach((item, i) => {
    const parsed = parseAllowEntry(item);
    if (!parsed.ok) {
      errors.push(`entry ${i + 1} ${JSON.stringify(item.trim())}: ${parsed.reason}`);
    } else if (!seen.has(parsed.value.text)) {
      seen.add(parsed.value.text);
      entries.push(parsed.value);
    }
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: { entries } };
}

/** The first entry that allows `host:port`, if any. `host` must come from parseHost. */
export function findAllowing(list: Allowlist, target: Host, port: number): AllowEntry | undefined {
  return list.entries.find((e) => {
    if (e.port !== port) return false;
    if (!e.wildcard) return e.host === target.host;
    return target.kind === 'name' && target.host.endsWith(`.${e.host}`);
  });
}

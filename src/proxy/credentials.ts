/**
 * Injected credentials: a plain-HTTP request for a credentialed host goes on over TLS to the
 * credential's exact `host:port`, verified against its CA bundle or the system's roots, with the
 * credential's header set (any the client sent dropped). The client never sees the value: it is
 * read from the environment once, kept in memory, and never logged, echoed or put in an error.
 * A CONNECT to a credentialed host is refused (admit.ts): a tunnel would carry the client's own
 * TLS, which the proxy cannot add a header to, and would let it reach the upstream unaccounted.
 */
import tls from 'node:tls';
import type { Socket } from 'node:net';
import type { CredentialConfig } from './contract';
import { settle, type DialFailure } from './dial';
import type { Host } from './host';
import { parseAuthority, type Target } from './target';

export interface Credential {
  /** The upstream: exact host and TLS port. */
  readonly target: Target;
  /** Lower case. */
  readonly header: string;
  readonly value: string;
  /** PEM certificates to verify the upstream with; undefined: the system's roots. */
  readonly ca?: string;
}

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
/** What a header value may hold (RFC 9110 field-value: visible ASCII, obs-text, space, tab). */
const HEADER_VALUE = /^[\t\x20-\x7e\x80-\xff]*$/;

/**
 * Parses the JSON of PROXY_ENV.credentials. Errors name the entry and what is wrong with it,
 * never a value.
 */
export function parseCredentials(raw: string, envName: string): { ok: true; value: Credential[] } | { ok: false; errors: string[] } {
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    return { ok: false, errors: [`${envName}: not valid JSON`] };
  }
  if (!Array.isArray(list)) return { ok: false, errors: [`${envName}: expected a JSON array`] };
  const errors: string[] = [];
  const out: Credential[] = [];
  const hosts = new Set<string>();
  list.forEach((item: unknown, i) => {
    const bad = (why: string): void => {
      errors.push(`${envName}: entry ${i + 1}: ${why}`);
    };
    const c = item as Partial<CredentialConfig> | null;
    if (typeof c !== 'object' || c === null) return bad('expected an object');
    if (typeof c.target !== 'string') return bad('target is not a string');
    const target = parseAuthority(c.target);
    if (!target.ok) return bad(`target ${JSON.stringify(c.target)}: ${target.reason}`);
    if (c.target.includes('*')) return bad('a credential is for one exact host, never a wildcard');
    if (hosts.has(target.value.host)) return bad(`${target.value.host} has more than one credential`);
    hosts.add(target.value.host);
    if (typeof c.header !== 'string' || !HEADER_NAME.test(c.header)) return bad('header is not an HTTP header name');
    if (typeof c.value !== 'string' || !HEADER_VALUE.test(c.value)) return bad('value is not a string a header can carry');
    if (c.ca !== undefined && (typeof c.ca !== 'string' || !c.ca.includes('-----BEGIN CERTIFICATE-----'))) return bad('ca is not a PEM certificate bundle');
    out.push({ target: target.value, header: c.header.toLowerCase(), value: c.value, ...(c.ca !== undefined ? { ca: c.ca } : {}) });
  });
  return errors.length > 0 ? { ok: false, errors } : { ok: true, value: out };
}

/** The credential for `host`, whatever the port asked for (admit.ts decides on the port). */
export function credentialFor(creds: readonly Credential[], host: Host): Credential | undefined {
  return creds.find((c) => c.target.host === host.host);
}

/** The reason a CONNECT to a credentialed host is refused with. */
export function connectRefusedReason(c: Credential): string {
  return `${c.target.host} has a credential the proxy adds: send plain http://${c.target.host}/ requests through the proxy (it speaks TLS to ${c.target.text}); CONNECT to it is refused`;
}

/** The reason a plain request for a credentialed host on another port is refused with. */
export function otherPortReason(c: Credential, target: Target): string {
  return `${target.text}: ${c.target.host} is reached only as http://${c.target.host}/ (the proxy speaks TLS to ${c.target.text})`;
}

/** Why a TLS handshake failed, for the client and the log: the target and the error's code. */
export function tlsFailure(target: string, err: unknown): DialFailure {
  const code = (err as { code?: unknown })?.code;
  return { status: 502, reason: `TLS to ${target} failed (${typeof code === 'string' ? code : 'handshake error'})` };
}

/**
 * TLS over the connected `socket` to the credential's upstream, verified (its CA or the system's
 * roots, the host name checked), HTTP/1.1 only. Resolves once the handshake is done; rejects with
 * a DialFailure (502) on any failure, 504 past `timeoutMs`.
 */
export function secure(socket: Socket, c: Credential, timeoutMs: number): { socket: Promise<tls.TLSSocket>; cancel(): void } {
  const s = tls.connect({
    socket,
    host: c.target.host,
    ...(c.target.kind === 'name' ? { servername: c.target.host } : {}),
    ...(c.ca !== undefined ? { ca: c.ca } : {}),
    rejectUnauthorized: true,
    ALPNProtocols: ['http/1.1'],
  });
  return settle(s, 'secureConnect', timeoutMs, `TLS to ${c.target.text}`, (err) => tlsFailure(c.target.text, err));
}

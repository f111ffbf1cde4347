/**
 * The proxy's configuration, read from its environment (the container contract, EGRESS.md).
 * Every problem is collected, so one run names them all; the entry point prints them to
 * stderr and exits 2 before listening.
 */
import net from 'node:net';
import { type Allowlist, parseAllowlist } from './allowlist';
import { PROXY_DEFAULTS, PROXY_ENV, type SidecarListenerConfig } from './contract';
import { type Credential, parseCredentials } from './credentials';

/** One sidecar's listener (contract.ts SidecarListenerConfig), parsed. */
export interface SidecarListener {
  readonly name: string;
  readonly port: number;
  readonly source: string;
  readonly allowlist: Allowlist;
  readonly credentials: readonly Credential[];
}

export interface ProxyConfig {
  readonly sidecars: readonly SidecarListener[];
  readonly allowlist: Allowlist;
  readonly credentials: readonly Credential[];
  readonly port: number;
  readonly listen: string;
  readonly connectTimeoutMs: number;
}

type Env = Readonly<Record<string, string | undefined>>;

function intSetting(env: Env, name: string, fallback: number, min: number, max: number, errors: string[]): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === '') return fallback;
  const text = raw.trim();
  if (!/^\d+$/.test(text) || Number(text) < min || Number(text) > max) {
    errors.push(`${name}=${JSON.stringify(raw)}: expected an integer from ${min} to ${max}`);
    return fallback;
  }
  return Number(text);
}

export function loadConfig(env: Env): { ok: true; value: ProxyConfig } | { ok: false; errors: string[] } {
  const errors: string[] = [];
  const rawAllow = env[PROXY_ENV.allow];
  let allowlist: Allowlist = { entries: [] };
  if (rawAllow === undefined) {
    errors.push(`${PROXY_ENV.allow} is not set: give host:port entries separated by commas (set it empty to deny everything)`);
  } else {
    const parsed = parseAllowlist(rawAllow);
    if (parsed.ok) allowlist = parsed.value;
    else errors.push(...parsed.errors.map((e) => `${PROXY_ENV.allow}: ${e}`));
  }
  let credentials: Credential[] = [];
  const rawCreds = env[PROXY_ENV.credentials];
  if (rawCreds !== undefined && rawCreds.trim() !== '') {
    const parsed = parseCredentials(rawCreds, PROXY_ENV.credentials);
    if (parsed.ok) credentials = parsed.value;
    else errors.push(...parsed.errors);
  }
  const sidecars = parseSidecars(env[PROXY_ENV.sidecars], errors);
  const port = intSetting(env, PROXY_ENV.port, PROXY_DEFAULTS.port, 0, 65535, errors);
  const connectTimeoutMs = intSetting(env, PROXY_ENV.connectTimeoutMs, PROXY_DEFAULTS.connectTimeoutMs, 1, 600_000, errors);
  const listen = (env[PROXY_ENV.listen] ?? '').trim() || PROXY_DEFAULTS.listen;
  if (net.isIP(listen) === 0) errors.push(`${PROXY_ENV.listen}=${JSON.stringify(listen)}: expected an IP address`);
  if (errors.length > 0) return { ok: false, errors };
  const ports = [port, ...sidecars.map((s) => s.port)];
  if (new Set(ports).size !== ports.length) errors.push(`${PROXY_ENV.sidecars}: two listeners on one port (${ports.join(', ')})`);
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: { allowlist, credentials, sidecars, port, listen, connectTimeoutMs } };
}

/** PROXY_ENV.sidecars: absent or blank is none. Errors name the entry, never a credential's value. */
function parseSidecars(raw: string | undefined, errors: string[]): SidecarListener[] {
  if (raw === undefined || raw.trim() === '') return [];
  const name = PROXY_ENV.sidecars;
  let list: unknown;
  try {
    list = JSON.parse(raw);
  } catch {
    errors.push(`${name}: not valid JSON`);
    return [];
  }
  if (!Array.isArray(list)) {
    errors.push(`${name}: expected a JSON array`);
    return [];
  }
  const out: SidecarListener[] = [];
  list.forEach((item: unknown, i) => {
    const s = item as Partial<SidecarListenerConfig> | null;
    const at = `${name}: entry ${i + 1}`;
    if (typeof s !== 'object' || s === null || typeof s.name !== 'string' || typeof s.source !== 'string' || s.source === '') {
      errors.push(`${at}: expected {name, port, source, allow, credentials}`);
      return;
    }
    if (typeof s.port !== 'number' || !Number.isInteger(s.port) || s.port < 1 || s.port > 65535) {
      errors.push(`${at} (${s.name}): port is not a TCP port`);
      return;
    }
    const allow = Array.isArray(s.allow) && s.allow.every((a) => typeof a === 'string') ? parseAllowlist(s.allow.join(',')) : undefined;
    if (!allow) return void errors.push(`${at} (${s.name}): allow is not a list of host:port entries`);
    if (!allow.ok) return void errors.push(...allow.errors.map((e) => `${at} (${s.name}): ${e}`));
    const creds = parseCredentials(JSON.stringify(s.credentials ?? []), `${at} (${s.name}) credentials`);
    if (!creds.ok) return void errors.push(...creds.errors);
    out.push({ name: s.name, port: s.port, source: s.source, allowlist: allow.value, credentials: creds.value });
  });
  return out;
}

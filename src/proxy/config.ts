/**
 * The proxy's configuration, read from its environment (the container contract, EGRESS.md).
 * Every problem is collected, so one run names them all; the entry point prints them to
 * stderr and exits 2 before listening.
 */
import net from 'node:net';
import { type Allowlist, parseAllowlist } from './allowlist';
import { PROXY_DEFAULTS, PROXY_ENV } from './contract';
import { type Credential, parseCredentials } from './credentials';

export interface ProxyConfig {
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
  const port = intSetting(env, PROXY_ENV.port, PROXY_DEFAULTS.port, 0, 65535, errors);
  const connectTimeoutMs = intSetting(env, PROXY_ENV.connectTimeoutMs, PROXY_DEFAULTS.connectTimeoutMs, 1, 600_000, errors);
  const listen = (env[PROXY_ENV.listen] ?? '').trim() || PROXY_DEFAULTS.listen;
  if (net.isIP(listen) === 0) errors.push(`${PROXY_ENV.listen}=${JSON.stringify(listen)}: expected an IP address`);
  if (errors.length > 0) return { ok: false, errors };
  return { ok: true, value: { allowlist, credentials, port, listen, connectTimeoutMs } };
}

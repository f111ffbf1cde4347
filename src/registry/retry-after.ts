/**
 * A rate-limited registry's wait. The engine passes on a registry's 429 as the text
 * `toomanyrequests: …` with no Retry-After, so berth asks the registry itself, once per failed
 * pull: a HEAD of the image's manifest with the same credential (basic, or a bearer token from the
 * registry's token service when it asks for one), trusting what the engine trusts for it (the
 * system's CAs and /etc/docker/certs.d/<host>/*.crt). Its answer's Retry-After (seconds or a date)
 * is the wait; no answer in time, or none given: undefined (the back-off clock decides). The
 * credential goes in an Authorization header only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import https from 'node:https';
import path from 'node:path';
import { rootCertificates } from 'node:tls';
import type { RegistryAuth } from '../engine/types';
import { registryOf, repositoryOf } from './reference';

const PROBE_MS = 5_000;
export const CERTS_D = '/etc/docker/certs.d';

/** The CAs the engine trusts for `host`: the system's and those in its certs.d folder. */
function casFor(host: string, certsD: string): string[] {
  const dir = path.join(certsD, host);
  let extra: string[] = [];
  try {
    extra = readdirSync(dir)
      .filter((f) => f.endsWith('.crt'))
      .map((f) => readFileSync(path.join(dir, f), 'utf8'));
  } catch {
    extra = [];
  }
  return [...rootCertificates, ...extra];
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function request(url: URL, headers: Record<string, string>, ca: string[], method: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = https.request(url, { method, headers, ca, timeout: PROBE_MS }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => {
        if (body.length < 64 * 1024) body += c;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

/** Retry-After (`120`, or an HTTP date) in ms from `now`; undefined when absent or not one. */
export function parseRetryAfter(v: string | string[] | undefined, now: number): number | undefined {
  const s = Array.isArray(v) ? v[0] : v;
  if (s === undefined || s.trim() === '') return undefined;
  if (/^\d+$/.test(s.trim())) return Number(s.trim()) * 1000;
  const at = Date.parse(s);
  return Number.isNaN(at) ? undefined : Math.max(0, at - now);
}

function basic(auth: RegistryAuth | undefined): string | undefined {
  return auth?.username !== undefined && auth.password !== undefined
    ? `Basic ${Buffer.from(`${auth.username}:${auth.password}`).toString('base64')}`
    : undefined;
}

/** The registry's Retry-After for a manifest request of `ref`, in ms; undefined when it gives none. */
export async function registryRetryAfter(
  ref: string,
  auth: RegistryAuth | undefined,
  o: { certsD?: string; now?: () => number } = {},
): Promise<number | undefined> {
  const now = o.now ?? Date.now;
  const host = registryOf(ref);
  const apiHost = host === 'docker.io' ? 'registry-1.docker.io' : host;
  let repo = repositoryOf(ref);
  repo = repo.startsWith(`${host}/`) ? repo.slice(host.length + 1) : repo.replace(/^(index\.)?docker\.io\//, '');
  if (host === 'docker.io' && !repo.includes('/')) repo = `library/${repo}`;
  const at = ref.indexOf('@');
  const name = at >= 0 ? ref.slice(0, at) : ref;
  const colon = name.lastIndexOf(':');
  const tag = at >= 0 ? ref.slice(at + 1) : colon > name.lastIndexOf('/') ? name.slice(colon + 1) : 'latest';
  const url = new URL(`https://${apiHost}/v2/${repo}/manifests/${tag}`);
  const ca = casFor(host, o.certsD ?? CERTS_D);
  const accept = 'application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.index.v1+json';
  try {
    const b = basic(auth);
    let a = await request(url, { accept, ...(b ? { authorization: b } : {}) }, ca, 'HEAD');
    if (a.status === 401) {
      const challenge = String(a.headers['www-authenticate'] ?? '');
      const bearer = /^Bearer\s+(.*)$/i.exec(challenge);
      if (bearer) {
        const params = Object.fromEntries([...(bearer[1] ?? '').matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
        if (params.realm) {
          const tokenUrl = new URL(params.realm);
          if (params.service) tokenUrl.searchParams.set('service', params.service);
          tokenUrl.searchParams.set('scope', params.scope ?? `repository:${repo}:pull`);
          const t = await request(tokenUrl, b ? { authorization: b } : {}, casFor(tokenUrl.host, o.certsD ?? CERTS_D), 'GET');
          const token = (JSON.parse(t.body || '{}') as { token?: string; access_token?: string }).token ?? undefined;
          if (token) a = await request(url, { accept, authorization: `Bearer ${token}` }, ca, 'HEAD');
        }
      }
    }
    return a.status === 429 ? parseRetryAfter(a.headers['retry-after'], now()) : undefined;
  } catch {
    return undefined;
  }
}

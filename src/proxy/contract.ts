/**
 * The egress proxy's container contract, in one place for both sides: the proxy reads these
 * names, and berth's planner (which runs the proxy as a sidecar) writes them and waits for the
 * `listening` line. A user's own proxy image speaks the same contract (docs/EGRESS.md).
 */

/** The image scripts/images.sh builds. */
export const PROXY_IMAGE = 'berth/egress-proxy:local';

/** Environment variable names the proxy reads. */
export const PROXY_ENV = {
  /** Comma-separated host:port entries; empty denies everything; unset is an error. */
  allow: 'BERTH_EGRESS_ALLOW',
  port: 'BERTH_PROXY_PORT',
  listen: 'BERTH_PROXY_LISTEN',
  connectTimeoutMs: 'BERTH_PROXY_CONNECT_TIMEOUT_MS',
  /**
   * Injected credentials, a JSON array of CredentialConfig (optional). Holds secret values: berth
   * sets it when it creates the proxy, from the spec's secrets, and nothing ever prints it.
   */
  credentials: 'BERTH_PROXY_CREDENTIALS',
  /**
   * Listeners of the attempt's sidecars, a JSON array of SidecarListenerConfig (optional): each on
   * its own port, serving only connections from its sidecar, with its own allowlist and credentials.
   */
  sidecars: 'BERTH_PROXY_SIDECARS',
} as const;

/** One sidecar's own way out: a port of the proxy that serves only connections from `source`. */
export interface SidecarListenerConfig {
  /** The sidecar's name (its alias), written as `sidecar` on its exchanges' log lines. */
  readonly name: string;
  readonly port: number;
  /** The sidecar's address, or a name that resolves to it (its container name): other clients get 403. */
  readonly source: string;
  /** host:port entries, as PROXY_ENV.allow. */
  readonly allow: readonly string[];
  readonly credentials: readonly CredentialConfig[];
}

/**
 * One injected credential as the proxy reads it: plain-HTTP requests for `target`'s host go on
 * over TLS to `target`, verified against `ca` (PEM) or the system's roots, with header `header`
 * set to `value` (any the client sent is dropped).
 */
export interface CredentialConfig {
  /** Exact `host:port`. */
  readonly target: string;
  readonly header: string;
  readonly value: string;
  readonly ca?: string;
}

export const PROXY_DEFAULTS = {
  port: 3128,
  listen: '0.0.0.0',
  connectTimeoutMs: 10_000,
} as const;

/** Exit codes of the proxy process. */
export const PROXY_EXIT = {
  /** Stopped by SIGTERM/SIGINT. */
  ok: 0,
  /** Could not listen (address in use, ...). */
  listenFailed: 1,
  /** Bad configuration; nothing was opened. */
  badConfig: 2,
} as const;

export interface ListeningLine {
  readonly event: 'listening';
  readonly port: number;
  readonly allow: readonly string[];
  /** The credentialed `host:port` targets (never a value); absent in proxies without credentials. */
  readonly credentials?: readonly string[];
  /** The sidecars' listeners; absent when there are none. */
  readonly sidecars?: readonly { name: string; port: number; allow: readonly string[]; credentials?: readonly string[] }[];
}

/** Recognizes the readiness line (one stdout line); anything else gives undefined. */
export function parseListeningLine(line: string): ListeningLine | undefined {
  let v: unknown;
  try {
    v = JSON.parse(line);
  } catch {
    return undefined;
  }
  const o = v as Partial<ListeningLine> | null;
  if (typeof o !== 'object' || o === null || o.event !== 'listening') return undefined;
  if (typeof o.port !== 'number' || !Array.isArray(o.allow) || !o.allow.every((a) => typeof a === 'string')) return undefined;
  return { event: 'listening', port: o.port, allow: o.allow };
}

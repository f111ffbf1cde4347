/**
 * What the request handlers share: the allowlist, the open exchanges (for logging and
 * shutdown), and how to reach upstream. Built once by server.ts; handlers hold no other state.
 */
import { type Allowlist, findAllowing } from './allowlist';
import type { Credential } from './credentials';
import type { Dialing } from './dial';
import type { Exchanges } from './exchange';
import type { Target } from './target';

export interface ProxyContext {
  readonly allowlist: Allowlist;
  /** Injected credentials (credentials.ts): their hosts are reached only through plain HTTP. */
  readonly credentials: readonly Credential[];
  /** The deadline of a TLS handshake to a credential's upstream (the connect timeout). */
  readonly tlsTimeoutMs: number;
  readonly exchanges: Exchanges;
  /** The sidecar this listener serves; undefined: the attempt's own. */
  readonly sidecar?: string;
  readonly dial: (host: string, port: number) => Dialing;
}

/** The reason logged and returned with a 403. */
export function deniedReason(target: Target): string {
  return `${target.text} is not in the egress allowlist`;
}

/** The allowlist decision: on the normalized host:port the client asked for, nothing else. */
export function isAllowed(ctx: ProxyContext, target: Target): boolean {
  return findAllowing(ctx.allowlist, target, target.port) !== undefined;
}

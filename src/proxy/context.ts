/**
 * What the request handlers share: the allowlist, the open exchanges (for logging and
 * shutdown), and how to reach upstream. Built once by server.ts; handlers hold no other state.
 */
import { type Allowlist, findAllowing } from './allowlist';
import type { Dialing } from './dial';
import type { Exchanges } from './exchange';
import type { Target } from './target';

export interface ProxyContext {
  readonly allowlist: Allowlist;
  readonly exchanges: Exchanges;
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

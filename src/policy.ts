/**
 * What an instance's flags decide for every run: one object, built once from the command line
 * (cli/context.ts runPolicy), carried whole by the pass's configuration and the planner's input
 * into the desired state. None of it is part of a spec's hash: a new value applies to new runs.
 */
export interface RunPolicy {
  /** `--default-deadline` (seconds): the deadline of a run whose spec sets no `deadlineSeconds`. */
  defaultDeadlineSeconds?: number;
  /** `--default-disk` (bytes): the disk limit of a run whose spec sets no `resources.disk`. */
  defaultDiskBytes?: number;
  /** `--infra-retries`: re-runs after infrastructure deaths (EngineRestarted, StartFailed), per spec hash; default DEFAULTS.infraRetries. */
  infraRetries?: number;
  /** `--retry-backoff` (ms): the first back-off between a failed run and its retry (doubling, capped at 6 min); default 10 s. */
  retryBaseMs?: number;
  /** `--egress-proxy-image`, and `--egress-network`: an existing network the proxy reaches out through (default: one per attempt). */
  egress?: { proxyImage?: string; network?: string };
}

/** The policy as a cache key: two policies with the same key give the same desired states. */
export function policyKey(p: RunPolicy): string {
  return [p.defaultDeadlineSeconds ?? '', p.defaultDiskBytes ?? '', p.egress?.proxyImage ?? '', p.egress?.network ?? ''].join('\0');
}

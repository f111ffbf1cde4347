/**
 * Engine errors classified by HTTP status code (never by message text), as docker-modem
 * reports them in `statusCode`; an engine that cannot be reached or does not answer in time is
 * an EngineUnreachableError, whose message is the one berth prints for it everywhere.
 */
import { ENGINE_API } from '../constants';

export type EngineErrorKind = 'not-found' | 'conflict' | 'not-modified' | 'unavailable' | 'timeout' | 'other';

/**
 * The engine cannot be reached (`unavailable`: refused, no socket, reset) or did not answer a
 * call within its deadline (`timeout`). `address` names where berth looked, without credentials.
 */
export class EngineUnreachableError extends Error {
  readonly code: 'ENGINE_UNREACHABLE' | 'ENGINE_TIMEOUT';

  constructor(
    readonly kind: 'unavailable' | 'timeout',
    readonly address: string,
    /** The call, as `containers.list`. */
    readonly op: string,
    detail: { cause?: unknown; ms?: number },
  ) {
    super(engineDownMessage(kind, address, op, detail), detail.cause !== undefined ? { cause: detail.cause } : undefined);
    this.name = 'EngineUnreachableError';
    this.code = kind === 'timeout' ? 'ENGINE_TIMEOUT' : 'ENGINE_UNREACHABLE';
  }
}

/** What to do, at the end of the one message (every error names what to do). */
export const UNAVAILABLE_HINT = 'start the engine, or point DOCKER_HOST at one that runs';
export const TIMEOUT_HINT = 'it is overloaded or hung; check it, or give it longer with --engine-timeout';

/** The one message for an engine that cannot be reached or does not answer. */
function engineDownMessage(kind: 'unavailable' | 'timeout', address: string, op: string, detail: { cause?: unknown; ms?: number }): string {
  if (kind === 'timeout') {
    return `the Docker engine at ${address} did not answer ${op} within ${seconds(detail.ms ?? 0)} (--engine-timeout): ${TIMEOUT_HINT}`;
  }
  const cause = detail.cause instanceof Error ? detail.cause.message : String(detail.cause ?? 'no connection');
  return `the Docker engine at ${address} cannot be reached: ${cause.replace(/\s+/g, ' ').trim()}; ${UNAVAILABLE_HINT}`;
}

function seconds(ms: number): string {
  return ms < 1000 ? `${ms} ms` : `${Number((ms / 1000).toFixed(1))} s`;
}

export function statusOf(err: unknown): number | undefined {
  if (err && typeof err === 'object' && 'statusCode' in err) {
    const code = (err as { statusCode?: unknown }).statusCode;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

export function classify(err: unknown): EngineErrorKind {
  if (err instanceof EngineUnreachableError) return err.kind;
  const status = statusOf(err);
  if (status === 404) return 'not-found';
  if (status === 409) return 'conflict';
  if (status === 304) return 'not-modified';
  if (status === undefined && isConnectionError(err)) return 'unavailable';
  return 'other';
}

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ENOENT', 'ECONNRESET', 'EPIPE', 'EACCES', 'ETIMEDOUT']);

function isConnectionError(err: unknown): boolean {
  const code = err && typeof err === 'object' && 'code' in err ? (err as { code?: unknown }).code : undefined;
  return typeof code === 'string' && CONNECTION_CODES.has(code);
}

export const isNotFound = (err: unknown): boolean => classify(err) === 'not-found';
export const isConflict = (err: unknown): boolean => classify(err) === 'conflict';
export const isNotModified = (err: unknown): boolean => classify(err) === 'not-modified';
export const isUnavailable = (err: unknown): boolean => classify(err) === 'unavailable';
export const isTimeout = (err: unknown): boolean => classify(err) === 'timeout';
/** The engine is not there for berth: it cannot be reached, or it does not answer in time. */
export const isEngineDown = (err: unknown): boolean => isUnavailable(err) || isTimeout(err);

/** A short, single-line description of an engine error, for status reasons and logs. */
export function describeEngineError(err: unknown): string {
  if (err instanceof EngineUnreachableError) return err.message;
  const status = statusOf(err);
  let msg = err instanceof Error ? err.message : String(err);
  // docker-modem prefixes "(HTTP code 409) unexpected - " and appends the JSON body; keep the body's message.
  const body = (err as { json?: { message?: unknown } } | undefined)?.json;
  if (body && typeof body.message === 'string') msg = body.message;
  msg = msg.replace(/\s+/g, ' ').trim();
  return status !== undefined ? `${msg} (HTTP ${status})` : msg;
}

/** Why the engine's first call (its ping) failed, as berth prints it. */
export function pingFailure(err: unknown): string {
  return isEngineDown(err) ? describeEngineError(err) : `the Docker engine does not work: ${describeEngineError(err)}`;
}

/** An engine whose API is older than the oldest berth is tested with (src/engine/docker/api-version.ts refuses it). */
export class EngineTooOldError extends Error {
  readonly code = 'ENGINE_TOO_OLD';
  constructor(
    readonly address: string,
    readonly engineVersion: string,
    readonly apiVersion: string,
  ) {
    super(
      `the Docker engine at ${address} is ${engineVersion || 'of an unknown version'} (API ${apiVersion || 'unknown'}), older than the oldest engine berth is tested with, ${ENGINE_API.oldestEngine} (API ${ENGINE_API.oldest}): upgrade the engine`,
    );
    this.name = 'EngineTooOldError';
  }
}

/** Thrown by the read-only engine when something tries to change the engine (berth plan). */
export class MutationRefusedError extends Error {
  readonly code = 'MUTATION_REFUSED';
  constructor(readonly operation: string) {
    super(`refused mutating engine call ${operation}: this engine is read-only (berth plan changes nothing)`);
    this.name = 'MutationRefusedError';
  }
}

/** Thrown for engine calls given up because berth is stopping (see Engine.abandon). */
export class EngineCallAbandonedError extends Error {
  readonly code = 'ENGINE_CALL_ABANDONED';
  constructor(
    readonly op: string,
    reason: string,
  ) {
    super(`engine call ${op} given up: ${reason}`);
    this.name = 'EngineCallAbandonedError';
  }
}

/**
 * The backend refuses an attempt (for the swarm: no node enforces what the attempt needs): the
 * attempt ends Blocked with `reason` and this message, never runs weakened. Not an engine fault.
 */
export class BackendRefusedError extends Error {
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
    this.name = 'BackendRefusedError';
  }
}

/** What kind of failure a pull met (docs/CONTRACT.md "Images from registries"). */
export type PullErrorKind = 'unauthorized' | 'not-found' | 'rate-limited' | 'unreachable' | 'other';

/**
 * A pull that failed: its kind (from the engine's status code, then the registry's error code the
 * engine passes on as the prefix of its message: `unauthorized:`, `denied:`, `toomanyrequests:`),
 * the engine's text, one line, bounded (no credential is ever in it: the engine never has one in
 * its messages; the puller redacts all the same), and, for a rate limit, the registry's wait when
 * one is known.
 */
export class ImagePullError extends Error {
  readonly code = 'IMAGE_PULL_FAILED';
  constructor(
    readonly kind: PullErrorKind,
    readonly ref: string,
    /** The engine's (or the registry's) words, one line, at most PULL_TEXT_MAX characters. */
    readonly text: string,
    /** Whether the engine said so inside a stream it had begun with 200 (an `errorDetail`). */
    readonly inStream: boolean,
    readonly retryAfterMs?: number,
  ) {
    super(`pull of ${ref} failed (${kind}): ${text}`);
    this.name = 'ImagePullError';
  }
}

/** How much of a registry's error text berth keeps. */
export const PULL_TEXT_MAX = 300;

/** One line of at most PULL_TEXT_MAX characters. */
export function boundedText(s: string): string {
  const one = s.replace(/\s+/g, ' ').trim();
  return one.length > PULL_TEXT_MAX ? `${one.slice(0, PULL_TEXT_MAX - 1)}…` : one;
}

/**
 * The kind of a pull's failure: by the engine's status code first (404: the manifest or the
 * repository is not there), then by the registry's error code, which the engine passes on as the
 * first word of its message (distribution's errcode values: UNAUTHORIZED, DENIED, TOOMANYREQUESTS),
 * then by what the engine's own client says of the connection. Anything else is `other`.
 */
export function classifyPull(status: number | undefined, message: string): PullErrorKind {
  if (status === 404) return 'not-found';
  const m = message.toLowerCase();
  if (/\b(unauthorized|denied):|no basic auth credentials|pull access denied|authentication required/.test(m)) return 'unauthorized';
  if (/\btoomanyrequests:|too many requests|rate limit/.test(m)) return 'rate-limited';
  if (/manifest unknown|name unknown|not found: manifest/.test(m)) return 'not-found';
  if (/connection refused|no such host|i\/o timeout|tls handshake timeout|no route to host|network is unreachable|connection reset|dial tcp/.test(m))
    return 'unreachable';
  return 'other';
}

/**
 * Engine errors classified by HTTP status code (never by message text), as docker-modem
 * reports them in `statusCode`.
 */

export type EngineErrorKind = 'not-found' | 'conflict' | 'not-modified' | 'unavailable' | 'other';

export function statusOf(err: unknown): number | undefined {
  if (err && typeof err === 'object' && 'statusCode' in err) {
    const code = (err as { statusCode?: unknown }).statusCode;
    if (typeof code === 'number') return code;
  }
  return undefined;
}

export function classify(err: unknown): EngineErrorKind {
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

/** A short, single-line description of an engine error, for status reasons and logs. */
export function describeEngineError(err: unknown): string {
  const status = statusOf(err);
  let msg = err instanceof Error ? err.message : String(err);
  // docker-modem prefixes "(HTTP code 409) unexpected - " and appends the JSON body; keep the body's message.
  const body = (err as { json?: { message?: unknown } } | undefined)?.json;
  if (body && typeof body.message === 'string') msg = body.message;
  msg = msg.replace(/\s+/g, ' ').trim();
  return status !== undefined ? `${msg} (HTTP ${status})` : msg;
}

/** Thrown by the read-only engine when something tries to change the engine (berth plan). */
export class MutationRefusedError extends Error {
  readonly code = 'MUTATION_REFUSED';
  constructor(readonly operation: string) {
    super(`refused mutating engine call ${operation}: this engine is read-only (berth plan changes nothing)`);
    this.name = 'MutationRefusedError';
  }
}

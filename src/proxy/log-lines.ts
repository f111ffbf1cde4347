/**
 * The proxy's stdout contract: one JSON object per line.
 *   {"event":"listening","port":N,"allow":[...]}   once, before any connection is served
 *   {"ts":...,"event":"decision",...}              once per request, when the proxy answers it
 *   {"ts":...,"event":"close",...}                 once per allowed request, when it ends
 * Fields are written in a fixed order. Only the method, the normalized host:port and the
 * proxy's own reasons are ever logged: never a header value, a path or a query string.
 */

export type LineSink = (line: string) => void;

export type LogEvent = 'decision' | 'close';

export interface ExchangeRecord {
  /** Per-process sequence number; a close line carries the id of its decision line. */
  readonly id: number;
  readonly method: string;
  /** Normalized `host:port`, or "" when the request named no valid target. */
  readonly target: string;
  readonly allowed: boolean;
  readonly status: number;
  readonly reason: string;
  /** Bytes client → upstream: the tunnelled stream, or the request body. */
  readonly bytesUp: number;
  /** Bytes upstream → client: the tunnelled stream, or the response body. */
  readonly bytesDown: number;
  readonly durationMs: number;
  /** The sidecar whose listener served the exchange; undefined: the attempt's own. */
  readonly sidecar?: string;
}

export interface ListenerLine {
  readonly port: number;
  readonly allow: readonly string[];
  /** The credentialed targets (never a value). */
  readonly credentials: readonly string[];
}

/** The readiness line: the attempt's listener, and the sidecars' when there are some; credentials only when there are some. */
export function listeningLine(
  port: number,
  allow: readonly string[],
  credentials: readonly string[] = [],
  sidecars: readonly (ListenerLine & { name: string })[] = [],
): string {
  const creds = (c: readonly string[]) => (c.length > 0 ? { credentials: c } : {});
  return JSON.stringify({
    event: 'listening',
    port,
    allow,
    ...creds(credentials),
    ...(sidecars.length > 0 ? { sidecars: sidecars.map((s) => ({ name: s.name, port: s.port, allow: s.allow, ...creds(s.credentials) })) } : {}),
  });
}

export function exchangeLine(event: LogEvent, ts: number, r: ExchangeRecord): string {
  return JSON.stringify({
    ts: new Date(ts).toISOString(),
    event,
    id: r.id,
    method: r.method,
    target: r.target,
    allowed: r.allowed,
    status: r.status,
    reason: r.reason,
    bytesUp: r.bytesUp,
    bytesDown: r.bytesDown,
    durationMs: r.durationMs,
    ...(r.sidecar !== undefined ? { sidecar: r.sidecar } : {}),
  });
}

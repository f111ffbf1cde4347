/**
 * Opening the upstream TCP connection, with one deadline covering name lookup and connect.
 * Failures become data: a status for the client (502 cannot reach, 504 timed out) and a short
 * reason naming the target and the system error code, never anything the client sent.
 */
import net from 'node:net';

export interface DialOptions {
  readonly timeoutMs: number;
  /** Name lookup; tests inject one. Default: the system resolver. */
  readonly lookup?: net.LookupFunction;
}

export interface DialFailure {
  readonly status: 502 | 504;
  readonly reason: string;
}

export interface Dialing {
  /** Resolves with the connected socket (half-open allowed), or rejects with a DialFailure. */
  readonly socket: Promise<net.Socket>;
  /** Gives up: the pending connection is destroyed and `socket` never settles. */
  cancel(): void;
}

const DNS_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'EAI_FAIL', 'EAI_NONAME', 'EAI_NODATA', 'ENODATA']);

function codeOf(err: unknown): string {
  const e = err as { code?: unknown; errors?: unknown[] };
  if (typeof e?.code === 'string') return e.code;
  // Happy-eyeballs failures arrive as an AggregateError of the per-address errors.
  if (Array.isArray(e?.errors) && e.errors.length > 0) return codeOf(e.errors[0]);
  return 'EUNKNOWN';
}

/** Maps a connect error to what the client is told. */
export function classifyDialError(target: string, err: unknown): DialFailure {
  const code = codeOf(err);
  if (DNS_CODES.has(code)) return { status: 502, reason: `DNS lookup failed for ${target} (${code})` };
  if (code === 'ECONNREFUSED') return { status: 502, reason: `connection refused by ${target}` };
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return { status: 502, reason: `no route to ${target} (${code})` };
  if (code === 'ETIMEDOUT') return { status: 504, reason: `connect to ${target} timed out (${code})` };
  return { status: 502, reason: `cannot connect to ${target} (${code})` };
}

export function dial(host: string, port: number, opts: DialOptions): Dialing {
  const target = `${host}:${port}`;
  let socket: net.Socket | undefined;
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  const promise = new Promise<net.Socket>((resolve, reject) => {
    const s = net.connect({ host, port, allowHalfOpen: true, ...(opts.lookup ? { lookup: opts.lookup } : {}) });
    socket = s;
    timer = setTimeout(() => {
      s.destroy();
      if (!cancelled) reject({ status: 504, reason: `connect to ${target} timed out after ${opts.timeoutMs} ms` } satisfies DialFailure);
    }, opts.timeoutMs);
    const onError = (err: unknown): void => {
      clearTimeout(timer);
      s.destroy();
      if (!cancelled) reject(classifyDialError(target, err));
    };
    s.once('error', onError);
    s.once('connect', () => {
      clearTimeout(timer);
      s.off('error', onError);
      if (cancelled) s.destroy();
      else resolve(s);
    });
  });
  // A rejection nobody awaits any more (after cancel) must not crash the process.
  promise.catch(() => undefined);
  return {
    socket: promise,
    cancel() {
      cancelled = true;
      clearTimeout(timer);
      socket?.destroy();
    },
  };
}

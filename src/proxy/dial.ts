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
  let s: net.Socket;
  try {
    s = net.connect({ host, port, allowHalfOpen: true, ...(opts.lookup ? { lookup: opts.lookup } : {}) });
  } catch (err) {
    // refused at once (a port out of range): a failure like any other, never a throw
    const failed = Promise.reject(classifyDialError(target, err));
    failed.catch(() => undefined);
    return { socket: failed, cancel: () => undefined };
  }
  return settle(s, 'connect', opts.timeoutMs, `connect to ${target}`, (err) => classifyDialError(target, err));
}

/**
 * `s` once it emits `ready` (connect, secureConnect), cancellable: rejected with a DialFailure
 * (`failure` of its error, 504 past `timeoutMs`, `what` naming it), destroyed on any failure and
 * on a cancel. A rejection nobody awaits any more (after cancel) does not crash the process.
 */
export function settle<S extends net.Socket>(
  s: S,
  ready: 'connect' | 'secureConnect',
  timeoutMs: number,
  what: string,
  failure: (err: unknown) => DialFailure,
): { socket: Promise<S>; cancel(): void } {
  let timer: NodeJS.Timeout | undefined;
  let cancelled = false;
  const promise = new Promise<S>((resolve, reject) => {
    timer = setTimeout(() => {
      s.destroy();
      if (!cancelled) reject({ status: 504, reason: `${what} timed out after ${timeoutMs} ms` } satisfies DialFailure);
    }, timeoutMs);
    const onError = (err: unknown): void => {
      clearTimeout(timer);
      s.destroy();
      if (!cancelled) reject(failure(err));
    };
    s.once('error', onError);
    s.once(ready, () => {
      clearTimeout(timer);
      s.off('error', onError);
      if (cancelled) s.destroy();
      else resolve(s);
    });
  });
  promise.catch(() => undefined);
  return {
    socket: promise,
    cancel() {
      cancelled = true;
      clearTimeout(timer);
      s.destroy();
    },
  };
}

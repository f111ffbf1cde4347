/**
 * Deadlines for engine calls: no call waits on the engine forever.
 *
 * Every request dockerode makes goes through its modem's `dial`. The hook below gives each
 * request the AbortSignal of the call that made it (dockerode forwards a signal for some
 * methods, not for all: network and image inspect take none), so a call past its deadline
 * destroys its request, and the call rejects with an EngineUnreachableError of kind `timeout`.
 * dockerode calls `dial` synchronously from the method, which is what lets the hook see the
 * signal of the call under way.
 *
 * Three kinds of deadline:
 * - the whole call (the engine's budget, `--engine-timeout`): lists, inspects, create, start,
 *   remove, connect, ping, version...; a call may ask for more (stop: its grace period too);
 * - idle: the budget runs from the last sign of progress (putArchive: the last chunk of the
 *   archive the engine read), so a large fixture is never cut off while it still flows;
 * - streams (events, logs -f): the engine must answer (send its headers) within the budget;
 *   the stream then lasts as long as its reader wants.
 *
 * docker-modem's own `timeout` option is not used: it is an idle timeout on the socket of every
 * request, so it also cuts a quiet event stream or log, and what it reports (a reset socket)
 * cannot be told from an engine that went away.
 */
import type Dockerode from 'dockerode';
import { setMaxListeners } from 'node:events';
import { Readable, Transform, pipeline } from 'node:stream';
import { EngineCallAbandonedError, EngineUnreachableError, isUnavailable } from '../errors';

type Dial = (options: { abortSignal?: AbortSignal }, callback: unknown) => unknown;

/** The signal of the call being started (set only while its dockerode method runs). */
let ambient: AbortSignal | undefined;
const hooked = new WeakSet<object>();

function hookDial(docker: Dockerode): void {
  const modem = docker.modem as unknown as { dial: Dial };
  if (hooked.has(modem)) return;
  hooked.add(modem);
  const dial = modem.dial;
  modem.dial = function (this: unknown, options, callback) {
    if (ambient && !options.abortSignal) options.abortSignal = ambient;
    return dial.call(this, options, callback);
  };
}

export interface CallOptions {
  /** This call's budget; default: the engine's. */
  ms?: number;
  /** The budget runs from the last `progress()` instead of from the start. */
  idle?: boolean;
  /** A stream: the deadline ends once the call resolves (the engine answered). */
  stream?: boolean;
  /** The caller's: aborts the call (and a stream it returned). */
  signal?: AbortSignal;
  /** Runs before the gate has opened (the gate's own call: the API version's negotiation). */
  ungated?: boolean;
}

export class BoundedCalls {
  private readonly closing = new AbortController();
  private gateFn: ((op: string) => Promise<void>) | undefined;
  private gateOpening: Promise<void> | undefined;
  private gateOpen = false;

  constructor(
    docker: Dockerode,
    /** The budget of a call, in ms. */
    readonly timeoutMs: number,
    /** Where the engine is, for messages (no credentials). */
    readonly address: string,
  ) {
    hookDial(docker);
    // every call in flight listens on it
    setMaxListeners(0, this.closing.signal);
  }

  /** Puts the calls of another client of the same engine under these deadlines too. */
  attach(docker: Dockerode): void {
    hookDial(docker);
  }

  /**
   * Every call waits for `open` to have succeeded once (the API version's negotiation, made by
   * the first call under its name, shared by the calls that come meanwhile). A failure fails the
   * calls that waited for it, and the next call tries again.
   */
  gate(open: (op: string) => Promise<void>): void {
    this.gateFn = open;
  }

  private opened(op: string): Promise<void> {
    this.gateOpening ??= (this.gateFn ?? (() => Promise.resolve()))(op).then(
      () => {
        this.gateOpen = true;
      },
      (err: unknown) => {
        this.gateOpening = undefined;
        throw err;
      },
    );
    return this.gateOpening;
  }

  /** Gives up every call in flight (each rejects with EngineCallAbandonedError) and refuses new ones. */
  abandon(reason: string): void {
    this.closing.abort(reason);
  }

  /** A connection error (refused, no socket, reset) as the engine's EngineUnreachableError; others as they are. */
  classified(op: string, err: unknown): unknown {
    return isUnavailable(err) && !(err instanceof EngineUnreachableError) ? new EngineUnreachableError('unavailable', this.address, op, { cause: err }) : err;
  }

  /**
   * Runs one engine call under a deadline. `start` receives `progress`, which restarts an
   * idle deadline.
   */
  run<T>(op: string, start: (progress: () => void) => Promise<T>, o: CallOptions = {}): Promise<T> {
    if (this.gateFn && !this.gateOpen && !o.ungated) return this.opened(op).then(() => this.run(op, start, o));
    const closing = this.closing.signal;
    if (closing.aborted) return Promise.reject(new EngineCallAbandonedError(op, String(closing.reason)));
    const ms = o.ms ?? this.timeoutMs;
    const ac = new AbortController();
    return new Promise<T>((resolve, reject) => {
      let settled = false;
      let timer: NodeJS.Timeout | undefined;
      const onClose = () => fail(new EngineCallAbandonedError(op, String(closing.reason)));
      const onCaller = () => fail(o.signal?.reason instanceof Error ? o.signal.reason : new Error(`engine call ${op} aborted`));
      const release = () => {
        clearTimeout(timer);
        closing.removeEventListener('abort', onClose);
        o.signal?.removeEventListener('abort', onCaller);
      };
      const fail = (err: Error) => {
        if (settled) return;
        settled = true;
        release();
        reject(err);
        ac.abort(err);
      };
      const arm = () => {
        if (settled) return;
        clearTimeout(timer);
        timer = setTimeout(() => fail(new EngineUnreachableError('timeout', this.address, op, { ms })), ms);
      };
      closing.addEventListener('abort', onClose, { once: true });
      if (o.signal?.aborted) return onCaller();
      o.signal?.addEventListener('abort', onCaller, { once: true });
      arm();
      let p: Promise<T>;
      const prev = ambient;
      ambient = ac.signal;
      try {
        p = start(o.idle ? arm : () => undefined);
      } catch (err) {
        p = Promise.reject(err as Error);
      } finally {
        ambient = prev;
      }
      p.then(
        (v) => {
          if (settled) {
            // Answered after the deadline: a stream nobody will read is closed.
            if (v instanceof Readable) v.destroy();
            return;
          }
          settled = true;
          release();
          // A stream keeps going until its reader or the caller's signal ends it.
          if (o.stream && o.signal && v instanceof Readable) {
            const end = () => v.destroy();
            o.signal.addEventListener('abort', end, { once: true });
            v.once('close', () => o.signal?.removeEventListener('abort', end));
          }
          resolve(v);
        },
        (err: unknown) => {
          if (settled) return;
          settled = true;
          release();
          reject(this.classified(op, err));
        },
      );
    });
  }
}

/**
 * A request body that reports progress: `progress()` is called for each chunk the request
 * takes (it takes them only as fast as the engine reads). A buffer goes in 64 KiB chunks.
 */
export function withProgress(body: Buffer | Readable, progress: () => void): Readable {
  const source = Buffer.isBuffer(body) ? Readable.from(chunks(body, 64 * 1024), { objectMode: false }) : body;
  const counted = new Transform({
    transform(chunk: Buffer, _enc, cb) {
      progress();
      cb(null, chunk);
    },
  });
  pipeline(source, counted, () => undefined);
  return counted;
}

function* chunks(buf: Buffer, size: number): Generator<Buffer> {
  for (let i = 0; i < buf.length; i += size) yield buf.subarray(i, i + size);
}

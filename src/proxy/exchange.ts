/**
 * One request through the proxy, from its request line to its end, and the registry of those
 * still open. An exchange writes exactly one `decision` line (when the proxy answers: a
 * refusal, an upstream failure, `200 Connection Established`, or the upstream's status) and,
 * if it was allowed, exactly one `close` line when it ends, with the final byte counts.
 */
import { exchangeLine, type ExchangeRecord, type LineSink } from './log-lines';

/** Status logged for an allowed request whose client left before the proxy could answer. */
export const CLIENT_CLOSED = 499;

export class Exchange {
  target = '';
  allowed = false;
  bytesUp = 0;
  bytesDown = 0;
  private status = 0;
  private reason = '';
  private decided = false;
  private ended = false;

  constructor(
    private readonly registry: Exchanges,
    readonly id: number,
    readonly method: string,
    private readonly start: number,
    private readonly sidecar?: string,
  ) {}

  /** True once the decision line is written. */
  get answered(): boolean {
    return this.decided;
  }

  /** Refuses the request: writes its only line. */
  refuse(status: number, reason: string): void {
    this.allowed = false;
    this.decide(status, reason);
    this.end();
  }

  /** Writes the decision line: the status the proxy answered the client with. Once. */
  decide(status: number, reason: string): void {
    if (this.decided) return;
    this.decided = true;
    this.status = status;
    this.reason = reason;
    this.registry.write('decision', this.record());
  }

  /** Ends an allowed exchange: writes its close line (and the decision line if still due). Once. */
  finish(reason: string): void {
    if (this.ended) return;
    const why = this.registry.stopping ? 'proxy shutting down' : reason;
    this.decide(CLIENT_CLOSED, why);
    this.reason = why;
    this.registry.write('close', this.record());
    this.end();
  }

  private end(): void {
    this.ended = true;
    this.registry.release(this);
  }

  private record(): ExchangeRecord {
    return {
      id: this.id,
      method: this.method,
      target: this.target,
      allowed: this.allowed,
      status: this.status,
      reason: this.reason,
      bytesUp: this.bytesUp,
      bytesDown: this.bytesDown,
      durationMs: Math.max(0, this.registry.now() - this.start),
      ...(this.sidecar !== undefined ? { sidecar: this.sidecar } : {}),
    };
  }
}

export class Exchanges {
  /** Set when the proxy shuts down: exchanges cut short say so in their close line. */
  stopping = false;
  private nextId = 1;
  private readonly open = new Set<Exchange>();
  private waiters: (() => void)[] = [];

  constructor(
    private readonly sink: LineSink,
    readonly now: () => number = Date.now,
  ) {}

  /** `sidecar`: the sidecar whose listener took the request (logged with it). */
  begin(method: string, sidecar?: string): Exchange {
    const ex = new Exchange(this, this.nextId++, method, this.now(), sidecar);
    this.open.add(ex);
    return ex;
  }

  write(event: 'decision' | 'close', record: ExchangeRecord): void {
    this.sink(exchangeLine(event, this.now(), record));
  }

  release(ex: Exchange): void {
    this.open.delete(ex);
    if (this.open.size === 0) {
      const waiters = this.waiters;
      this.waiters = [];
      waiters.forEach((w) => w());
    }
  }

  get size(): number {
    return this.open.size;
  }

  /** Resolves once no exchange is open. */
  idle(): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }
}

/**
 * Whether the engine answers, as the controller's own engine calls find it: down from the first
 * call that cannot reach the engine or gets no answer within its deadline, up again at the first
 * call the engine answers (an HTTP error is an answer too). Each change is logged once: a
 * warning with the reason when it goes, "engine reachable again after N s" when it is back.
 * Readiness (/readyz) reports it; a stopping controller gives up the calls of an engine that is down.
 */
import { describeEngineError, isEngineDown, statusOf } from '../engine/errors';
import type { CallListener } from '../engine/wrap';
import type { Clock } from '../util/clock';
import type { Logger } from '../util/log';

export class EngineHealth {
  private downSince: number | undefined;
  private reason = '';
  private waiters: (() => void)[] = [];

  constructor(
    private readonly log: Logger,
    private readonly clock: Clock,
    /** Told of each change (the berth_engine_up gauge). */
    private readonly onChange: (up: boolean) => void = () => undefined,
  ) {}

  readonly listener: CallListener = ({ error }) => this.record(error);

  /** One call's outcome: undefined when it succeeded. */
  record(error?: unknown): void {
    if (error === undefined || statusOf(error) !== undefined) this.up();
    else if (isEngineDown(error)) this.down(error);
    // other failures (a call given up, refused by a wrapper) say nothing about the engine
  }

  get healthy(): boolean {
    return this.downSince === undefined;
  }

  /** Why the engine is not healthy, for /readyz; undefined when it is. */
  problem(): string | undefined {
    if (this.downSince === undefined) return undefined;
    return `${this.reason} (for ${Math.round((this.clock.now() - this.downSince) / 1000)} s)`;
  }

  /** Resolves as soon as the engine is down (at once if it is). */
  whenDown(): Promise<void> {
    if (this.downSince !== undefined) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  private down(error: unknown): void {
    this.reason = describeEngineError(error);
    if (this.downSince !== undefined) return;
    this.downSince = this.clock.now();
    this.log.warn(`${this.reason}; retrying`);
    this.onChange(false);
    for (const w of this.waiters.splice(0)) w();
  }

  private up(): void {
    if (this.downSince === undefined) return;
    const secs = Math.round((this.clock.now() - this.downSince) / 1000);
    this.downSince = undefined;
    this.log.info(`engine reachable again after ${secs} s`);
    this.onChange(true);
  }
}

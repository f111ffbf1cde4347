/**
 * Fetches a git source on a timer: every interval, sooner after a failure (the source's
 * back-off), and at once when triggered (a webhook). One fetch at a time; a trigger during a
 * fetch makes one more after it. Watches nothing on disk.
 */
import type { Clock } from '../util/clock';
import type { GitSource, Revision } from './source';

export class GitPoller {
  private timer: ReturnType<Clock['setTimeout']> | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private stopped = false;

  constructor(
    private readonly source: GitSource,
    private readonly clock: Clock,
    /** A fetch brought a new revision (it is in force already). */
    private readonly onRevision: (rev: Revision) => void,
  ) {}

  /** The first fetch now, then on the timer. */
  start(): void {
    this.trigger();
  }

  /** A fetch as soon as none is under way. */
  trigger(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.timer) this.clock.clearTimeout(this.timer);
    this.timer = undefined;
    this.running = this.once().finally(() => {
      this.running = undefined;
      if (this.stopped) return;
      if (this.again) {
        this.again = false;
        this.trigger();
        return;
      }
      this.timer = this.clock.setTimeout(() => this.trigger(), this.source.nextDelayMs());
    });
  }

  private async once(): Promise<void> {
    try {
      const out = await this.source.sync();
      if (out.ok && out.changed) this.onRevision(out.revision);
    } catch (err) {
      // sync() reports git's failures itself; this is the state folder failing.
      this.source.cfg.log.error(`git source: ${String(err)}`);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) this.clock.clearTimeout(this.timer);
    await this.running;
  }
}

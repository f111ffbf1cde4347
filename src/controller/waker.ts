/**
 * Waker: what a reconcile loop waits on between passes instead of sleeping: engine events of
 * this instance (a container died, was removed, ...), spec folder changes, requeue times and
 * the resync period. `wait(ms)` resolves on the first of them.
 */
import { LABELS } from '../constants';
import { RELIST_EVENT, type Engine } from '../engine/types';
import type { Snapshot } from '../observe/types';
import { RUNNING_STATES } from '../constants';
import { EngineSource } from './engine-source';
import { ExitWatch } from './exit-watch';
import type { Logger } from '../util/log';

export class Waker {
  private wake: (() => void) | undefined;
  private pending = false;
  private readonly abort = new AbortController();
  private source: EngineSource | undefined;

  /** Marks that something changed; the current or next wait() returns at once. */
  poke(): void {
    this.pending = true;
    this.wake?.();
  }

  /**
   * Resolves on a poke (one that came since the last wait counts), after `ms`, or when `signal`
   * aborts; an abort consumes no poke, so the next wait still sees it.
   */
  wait(ms: number, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.resolve();
    if (this.pending || this.abort.signal.aborted) {
      this.pending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const end = (poked: boolean) => {
        clearTimeout(t);
        signal?.removeEventListener('abort', aborted);
        if (this.wake === done) this.wake = undefined;
        if (poked) this.pending = false;
        resolve();
      };
      const done = () => end(true);
      const aborted = () => end(false);
      const t = setTimeout(done, Math.max(0, ms));
      signal?.addEventListener('abort', aborted, { once: true });
      this.wake = done;
    });
  }

  /** The same for exits only (a `die` event's inspect answered, a second look, the end of a side action that can give work): what side passes wait on. */
  private exitPending = false;
  private exitWake: (() => void) | undefined;

  /** Attempts whose container died (the `die` event) since their last action's end was told (actionEnded); bounded. */
  private readonly diedSinceAction = new Set<string>();

  /**
   * A pass's action for `attempt` has ended. A `die` of it that came while the action was under
   * way (a container that exits right after its start, before the action's attestation was
   * done) found it busy, left out of the side pass it woke: the side passes are woken again.
   */
  actionEnded(attempt: string): void {
    if (this.diedSinceAction.delete(attempt)) this.pokeExit();
  }

  /** Marks that an attempt may have ended or a slot freed; the current or next waitExit() returns. */
  pokeExit(): void {
    this.exitPending = true;
    this.exitWake?.();
  }

  /** wait() for exits only (see pokeExit); an abort consumes nothing. */
  waitExit(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    if (this.exitPending || this.abort.signal.aborted) {
      this.exitPending = false;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const end = (poked: boolean) => {
        clearTimeout(t);
        signal.removeEventListener('abort', aborted);
        if (this.exitWake === done) this.exitWake = undefined;
        if (poked) this.exitPending = false;
        resolve();
      };
      const done = () => end(true);
      const aborted = () => end(false);
      const t = setTimeout(done, Math.max(0, ms));
      signal.addEventListener('abort', aborted, { once: true });
      this.exitWake = done;
    });
  }

  private settle: NodeJS.Timeout | undefined;
  private recheck: NodeJS.Timeout | undefined;

  /**
   * The engine logs `die` before the container lists show it exited (dockerd updates its
   * list view after emitting the event), so a pass right on the event can still see it
   * running: batch events for a moment, and look once more a little later.
   */
  private engineChanged(): void {
    clearTimeout(this.settle);
    clearTimeout(this.recheck);
    this.settle = setTimeout(() => this.poke(), 20);
    this.recheck = setTimeout(() => this.poke(), 300);
  }

  /** Containers the engine said died whose inspect could not tell, by attempt, until a snapshot shows it (see lookAgain). */
  private readonly exits = new Map<string, { id: string; looks: number }>();
  private readonly looks = new Set<NodeJS.Timeout>();

  /**
   * After a pass: an exit whose inspect could not tell (the engine did not answer, the container
   * still ran) and that the snapshot still shows running (dockerd's lists lag its events, by
   * seconds on a loaded machine) gets another look, after 50 ms doubling to 2 s, up to 9 times
   * (~8 s), as the controller's batches do; without it the exit waited for whatever event came
   * next. Exits the snapshot shows are forgotten. An exit whose inspect is still under way needs
   * no look (its answer wakes the passes), nor one the inspect saw (laid over every snapshot): a
   * look for those, after a pass whose lists were taken before the `die`, woke a side pass with
   * nothing to do (71 of 224 side passes of a fleet of 100).
   */
  lookAgain(snapshot: Snapshot): void {
    let again = 0;
    for (const [attempt, e] of [...this.exits]) {
      const c = snapshot.attempts.get(attempt)?.containers.find((x) => x.id === e.id);
      if (!c || !RUNNING_STATES.has(c.state) || e.looks >= 9) this.exits.delete(attempt);
      else again = Math.max(again, 50 * 2 ** e.looks++);
    }
    if (again === 0) return;
    const t = setTimeout(() => {
      this.looks.delete(t);
      this.poke();
      this.pokeExit();
    }, Math.min(2000, again));
    this.looks.add(t);
  }

  /** Exits seen by inspecting each container on its `die` (followEngine), until the lists show them. */
  private seen: ExitWatch | undefined;

  /** A pass's lists with the exits seen laid over them (PassConfig.exits). */
  apply(s: Snapshot): Snapshot {
    return this.seen ? this.seen.apply(s) : s;
  }

  /** Follows the engine's events for this instance; a reconnect pokes too (relist on the next pass). */
  followEngine(engine: Engine, instance: string, log: Logger): void {
    // Whatever the inspect of a `die` said, the passes look (and what it saw stopped is laid over their lists).
    const seen = new ExitWatch(engine, Date.now, (attempt, saw, id) => {
      if (!saw) this.exits.set(attempt, { id, looks: 0 });
      this.poke();
      this.pokeExit();
    });
    this.seen = seen;
    this.source = new EngineSource(engine, instance, log, {
      onEvent: (ev) => {
        if (ev.type === RELIST_EVENT) {
          // a part of a merged stream (a swarm node's) was away: anything may have ended meanwhile
          this.poke();
          this.pokeExit();
          return;
        }
        const attempt = ev.attributes[LABELS.attempt];
        if (ev.type === 'container' && ev.action === 'die' && attempt) {
          if (this.diedSinceAction.size >= 10_000) this.diedSinceAction.clear();
          this.diedSinceAction.add(attempt);
          // woken once the engine has set the container's state, as an inspect of it says (and
          // only then: a pass 20 ms after the event would list what the engine has not set yet),
          // as the controller's batches are
          return seen.died(attempt, ev.id);
        }
        if (ev.type === 'container' || ev.type === 'network' || ev.type === 'volume') this.engineChanged();
      },
      onReconnect: () => this.poke(),
    });
    this.source.start();
  }

  close(): void {
    for (const t of this.looks) clearTimeout(t);
    clearTimeout(this.settle);
    this.seen?.close();
    clearTimeout(this.recheck);
    this.source?.close();
    this.abort.abort();
    this.wake?.();
    this.exitWake?.();
  }
}

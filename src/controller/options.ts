/** What a controller is made with, and what its caller hears of it (controller.ts). */
import type { Engine } from '../engine/types';
import type { RevisionOutcomes } from '../git/outcome';
import type { GitSource } from '../git/source';
import type { Plan } from '../plan/types';
import type { LoadReport } from '../spec/loader';
import type { StatusStore } from '../status/store';
import type { Clock } from '../util/clock';
import type { Logger } from '../util/log';
import type { ControllerMetrics } from './metrics';
import type { PassConfig } from './pass';

export interface ControllerOptions {
  cfg: PassConfig;
  engine: Engine;
  store: StatusStore;
  log: Logger;
  /** Attempt actions executed at once. */
  workers: number;
  resyncMs: number;
  debounceMs?: number;
  /** A spec file the watcher names is read once it has had no write this long (default 60 ms). */
  settleMs?: number;
  clock?: Clock;
  metrics?: ControllerMetrics;
  /** Specs from git (prepared): polled instead of watching the specs folder. */
  git?: GitSource;
  /** Specs from git: each revision's outcome, once all its attempts finished. */
  outcomes?: RevisionOutcomes;
  /** A finite run (`reconcile --once --wait`; see the header). */
  finite?: boolean;
  /**
   * A finite run over these attempts only (`berth regrade` seeing its grades through): every
   * batch plans them alone (the others still count for --max-running and their sets), and news of
   * any other attempt is let go.
   */
  only?: ReadonlySet<string>;
  watcher?: ControllerWatcher;
}

/** What a caller hears of the loop (a finite run's progress and end). */
export interface ControllerWatcher {
  /** A batch's plan, once its actions are dispatched, with the load it was made from. */
  planned?(load: LoadReport, plan: Plan): void;
  /** After every batch and every action's end: a moment the controller may have become idle. */
  settled?(): void;
  /** A batch failed because the engine did not answer. */
  engineDown?(err: unknown): void;
}

/**
 * What the executor's operations share: its dependencies, its clock, the attempts' status
 * records and the engine's boot as first seen by this executor (one pass).
 */
import type { Engine } from '../engine/types';
import type { EngineBoot } from '../status/types';
import type { StatusStore } from '../status/store';
import type { Logger } from '../util/log';
import type { FixtureCacheConfig } from '../pack/archive';
import type { HarvestLimits } from './harvest';
import type { StatusRecords } from './status-record';

export interface ExecutorDeps {
  engine: Engine;
  store: StatusStore;
  instance: string;
  concurrency: number;
  log: Logger;
  /** Where fromEnv secrets are read. */
  env: NodeJS.ProcessEnv;
  /** The results root: run folders below it are made and checked without following a link. */
  resultsRoot?: string;
  now?: () => number;
  /** The harvest's log cap and hashing budget (DEFAULTS unless the flags say). */
  harvest?: HarvestLimits;
  /** Where packed fixture layers are kept, and their bound (`<state>/cache/fixtures`, `--fixture-cache-size`); none: each copy-in packs its own. */
  fixtureCache?: FixtureCacheConfig;
  /** Berth stopping: interrupts a harvest's hashing (the run's harvest is done again later). */
  signal?: AbortSignal;
}

export interface ExecContext {
  deps: ExecutorDeps;
  now: () => number;
  records: StatusRecords;
  /**
   * The boot recorded before a start (Engine.boot): looked up once per executor. A boot from
   * earlier in the pass is as good as a fresh one for the rule (it is at or before the start;
   * see plan/exit-outcome.ts). Never fails a start: an unknown boot is recorded as none.
   */
  bootForStart: () => Promise<EngineBoot | undefined>;
}

export { iso } from '../util/iso';

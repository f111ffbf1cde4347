/**
 * What a container's end means: the outcome of a run read from the engine's state of its main
 * container, and the rule that tells an infrastructure death (the engine restarted under the
 * run) from the task's own failure. Pure: the executor gathers the facts, this decides.
 *
 * What the engine shows (Docker 20.10, measured on a private engine, test/engine/infra.test.ts):
 * - Each start of the engine makes its default `bridge` network anew: a new id, and a creation
 *   time just after the engine has taken up its containers again. The `none` and `host` networks
 *   keep theirs. So the bridge network names the engine's current boot, on its own clock.
 * - A graceful stop (SIGTERM to dockerd) stops every running container with its stop signal:
 *   exit 143 (137 when the grace runs out). After a crash (SIGKILL) the next start does the same
 *   to the containers whose processes outlived it (143/137); a container whose processes died
 *   with the machine or its shim is marked exited 255. In every case the container's FinishedAt
 *   is before the new boot's bridge was made, and State holds nothing else (Error is empty, no
 *   OOM) that tells these apart from a task that died of the same signal by itself.
 *
 * The rule: a run's end is an engine restart's (EngineRestarted) when all of
 *  1. berth recorded, at or before the run's start, a boot of the engine, and the engine's boot
 *     now is another one (a different bridge id: the engine restarted since; no clock involved);
 *  2. the container finished before the current boot came up (FinishedAt <= its bridge's
 *     creation time): it did not die under the engine that runs now (with live-restore a
 *     container outlives a restart and a later death of its own is its own);
 *  3. it ended by SIGTERM or SIGKILL (143, 137) or as lost (255), not OOM-killed;
 *  4. berth did not ask for the stop (a stop berth asks for comes with an outcome of its own).
 * Without an engine restart (1) nothing is ever an infrastructure death, whatever the exit
 * code. What stays ambiguous: a task that kills itself with one of those signals under the old
 * boot while no berth watches (between two `--once` passes), and then the engine restarts before
 * berth looked. A watching berth (controller, `--wait`) has finished such a run by then.
 * An engine started with `--bridge=none` has no default bridge: no boot is known, and every end
 * is read as the task's own.
 */
import { DEFAULTS, REASONS } from '../constants';
import type { ContainerState } from '../engine/types';
import { engineTime } from '../engine/time';
import type { EngineBoot } from '../status/types';
import type { RunEnd } from './types';

/** Exit codes of a container the engine ended: TERM (128+15), KILL (128+9), lost task (255). */
export const ENGINE_STOP_EXIT_CODES: ReadonlySet<number> = new Set([143, 137, 255]);

/** Failures of the infrastructure, not of the task: re-run under `--infra-retries`, never under the spec's `retries`. */
export const INFRA_REASONS: ReadonlySet<string> = new Set([REASONS.engineRestarted, REASONS.startFailed]);

export function isInfraFailure(reason: string | undefined): boolean {
  return reason !== undefined && INFRA_REASONS.has(reason);
}

/** Rule 1 and 3 without the current boot: whether the executor needs to look the current boot up. */
export function mayBeEngineDeath(st: ContainerState, ranUnder: EngineBoot | undefined): boolean {
  return !!ranUnder && !st.running && !st.oomKilled && ENGINE_STOP_EXIT_CODES.has(st.exitCode) && engineTime(st.finishedAt) !== undefined;
}

/** The rule above (1–3; 4 is the caller's: a forced outcome is never read from the engine). */
export function diedInEngineRestart(st: ContainerState, ranUnder: EngineBoot | undefined, current: EngineBoot | undefined): boolean {
  if (!ranUnder || !current || ranUnder.id === current.id || !mayBeEngineDeath(st, ranUnder)) return false;
  const finished = engineTime(st.finishedAt);
  const boot = engineTime(current.at);
  return finished !== undefined && boot !== undefined && finished <= boot;
}

/**
 * The outcome of a run from its main container's state (undefined: the container is gone).
 * `deadlineAt`: the run's recorded deadline. A run found finished after it had passed is TimedOut
 * whatever its exit code (CONTRACT.md v3, "Deadlines are judged even unobserved"): nothing was
 * watching at the deadline to stop it (`reconcile --once` without `--wait`), but it ran past it.
 * `layer`: the run's writable layer, where the engine capped it, as it was at the end (below).
 */
export function exitOutcome(
  st: ContainerState | undefined,
  boots: { ranUnder?: EngineBoot; current?: EngineBoot } = {},
  deadlineAt?: string,
  layer?: CappedLayer,
): RunEnd {
  if (!st) return { phase: 'Failed', reason: REASONS.lost, message: 'the container vanished from the engine' };
  const finished = engineTime(st.finishedAt);
  const deadline = deadlineAt !== undefined ? Date.parse(deadlineAt) : NaN;
  if (!st.running && finished !== undefined && finished > deadline) {
    return {
      phase: 'TimedOut',
      reason: REASONS.deadlineExceeded,
      message: `ran past its deadline (${deadlineAt}) and ended at ${st.finishedAt} (exit ${st.exitCode}) with nothing watching to stop it: judged when found finished`,
    };
  }
  if (st.oomKilled) return { phase: 'Failed', reason: REASONS.oomKilled, message: 'the container ran out of memory' };
  if (st.exitCode === 0) return { phase: 'Succeeded', reason: REASONS.completed };
  if (diedInEngineRestart(st, boots.ranUnder, boots.current)) {
    return {
      phase: 'Failed',
      reason: REASONS.engineRestarted,
      message: `the engine restarted under the run: the container ended with code ${st.exitCode} at ${st.finishedAt}, before the engine came back at ${boots.current?.at ?? '?'}`,
    };
  }
  if (layer && layerFull(layer)) {
    return {
      phase: 'Failed',
      reason: REASONS.diskLimitExceeded,
      message: `exited with code ${st.exitCode} with its writable layer full: ${mib(layer.usedBytes)} of the ${mib(layer.limitBytes)} the engine caps it at (resources.disk)`,
    };
  }
  return { phase: 'Failed', reason: REASONS.error, message: `exited with code ${st.exitCode}` };
}

/**
 * A writable layer the engine capped (StorageOpt size) and what it held when the run ended. The
 * engine never lets it pass the cap: the attempt meets ENOSPC or EDQUOT there, and what it does
 * then is its own. A run that ended non-zero with its layer full ran out of its disk, a task
 * outcome like OOMKilled: `Failed/DiskLimitExceeded`. Full is DEFAULTS.diskFullShare of the cap:
 * the engine's own count (a btrfs qgroup's extents and metadata, an xfs project's blocks) runs
 * ahead of the files' sizes the engine reports (measured on btrfs: a 64 MiB cap stopped `dd` at
 * 62 MiB). A run that ended 0 succeeded, full or not.
 */
export interface CappedLayer {
  usedBytes: number;
  limitBytes: number;
}

export function layerFull(l: CappedLayer): boolean {
  return l.limitBytes > 0 && l.usedBytes >= l.limitBytes * DEFAULTS.diskFullShare;
}

const mib = (b: number) => `${(b / 1024 / 1024).toFixed(1).replace(/\.0$/, '')} MiB`;

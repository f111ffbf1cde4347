/**
 * The OOM kill that dockerd reports after the exit it caused. The kernel's OOM kill and the
 * process's exit reach dockerd as two events that can come in either order: when the exit comes
 * first, the container's `die` is sent and its inspect answers `OOMKilled: false`, and the `oom`
 * event (and the flag) follow, hundreds of milliseconds later under load. A run that ended by
 * SIGKILL with no OOM flag is therefore looked at once more, in the engine's own event log: an
 * `oom` event of the container from its start until a short while after its end makes it OOM-killed.
 */
import { DEFAULTS } from '../constants';
import { engineTime } from '../engine/time';
import type { ContainerState, Engine } from '../engine/types';

/** The exit code of a process ended by SIGKILL, the OOM killer's signal. */
const SIGKILL_EXIT = 137;

/** `st`, OOM-killed when the engine's event log says so although its inspect did not (yet). */
export async function withLateOom(engine: Engine, id: string, st: ContainerState, signal?: AbortSignal): Promise<ContainerState> {
  if (st.running || st.oomKilled || st.exitCode !== SIGKILL_EXIT || !engine.events.first) return st;
  const started = engineTime(st.startedAt);
  const finished = engineTime(st.finishedAt);
  if (started === undefined || finished === undefined) return st;
  const oom = await engine.events.first(id, ['oom'], {
    since: Math.floor(started / 1000),
    until: (finished + DEFAULTS.lateOomMs) / 1000,
    ...(signal ? { signal } : {}),
  });
  return oom ? { ...st, oomKilled: true } : st;
}

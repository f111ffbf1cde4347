/**
 * The OOM kill that dockerd reports after the exit it caused. The kernel's OOM kill and the
 * process's exit reach dockerd as two events that can come in either order: when the exit comes
 * first, the container's `die` is sent and its inspect answers `OOMKilled: false`, and the `oom`
 * event (and the flag) follow, hundreds of milliseconds later under load. A run that ended by
 * SIGKILL with no OOM flag is therefore looked at once more, in the engine's own event log: an
 * `oom` event of the container from its start until a short while after its end makes it OOM-killed.
 * The engine keeps only its last 256 events, so the engine client answers from what the
 * controller's own stream saw go by first (engine/docker/events.ts). An OOM kill in the instants
 * of a container's start, before containerd watches its cgroup, is reported by neither (engine
 * 20.10, cgroup v2): such a run ends Error with exit 137.
 */
import { DEFAULTS } from '../constants';
import { engineTime } from '../engine/time';
import type { ContainerState, Engine } from '../engine/types';

/** How long past the wait for an `oom` event the look may take (the engine's answer) before the inspect's answer stands. */
const LOOK_SLACK_MS = 2_000;

/** The exit code of a process ended by SIGKILL, the OOM killer's signal. */
const SIGKILL_EXIT = 137;

/** `st`, OOM-killed when the engine's event log says so although its inspect did not (yet). */
export async function withLateOom(engine: Engine, id: string, st: ContainerState, signal?: AbortSignal): Promise<ContainerState> {
  if (st.running || st.oomKilled || st.exitCode !== SIGKILL_EXIT) return st;
  const started = engineTime(st.startedAt);
  const finished = engineTime(st.finishedAt);
  if (started === undefined || finished === undefined) return st;
  // A look, not a dependency: an event log that does not answer in time (an engine whose event
  // stream is down) leaves the inspect's answer, as before; berth stopping still stops it.
  const patience = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  const gaveUp = new Promise<'gave-up'>((resolve) => {
    timer = setTimeout(() => {
      patience.abort();
      resolve('gave-up');
    }, DEFAULTS.lateOomMs + LOOK_SLACK_MS);
  });
  const look = engine.events.first(id, ['oom'], {
    since: Math.floor(started / 1000),
    until: (finished + DEFAULTS.lateOomMs) / 1000,
    signal: signal ? AbortSignal.any([signal, patience.signal]) : patience.signal,
  });
  look.catch(() => undefined); // one given up on must not be unhandled
  try {
    const oom = await Promise.race([look, gaveUp]);
    return oom !== undefined && oom !== 'gave-up' ? { ...st, oomKilled: true } : st;
  } catch (err) {
    if (signal?.aborted) throw err;
    return st;
  } finally {
    clearTimeout(timer);
  }
}

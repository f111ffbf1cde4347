/**
 * Exits seen by inspection, laid over a snapshot whose lists do not show them yet (pure).
 *
 * The engine sends a container's `die` event while it still handles the exit (it unmounts,
 * takes the container's network down, then sets the state), and its lists show the new state
 * only after that: by tens of milliseconds on a quiet machine, by seconds on a loaded one or for
 * a container on a network of its own. An inspect of that container, asked on the event,
 * answers once the engine has set the state (the engine holds the container while it handles
 * the exit), in one call. What it said is kept (`SeenExit`) and laid over each snapshot that
 * still lists the container running, so the planner plans the finish from the observation as
 * it always does, without waiting for the lists.
 *
 * Only the step from running to not running is laid over: berth never starts a container
 * again once it has exited (a new run is a new container), so what an inspect saw stopped stays
 * stopped. A list that shows the container not running, or no longer shows it, has caught up.
 */
import { RUNNING_STATES } from '../constants';
import type { ContainerDetails } from '../engine/types';
import type { ObservedAttempt, Snapshot } from './types';

export interface SeenExit {
  /** The attempt whose container it is (the event's attempt label). */
  attempt: string;
  /** The container's id, as the backend lists it. */
  id: string;
  /** Its state and status as the inspect gave them (`exited`, `dead`). */
  state: string;
  status: string;
  /** When the inspect answered (ms since the epoch). */
  at: number;
}

/**
 * What an inspect says of a container that is no longer running; undefined while it runs, and
 * for a run of the swarm backend (it has a `placement`): a run ends when its task does, as the
 * manager says, and its logs come through the manager, which may have none yet while the node's
 * engine already says the container stopped. Its `die` still wakes the follower at the right time.
 */
export function seenExit(attempt: string, id: string, d: Pick<ContainerDetails, 'state' | 'runState' | 'placement'>, at: number): SeenExit | undefined {
  if (d.runState.running || RUNNING_STATES.has(d.state) || d.placement !== undefined) return undefined;
  const state = d.state || 'exited';
  return { attempt, id, state, status: state === 'exited' ? `Exited (${d.runState.exitCode})` : state, at };
}

/** Whether the snapshot's lists show the exit already: the container listed not running, or not listed. */
export function listsShow(s: Snapshot, e: SeenExit): boolean {
  const c = s.attempts.get(e.attempt)?.containers.find((x) => x.id === e.id);
  return c === undefined || !RUNNING_STATES.has(c.state);
}

/** The snapshot with each exit laid over the container it names, where the lists still show that one running. */
export function overlayExits(s: Snapshot, exits: Iterable<SeenExit>): Snapshot {
  let attempts: Map<string, ObservedAttempt> | undefined;
  for (const e of exits) {
    const a = (attempts ?? s.attempts).get(e.attempt);
    if (!a || !a.containers.some((c) => c.id === e.id && RUNNING_STATES.has(c.state))) continue;
    attempts ??= new Map(s.attempts);
    attempts.set(e.attempt, { ...a, containers: a.containers.map((c) => (c.id === e.id ? { ...c, state: e.state, status: e.status } : c)) });
  }
  return attempts ? { ...s, attempts } : s;
}

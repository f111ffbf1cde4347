/**
 * A watch for the engine's hang (moby#46661, seen here twice while seeding 1,000 `true`
 * attempts): a container's process has exited, but the engine goes on saying the container
 * is running, so berth's `--wait` (rightly) never ends and the bench sat until its 20-minute
 * timeout. Around a step whose attempts run a short command, the watch lists the instance's
 * running containers every few seconds; one still running `maxUpMs` after it started fails
 * the step at once, naming the containers and whether their process is still alive. The
 * bench's failure path then ends its children and removes what the run made.
 *
 * Only the seeding steps, which are not timed against a floor, are watched: the watch's
 * lists would add engine work to a timed run that its floor and peer do not have.
 */
import { LABELS } from '../../src/constants';
import { pidAlive } from '../../src/util/pid';
import type { RawEngine } from './engine';

const POLL_MS = 5_000;

interface Inspected {
  Name: string;
  State: { Running: boolean; Pid: number; StartedAt: string };
}

interface Overdue {
  name: string;
  upMs: number;
  pid: number;
  /** The container's process is still there (the engine runs on this host: ENGINE.md). */
  alive: boolean;
}

export class StuckContainerError extends Error {}

/** The instance's containers that the engine says have run for longer than `maxUpMs`. */
async function overdue(engine: RawEngine, instance: string, maxUpMs: number): Promise<Overdue[]> {
  const running = await engine.listContainers([`${LABELS.instance}=${instance}`], { status: 'running' });
  const found: Overdue[] = [];
  for (const c of running) {
    // Created (seconds) comes before the start: one made within maxUpMs is not overdue, and is not inspected.
    if (Date.now() - c.Created * 1000 <= maxUpMs) continue;
    const i = await engine.call<Inspected>('GET', `/containers/${c.Id}/json`, undefined, [404]).catch(() => undefined);
    if (!i?.State?.Running) continue;
    const upMs = Date.now() - Date.parse(i.State.StartedAt);
    if (!(upMs > maxUpMs)) continue;
    found.push({ name: i.Name.replace(/^\//, ''), upMs, pid: i.State.Pid, alive: i.State.Pid > 0 && pidAlive(i.State.Pid) });
  }
  return found;
}

function stuckMessage(what: string, maxUpMs: number, stuck: readonly Overdue[]): string {
  const shown = stuck.slice(0, 5).map((o) => `${o.name} (up ${Math.round(o.upMs / 1000)} s, pid ${o.pid} ${o.alive ? 'alive' : 'gone'})`);
  const hang = stuck.some((o) => !o.alive)
    ? ". Their process is gone while the engine says running: the engine's hang (moby#46661); restart the engine and run the bench again"
    : '';
  return `${what}: ${stuck.length} container(s) still running after ${maxUpMs / 1000} s, though the command is short: ${shown.join(', ')}${hang}`;
}

/**
 * Runs `work`, and rejects with a StuckContainerError as soon as a container of `instance` has
 * been running for longer than `maxUpMs`. `what` names the step in the message.
 */
export async function failOnStuck<T>(engine: RawEngine, instance: string, maxUpMs: number, what: string, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const watch = new Promise<never>((_, reject) => {
    const tick = async () => {
      try {
        const stuck = await overdue(engine, instance, maxUpMs);
        if (stuck.length) {
          reject(new StuckContainerError(stuckMessage(what, maxUpMs, stuck)));
          return;
        }
      } catch {
        /* a failed look is not a finding; the step's own timeouts still hold */
      }
      if (!stopped) timer = setTimeout(() => void tick(), POLL_MS);
    };
    timer = setTimeout(() => void tick(), POLL_MS);
  });
  try {
    return await Promise.race([work, watch]);
  } finally {
    stopped = true;
    clearTimeout(timer);
  }
}

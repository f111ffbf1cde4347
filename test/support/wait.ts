/**
 * Waiting in engine tests without sleeping: a condition is checked again whenever the engine
 * reports an event for the instance or a file under a watched folder changes (with a slow
 * safety re-check), and the wait fails loudly with what was last seen when it times out.
 */
import { watch, type FSWatcher, promises as fs } from 'node:fs';
import { LABELS } from '../../src/constants';
import { docker } from './engine';

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false>,
  opts: { instance?: string; dirs?: string[]; timeoutMs?: number },
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 20_000;
  let wake: () => void = () => undefined;
  const watchers: FSWatcher[] = [];
  for (const d of opts.dirs ?? []) {
    await fs.mkdir(d, { recursive: true });
    watchers.push(watch(d, { recursive: false }, () => wake()));
  }
  let stream: (NodeJS.ReadableStream & { destroy?: () => void }) | undefined;
  if (opts.instance) {
    const s = (await docker.getEvents({ filters: { label: [`${LABELS.instance}=${opts.instance}`] } } as never)) as unknown as NodeJS.ReadableStream & {
      destroy?: () => void;
    };
    s.on('data', () => wake());
    stream = s;
  }
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  try {
    for (;;) {
      const v = await check();
      if (v !== undefined && v !== false) return v;
      last = v;
      if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what} (last: ${JSON.stringify(last)})`);
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, Math.min(500, Math.max(0, deadline - Date.now())));
        wake = () => {
          clearTimeout(t);
          resolve();
        };
      });
    }
  } finally {
    for (const w of watchers) w.close();
    stream?.destroy?.();
  }
}

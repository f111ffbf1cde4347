/**
 * `berth events [NAME...] [-l SELECTOR] [-w] [-o json]`: what happened to the instance's attempts, newest last
 * (src/cli/events.ts derives them from the status records). With -w, new events are printed
 * as the records change (file events), until SIGINT or SIGTERM.
 */
import { EXIT, SCHEMA_VERSIONS } from '../../constants';
import { readRemovedImages } from '../../controller/image-gc';
import { Waker } from '../../util/waker';
import { StatusStore } from '../../status/store';
import { watchFolder } from '../../util/watch-folder';
import type { Context } from '../context';
import { diag } from '../diag';
import { allEvents, imageRemovedEvents, withImageEvents, type AttemptEvent } from '../events';
import { age, StickyTable, table } from './shared';

export interface EventsOptions {
  watch?: boolean;
  output?: 'json';
  signal?: AbortSignal;
}

/** `names`: only these attempts' events (undefined: every attempt's). */
async function load(ctx: Context, names?: ReadonlySet<string>): Promise<AttemptEvent[]> {
  const recs = await new StatusStore(ctx.stateDir, ctx.instance).loadAll();
  const events = allEvents([...recs.values()].filter((r) => !names || names.has(r.name)));
  // image GC's removals (controller/image-gc.ts) are the instance's events, not an attempt's
  return names ? events : withImageEvents(events, imageRemovedEvents(readRemovedImages(ctx.stateDir, ctx.instance)));
}

function render(ctx: Context, events: AttemptEvent[], o: EventsOptions, headers: boolean, sticky?: StickyTable): void {
  if (!events.length) return;
  if (o.output === 'json') {
    ctx.io.out(events.map((e) => JSON.stringify({ schemaVersion: SCHEMA_VERSIONS.events, ...e }) + '\n').join(''));
    return;
  }
  const now = Date.now();
  const rows = events.map((e) => [age(e.at, now), e.type, e.reason, e.object ?? `attempt/${e.attempt}`, e.message]);
  const all = headers ? [['LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'], ...rows] : rows;
  // -w: later rows line up under the header printed first
  ctx.io.out(sticky ? sticky.render(all) : table(all));
}

/** The events of the attempts named (one name, or several: a set, -l); all of the instance's when `names` is undefined. */
export async function runEvents(ctx: Context, names: string | readonly string[] | undefined, o: EventsOptions): Promise<number> {
  const only = names === undefined ? undefined : new Set(typeof names === 'string' ? [names] : names);
  const name = only?.size === 1 ? [...only][0] : undefined;
  const first = await load(ctx, only);
  if (name && !first.length && !(await new StatusStore(ctx.stateDir, ctx.instance).get(name))) {
    diag(ctx, 'error', `attempt ${JSON.stringify(name)} has no status record: no events (berth get shows whether it exists)`);
    return EXIT.failed;
  }
  if (!o.watch) {
    if (!first.length) ctx.io.err('No events.\n');
    render(ctx, first, o, true);
    return EXIT.ok;
  }
  // LAST SEEN, TYPE, REASON: wide enough for the usual values from the start
  const sticky = new StickyTable([9, 7, 16]);
  render(ctx, first, o, true, sticky);
  const seen = new Set(first.map((e) => JSON.stringify(e)));
  const waker = new Waker();
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  o.signal?.addEventListener('abort', onSignal, { once: true });
  stop.signal.addEventListener('abort', () => waker.poke(), { once: true });
  const watch = watchFolder(new StatusStore(ctx.stateDir, ctx.instance).dir, () => waker.poke());
  try {
    let headers = !first.length;
    while (!stop.signal.aborted) {
      await waker.wait(60_000);
      if (stop.signal.aborted) break;
      const fresh = (await load(ctx, only)).filter((e) => !seen.has(JSON.stringify(e)));
      for (const e of fresh) seen.add(JSON.stringify(e));
      render(ctx, fresh, o, headers && fresh.length > 0, sticky);
      if (fresh.length) headers = false;
    }
    return EXIT.ok;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    watch.close();
    waker.close();
  }
}

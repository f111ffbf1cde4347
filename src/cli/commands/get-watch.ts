/**
 * `berth get -w`: after the first listing, a line (a row, an `attempt/<name>`, or a JSON or YAML
 * document) each time an attempt's row changes, read again on every change of the status
 * records folder (file events, no polling) and of the specs folder, until SIGINT or SIGTERM
 * (or `signal`, for tests). Like kubectl, the header is printed once.
 */
import { stringify } from 'yaml';
import { EXIT, PHASES } from '../../constants';
import { Waker } from '../../util/waker';
import { StatusStore } from '../../status/store';
import { watchFolder } from '../../util/watch-folder';
import type { Context } from '../context';
import { collectRows, rowCells, type GetOptions, type Row } from './get';
import { StickyTable } from './shared';
import { toItem } from './get-item';

const key = (r: Row) => JSON.stringify([r.phase, r.reason, r.exitCode, r.run, r.labels, r.image, r.results, !!r.damaged]);

/** How the watch prints: its table's widths and columns, kept from the first listing so every later row lines up with the header. */
interface Printer {
  table: StickyTable;
  graded?: boolean;
}

function print(ctx: Context, rows: Row[], o: GetOptions, headers: boolean, p: Printer): void {
  if (!rows.length) return;
  if (o.output === 'json') ctx.io.out(rows.map((r) => JSON.stringify(toItem(r)) + '\n').join(''));
  else if (o.output === 'yaml') ctx.io.out(rows.map((r) => `---\n${stringify(toItem(r))}`).join(''));
  else if (o.output === 'name') ctx.io.out(rows.map((r) => `attempt/${r.name}\n`).join(''));
  else {
    const { head, body, graded } = rowCells(rows, o.output === 'wide', p.graded);
    p.graded = graded;
    ctx.io.out(p.table.render(headers ? [head, ...body] : body));
  }
}

export async function watchRows(ctx: Context, names: string[], o: GetOptions, signal?: AbortSignal): Promise<number> {
  // A fresh store each read: the records are another process's to write.
  const fresh = (): Context => {
    const store = new StatusStore(ctx.stateDir, ctx.instance);
    return { ...ctx, store: () => store };
  };
  const waker = new Waker();
  const stop = new AbortController();
  const onSignal = () => stop.abort();
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  signal?.addEventListener('abort', onSignal, { once: true });
  stop.signal.addEventListener('abort', () => waker.poke(), { once: true });
  const watches = [watchFolder(new StatusStore(ctx.stateDir, ctx.instance).dir, () => waker.poke()), watchFolder(ctx.specsDir, () => waker.poke())];
  try {
    const seen = new Map<string, string>();
    // NAME, PHASE, REASON, EXIT, RUN, AGE, DURATION: wide enough for the phases and the usual reasons from the start
    const printer: Printer = { table: new StickyTable([0, Math.max(...PHASES.map((p) => p.length)), 18, 4, 3, 6, 8]) };
    let first = true;
    while (!stop.signal.aborted) {
      const rows = await collectRows(fresh(), names, o.selector ?? []);
      const changed = rows.filter((r) => seen.get(r.name) !== key(r));
      for (const r of rows) seen.set(r.name, key(r));
      print(ctx, changed, o, first && o.headers !== false, printer);
      first = false;
      await waker.wait(60_000);
    }
    return EXIT.ok;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    for (const w of watches) w.close();
    waker.close();
  }
}

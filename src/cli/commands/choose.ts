/**
 * The attempts a changing command (`rerun`, `delete`) acts on: the names given, or those a
 * selector picks, or (`--all`, where the command takes it) every attempt; one of them is required
 * (as kubectl's delete asks for names, -l or --all), so a slip never acts on every attempt. Every name given must exist.
 */
import { EXIT } from '../../constants';
import { UsageError, type Context } from '../context';
import { diag } from '../diag';
import { collectRows, type Row } from './get';

/** @param all `--all` as given, for a command that takes it (undefined: the command has no --all). */
export async function chooseAttempts(ctx: Context, verb: string, names: string[], selector: string[] = [], all?: boolean): Promise<Row[] | number> {
  if (all && (names.length || selector.length)) throw new UsageError(`${verb}: --all takes no names and no -l`);
  if (all) return collectRows(ctx);
  if (!names.length && !selector.length)
    throw new UsageError(
      `${verb}: name the attempts${all === undefined ? ', or select them with -l' : ', select them with -l'} (e.g. -l suite=demo)${all === undefined ? '' : ', or give --all'}`,
    );
  if (names.length && selector.length) throw new UsageError(`${verb}: give names or -l, not both`);
  const rows = await collectRows(ctx, names, selector);
  const found = new Set(rows.map((r) => r.name));
  const missing = [...new Set(names)].filter((n) => !found.has(n));
  for (const n of missing) diag(ctx, 'error', `attempt ${JSON.stringify(n)} not found`);
  if (missing.length) return EXIT.failed;
  if (!rows.length) {
    diag(ctx, 'error', `${verb}: no attempts match the selector (berth get -l shows what it matches)`);
    return EXIT.failed;
  }
  return rows;
}

/**
 * What `rerun` and `delete` share: holding the instance's writer locks, they mark the chosen
 * attempts' status records (the mark is what the pure planner honours: `rerunRequested`,
 * `deleted`) and make one reconcile pass over those attempts only, so the change happens now;
 * the other attempts are left as they are (they still count for --max-running).
 */
import { EXIT } from '../../constants';
import { reconcilePass, type PassResult } from '../../controller/pass';
import { describeEngineError, isEngineDown, pingFailure } from '../../engine/errors';
import { loadSpecs } from '../../spec/loader';
import type { LoadedSpec } from '../../spec/types';
import { StatusStore } from '../../status/store';
import type { AttemptStatus } from '../../status/types';
import { passConfig, specsRevision, type Context } from '../context';
import { diag } from '../diag';
import type { Row } from './get';
import { takeWriterLocks } from './writer-lock';

/** The record to write, `undefined` to write none (the pass alone does it), or why the attempt is refused. */
export type Mark = (row: Row, rec: AttemptStatus | undefined, spec: LoadedSpec | undefined) => AttemptStatus | undefined | { refused: string };

export interface MarkResult {
  code: number;
  /** The pass over the attempts marked (absent when none was). */
  pass?: PassResult;
  store?: StatusStore;
  /** The attempts the pass was made for. */
  acted: string[];
}

/**
 * `catchUp`: the records (read under the locks) of attempts to make one pass over before they
 * are marked, so what their containers did while nothing reconciled the instance is recorded
 * first (`rerun`: a run whose container exited long ago, recorded Running by a `reconcile
 * --once` that did not wait, is finished by then).
 */
export async function markAndPass(ctx: Context, command: string, rows: Row[], mark: Mark, catchUp?: (rec: AttemptStatus) => boolean): Promise<MarkResult> {
  const engine = ctx.engine();
  try {
    await engine.ping();
  } catch (err) {
    diag(ctx, 'error', pingFailure(err));
    return { code: EXIT.failed, acted: [] };
  }
  const locks = await takeWriterLocks(ctx, engine, command);
  if (!locks) return { code: EXIT.failed, acted: [] };
  try {
    // Read again under the locks: the records may have changed since the rows were read.
    const store = new StatusStore(ctx.stateDir, ctx.instance, { warn: (m) => diag(ctx, 'warn', m) });
    const load = await loadSpecs({ specsDir: ctx.specsDir, resultsRoot: ctx.resultsRoot, ...specsRevision(ctx) });
    const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
    if (catchUp) {
      const behind: string[] = [];
      for (const row of rows) {
        const rec = await store.get(row.name);
        if (rec && catchUp(rec)) behind.push(row.name);
      }
      // Holding the locks, this command is the only writer: nothing else records these runs.
      if (behind.length) await catchUpPass(ctx, engine, store, behind);
    }
    let code: number = EXIT.ok;
    const acted: string[] = [];
    for (const row of rows) {
      const m = mark(row, await store.get(row.name), specs.get(row.name));
      if (m && 'refused' in m) {
        diag(ctx, 'error', `${row.name}: ${m.refused}`);
        code = EXIT.failed;
        continue;
      }
      if (m) await store.put(m);
      acted.push(row.name);
    }
    if (!acted.length) return { code, acted };
    let pass: PassResult;
    try {
      pass = await reconcilePass({ ...passConfig(ctx, {}), only: new Set(acted) }, engine, store);
    } catch (err) {
      if (!isEngineDown(err)) throw err;
      diag(ctx, 'error', `${describeEngineError(err)} (the marks are recorded: the next reconcile carries them out)`);
      return { code: EXIT.failed, acted };
    }
    for (const f of pass.results.filter((r) => !r.ok)) {
      diag(ctx, 'error', `${f.attempt}: ${f.error ?? 'failed'}`);
      code = EXIT.failed;
    }
    return { code, pass, store, acted };
  } finally {
    await locks.release();
  }
}

/** One pass over `names` only; an engine that stops answering leaves the records as they were (the marks then judge them so). */
async function catchUpPass(ctx: Context, engine: ReturnType<Context['engine']>, store: StatusStore, names: string[]): Promise<void> {
  try {
    const pass = await reconcilePass({ ...passConfig(ctx, {}), only: new Set(names) }, engine, store);
    for (const f of pass.results.filter((r) => !r.ok)) diag(ctx, 'warn', `${f.attempt}: ${f.error ?? 'failed'}`);
  } catch (err) {
    if (!isEngineDown(err)) throw err;
    diag(ctx, 'warn', describeEngineError(err));
  }
}

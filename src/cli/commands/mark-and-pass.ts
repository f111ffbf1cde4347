/**
 * What `rerun`, `delete` and `regrade` share: they mark the chosen attempts' status records (the
 * mark is what the pure planner honours: `rerunRequested`, `deleted`, `regradeRequested`;
 * controller/marks.ts) and have one reconcile over those attempts carry it out now; the other
 * attempts are left as they are (they still count for --max-running).
 *
 * Who writes: when no berth holds the instance, the command itself, holding its writer locks,
 * marking and making one pass. When a controller runs it (the engine lock held by `berth
 * reconcile`, and the lock file in this state folder held), it is the only writer: the command
 * asks it (a request file in the state folder, status/requests.ts), and the controller marks,
 * reconciles those attempts and answers; the command waits `--timeout` for the answer. When the
 * controller stops before taking the request, the command does it itself.
 */
import path from 'node:path';
import { EXIT, REASONS } from '../../constants';
import { reconcilePass } from '../../controller/pass';
import { MARKS, needsCatchUp } from '../../controller/marks';
import { describeEngineError, isEngineDown, pingFailure } from '../../engine/errors';
import type { Engine } from '../../engine/types';
import { loadSpecs } from '../../spec/loader';
import { readEngineLock, type EngineLockInfo } from '../../status/engine-lock';
import { currentProcess, liveness } from '../../status/liveness';
import { readLockFile } from '../../status/lock';
import { awaitAnswer, sendRequest, type RequestCommand } from '../../status/requests';
import { StatusStore } from '../../status/store';
import { passConfig, specsOptions, type Context, type PassFlags } from '../context';
import { diag } from '../diag';
import type { Row } from './get';
import { seeThroughHere } from './see-through';
import { takeWriterLocks } from './writer-lock';

export interface MarkResult {
  code: number;
  /** The records, as they are after the command (read from the state folder). */
  store?: StatusStore;
  /** The attempts the command acted on. */
  acted: string[];
  /** The operations (types) the pass carried out for each attempt acted on. */
  ops: Map<string, string[]>;
  /** Who carried it out: this command (holding the instance's locks), or the controller that runs the instance. */
  by?: 'here' | 'controller';
}

export interface MarkOptions {
  timeoutMs?: number;
  /** `berth release --exit-code`: the exit code a sandbox's run ends with. */
  exitCode?: number;
  /**
   * Without a controller, see the marked attempts through (`berth regrade`: until their grades
   * are recorded, see-through.ts) rather than making one pass over them.
   */
  seeThrough?: boolean;
  /** The pass configuration's flags (`regrade --max-running`). */
  flags?: PassFlags;
}

export async function markAndPass(ctx: Context, command: RequestCommand, rows: Row[], o: MarkOptions = {}): Promise<MarkResult> {
  const engine = ctx.engine();
  try {
    await engine.ping();
  } catch (err) {
    diag(ctx, 'error', pingFailure(err));
    return { code: EXIT.failed, acted: [], ops: new Map() };
  }
  const controller = await runningController(ctx, engine);
  if (controller === 'elsewhere') return { code: EXIT.failed, acted: [], ops: new Map() };
  if (controller) {
    const asked = await askController(ctx, engine, controller, command, rows, o.timeoutMs ?? 60_000, o.exitCode);
    if (asked !== 'gone') return { ...asked, by: 'controller' };
    diag(ctx, 'info', `the controller stopped before it took the ${command}; doing it here`);
  }
  return markHere(ctx, engine, command, rows, o);
}

/**
 * The instance's controller, when one runs it with this state folder (see the header);
 * 'elsewhere' (said on stderr) when one runs it with another state folder: its records are
 * there, and so must the request be.
 */
async function runningController(ctx: Context, engine: Engine): Promise<EngineLockInfo | 'elsewhere' | undefined> {
  const holder = await readEngineLock(engine, ctx.instance).catch(() => undefined);
  // a controller, or a finite run of one (reconcile --once --wait): both carry requests out
  if (!holder || (holder.command !== 'reconcile' && holder.command !== 'reconcile --once --wait')) return undefined;
  const self = await currentProcess();
  if ((await liveness(holder, self)) === 'dead') return undefined;
  // Its lock file is in this state folder (its path may differ: a controller in a container).
  const file = await readLockFile(ctx.stateDir, ctx.instance).catch(() => undefined);
  if (file && (await liveness(file, self)) !== 'dead') return holder;
  if (file || path.resolve(holder.stateDir) === ctx.stateDir) return undefined;
  diag(
    ctx,
    'error',
    `a controller runs instance "${ctx.instance}" with state folder ${holder.stateDir} (berth reconcile, pid ${holder.pid} on ${holder.hostname}): ` +
      `give --state ${holder.stateDir} and berth asks it to do this`,
  );
  return 'elsewhere';
}

async function askController(
  ctx: Context,
  engine: Engine,
  holder: EngineLockInfo,
  command: RequestCommand,
  rows: Row[],
  timeoutMs: number,
  exitCode?: number,
): Promise<MarkResult | 'gone'> {
  const names = rows.map((r) => r.name);
  const id = await sendRequest(ctx.stateDir, ctx.instance, command, names, new Date(), exitCode !== undefined ? { exitCode } : {});
  const who = `the controller (pid ${holder.pid} on ${holder.hostname})`;
  const waited = await awaitAnswer(ctx.stateDir, ctx.instance, id, {
    timeoutMs,
    gone: async () => (await readEngineLock(engine, ctx.instance))?.token !== holder.token,
  });
  if ('withdrawn' in waited) {
    if ((await readEngineLock(engine, ctx.instance).catch(() => holder))?.token !== holder.token) return 'gone';
    diag(
      ctx,
      'error',
      `${who} runs instance "${ctx.instance}" but did not take the ${command} in ${Math.round(timeoutMs / 1000)} s; nothing was done. ` +
        `Is it stuck? Its log says; try again with a longer --timeout, or stop it (SIGTERM) and run berth ${command} again`,
    );
    return { code: EXIT.failed, acted: [], ops: new Map() };
  }
  if ('taken' in waited) {
    diag(
      ctx,
      'error',
      `${who} took the ${command} of ${names.join(', ')} but has not answered in ${Math.round(timeoutMs / 1000)} s; it carries it out as it can: see berth get`,
    );
    return { code: EXIT.failed, acted: [], ops: new Map() };
  }
  const a = waited.answer;
  if (a.refused) {
    diag(ctx, 'error', `${who}: ${a.refused}`);
    return { code: EXIT.failed, acted: [], ops: new Map() };
  }
  let code: number = EXIT.ok;
  const acted: string[] = [];
  const ops = new Map<string, string[]>();
  for (const r of a.results) {
    if (r.refused !== undefined) {
      diag(ctx, 'error', `${r.name}: ${r.refused}`);
      code = EXIT.failed;
      continue;
    }
    acted.push(r.name);
    ops.set(r.name, r.ops ?? []);
    if (r.error !== undefined) {
      diag(ctx, 'error', `${r.name}: ${r.error}`);
      code = EXIT.failed;
    }
  }
  return { code, acted, ops, store: new StatusStore(ctx.stateDir, ctx.instance, { warn: (m) => diag(ctx, 'warn', m) }) };
}

/** Holding the instance's writer locks: mark, then one pass over the attempts marked. */
async function markHere(ctx: Context, engine: Engine, command: RequestCommand, rows: Row[], o: MarkOptions): Promise<MarkResult> {
  const locks = await takeWriterLocks(ctx, engine, command);
  if (!locks) return { code: EXIT.failed, acted: [], ops: new Map() };
  try {
    // Read again under the locks: the records may have changed since the rows were read.
    const store = new StatusStore(ctx.stateDir, ctx.instance, { warn: (m) => diag(ctx, 'warn', m) });
    const load = await loadSpecs({ specsDir: ctx.specsDir, resultsRoot: ctx.resultsRoot, ...specsOptions(ctx) });
    const specs = new Map(load.specs.map((s) => [s.spec.name, s]));
    // A run recorded Running may have ended while nothing reconciled the instance: recorded first.
    const behind: string[] = [];
    for (const row of rows) {
      const rec = await store.get(row.name);
      if (rec && needsCatchUp(command, rec)) behind.push(row.name);
    }
    // Holding the locks, this command is the only writer: nothing else records these runs.
    if (behind.length) await catchUpPass(ctx, engine, store, behind);
    let code: number = EXIT.ok;
    const acted: string[] = [];
    const at = new Date().toISOString();
    for (const row of rows) {
      const rec = await store.get(row.name);
      const invalid = load.protectedNames.has(row.name) || rec?.reason === REASONS.invalidSpec || rec?.reason === REASONS.duplicateName;
      const m = MARKS[command]({
        name: row.name,
        rec,
        spec: specs.get(row.name),
        invalid,
        instance: ctx.instance,
        at,
        ...(o.exitCode !== undefined ? { exitCode: o.exitCode } : {}),
      });
      if (m && 'refused' in m) {
        diag(ctx, 'error', `${row.name}: ${m.refused}`);
        code = EXIT.failed;
        continue;
      }
      if (m) await store.put(m);
      acted.push(row.name);
    }
    if (!acted.length) return { code, acted, ops: new Map() };
    if (o.seeThrough) {
      const seen = await seeThroughHere(ctx, passConfig(ctx, o.flags ?? {}), engine, store, acted);
      return { code: Math.max(code, seen), store, acted, ops: new Map(), by: 'here' };
    }
    let pass;
    try {
      pass = await reconcilePass({ ...passConfig(ctx, o.flags ?? {}), only: new Set(acted) }, engine, store);
    } catch (err) {
      if (!isEngineDown(err)) throw err;
      diag(ctx, 'error', `${describeEngineError(err)} (the marks are recorded: the next reconcile carries them out)`);
      return { code: EXIT.failed, acted, ops: new Map() };
    }
    for (const f of pass.results.filter((r) => !r.ok)) {
      diag(ctx, 'error', `${f.attempt}: ${f.error ?? 'failed'}`);
      code = EXIT.failed;
    }
    const ops = new Map(acted.map((n) => [n, (pass.plan.actions.find((a) => a.attempt === n)?.ops ?? []).map((op) => op.type)]));
    return { code, store, acted, ops, by: 'here' };
  } finally {
    await locks.release();
  }
}

/** One pass over `names` only; an engine that stops answering leaves the records as they were (the marks then judge them so). */
async function catchUpPass(ctx: Context, engine: Engine, store: StatusStore, names: string[]): Promise<void> {
  try {
    const pass = await reconcilePass({ ...passConfig(ctx, {}), only: new Set(names) }, engine, store);
    for (const f of pass.results.filter((r) => !r.ok)) diag(ctx, 'warn', `${f.attempt}: ${f.error ?? 'failed'}`);
  } catch (err) {
    if (!isEngineDown(err)) throw err;
    diag(ctx, 'warn', describeEngineError(err));
  }
}

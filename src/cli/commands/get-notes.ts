/**
 * What `get` says on stderr beside its table, where a table cannot say it:
 * - attempts held at their last good spec because their spec file broke after they ran (what
 *   runs is left as it is; spec/held.ts), each with its first error;
 * - a specs folder that cannot be read (`get --specs /nope`): the rows are the records alone;
 * - an empty answer, and a suspicious one (every attempt NotReconciled: the state folder holds
 *   no record of the instance), naming the instance, the state folder and the specs folder, and
 *   what berth finds elsewhere: the instance's attempts on the engine and the source it is bound
 *   to, a berth that holds it with another state folder, other instances in this state folder.
 *   The engine is asked only then, briefly, and a silent engine changes nothing of the answer.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { LABELS } from '../../constants';
import { formatIssue } from '../../spec/issue';
import type { LoadReport } from '../../spec/loader';
import { readEngineLock, type EngineLockInfo } from '../../status/engine-lock';
import { describeSource, readBinding, sameSource, type Binding } from '../../status/source-binding';
import type { Context } from '../context';
import { diag, plural } from '../diag';
import type { Row } from './get';
import { folderSource } from './instance-source';

/** How long the engine is given to say what it holds of the instance. */
const ENGINE_LOOK_MS = 3000;

export async function printNotes(
  ctx: Context,
  rows: readonly Row[],
  load: LoadReport,
  o: { names: readonly string[]; selector: readonly string[]; table: boolean },
): Promise<void> {
  heldNote(ctx, rows);
  if (load.rootError) diag(ctx, 'warn', `${load.rootError.file}: ${load.rootError.message}; listing the records of the state folder alone`);
  const where = `instance "${ctx.instance}", state folder ${ctx.stateDir}, specs ${ctx.revision !== undefined ? `revision ${ctx.revision} (${ctx.specsDir})` : ctx.specsDir}`;
  if (rows.length === 0) {
    if (o.names.length) return; // each name not found was named already
    if (o.selector.length) {
      if (o.table) ctx.io.err(`No attempts match -l ${o.selector.join(',')} (${where}).\n`);
      return;
    }
    if (o.table) ctx.io.err(`No attempts (${where}).\n`);
    for (const l of await elsewhere(ctx)) ctx.io.err(`  ${l}\n`);
    return;
  }
  const recorded = rows.some((r) => r.status !== null || r.damaged !== undefined);
  if (recorded) {
    await mixNote(ctx, rows, o);
    return;
  }
  // Every attempt listed is NotReconciled: the specs are there, the records are not.
  const hints = await elsewhere(ctx);
  diag(ctx, 'warn', `every attempt listed is NotReconciled: the state folder holds no record of them (${where})`);
  for (const l of hints.length ? hints : ['nothing of the instance on the engine either: no reconcile has run these specs yet']) ctx.io.err(`  ${l}\n`);
}

/**
 * A table that mixes two instances' worlds (`BERTH_SPECS` of one, `BERTH_INSTANCE` of another):
 * attempts of the specs with no record beside records with no spec here. Only then is the engine
 * asked (briefly) which source the instance is bound to; another one than these specs is said.
 */
async function mixNote(ctx: Context, rows: readonly Row[], o: { names: readonly string[]; selector: readonly string[] }): Promise<void> {
  if (o.names.length || o.selector.length) return;
  const specOnly = rows.filter((r) => r.spec !== null && r.status === null && r.damaged === undefined).length;
  const recordOnly = rows.filter((r) => r.spec === null && r.status !== null && !r.held?.length).length;
  if (!specOnly || !recordOnly) return;
  const seen = await engineLook(ctx);
  if (!seen?.binding || (await sameAs(ctx, seen.binding))) return;
  const specs = ctx.revision !== undefined ? `revision ${ctx.revision}` : `the specs folder ${ctx.specsDir}`;
  diag(
    ctx,
    'warn',
    `this table mixes two sources: instance "${ctx.instance}" is bound to ${describeSource(seen.binding.source)}, not to ${specs}: ${plural(specOnly, 'attempt')} of these specs ${specOnly === 1 ? 'has' : 'have'} no record and ${plural(recordOnly, 'record')} of the instance no spec here; check --specs and --instance (BERTH_SPECS, BERTH_INSTANCE)`,
  );
}

/** Where else the instance's attempts may be: the engine, a writer with another state folder, other instances here. */
async function elsewhere(ctx: Context): Promise<string[]> {
  const out: string[] = [];
  const seen = await engineLook(ctx);
  if (seen && seen.attempts > 0) {
    const from = seen.binding ? `, reconciled from ${describeSource(seen.binding.source)}` : '';
    out.push(`the engine has ${plural(seen.attempts, 'attempt')} of instance "${ctx.instance}"${from}`);
  }
  if (seen?.binding && !(await sameAs(ctx, seen.binding)))
    out.push(`instance "${ctx.instance}" is bound to ${describeSource(seen.binding.source)}, not to these specs`);
  if (seen?.holder && path.resolve(seen.holder.stateDir) !== ctx.stateDir)
    out.push(
      `berth ${seen.holder.command} (pid ${seen.holder.pid}) runs instance "${ctx.instance}" with state folder ${seen.holder.stateDir}: give --state ${seen.holder.stateDir}`,
    );
  else if (seen && seen.attempts > 0 && !seen.holder) out.push(`its records are in another state folder: give --state DIR (the one its reconcile used)`);
  if (seen === undefined) out.push('the engine did not answer: what it holds of the instance is unknown');
  const others = await otherInstances(ctx);
  if (others.length)
    out.push(`state folder ${ctx.stateDir} holds ${others.length === 1 ? 'instance' : 'instances'} ${others.join(', ')}: give --instance NAME`);
  return out;
}

async function sameAs(ctx: Context, binding: Binding): Promise<boolean> {
  if (binding.source.kind === 'git') return ctx.revision !== undefined;
  return sameSource(binding.source, await folderSource(ctx.specsDir));
}

/** What the engine holds of the instance; undefined when it did not answer in time. */
async function engineLook(ctx: Context): Promise<{ attempts: number; binding?: Binding; holder?: EngineLockInfo } | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => {
      // the calls in flight are given up: get ends now, not at --engine-timeout
      ctx.engine().abandon('get does not wait longer');
      resolve(undefined);
    }, ENGINE_LOOK_MS);
    timer.unref();
  });
  const look = (async () => {
    const engine = ctx.engine();
    const [containers, binding, holder] = await Promise.all([
      engine.containers.list([`${LABELS.instance}=${ctx.instance}`]),
      readBinding(engine, ctx.instance).catch(() => undefined),
      readEngineLock(engine, ctx.instance).catch(() => undefined),
    ]);
    const attempts = new Set(containers.map((c) => c.labels[LABELS.attempt]).filter((a) => a !== undefined)).size;
    return { attempts, ...(binding ? { binding } : {}), ...(holder ? { holder } : {}) };
  })().catch(() => undefined);
  try {
    return await Promise.race([look, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Other instances with records in this state folder (`<state>/<instance>/attempts/`). */
async function otherInstances(ctx: Context): Promise<string[]> {
  const names = await fs.readdir(ctx.stateDir).catch(() => [] as string[]);
  const out: string[] = [];
  for (const n of names.sort()) {
    if (n === ctx.instance) continue;
    const files = await fs.readdir(path.join(ctx.stateDir, n, 'attempts')).catch(() => [] as string[]);
    if (files.some((f) => f.endsWith('.json'))) out.push(n);
  }
  return out;
}

/** Names listed per error at most; the rest are counted. */
const HELD_NAMES = 5;

/**
 * The attempts held at their last good spec (spec/held.ts), on stderr: those that share an error
 * (a set's children, whose set file broke) on one line, up to five named. A set's child goes on
 * under its set's last good spec (spec/last-good.ts); a plain Attempt is left as it is.
 */
export function heldNote(ctx: Context, rows: readonly Pick<Row, 'name' | 'held' | 'spec'>[]): void {
  const held = rows.filter((r) => r.held?.length);
  if (!held.length) return;
  const goOn = held.every((r) => r.spec !== null);
  diag(
    ctx,
    'warn',
    `${plural(held.length, 'attempt')} ${held.length === 1 ? 'keeps its' : 'keep their'} last good spec: ${held.length === 1 ? 'its spec is' : 'their specs are'} broken; ${
      goOn ? 'what runs goes on under it and nothing new starts' : 'what runs is left as it is'
    } until fixed (berth validate shows every error)`,
  );
  const byError = new Map<string, string[]>();
  for (const r of held) {
    const first = r.held?.[0];
    if (!first) continue;
    const line = `${formatIssue(first)}${(r.held?.length ?? 0) > 1 ? ` (and ${(r.held?.length ?? 1) - 1} more)` : ''}`;
    byError.set(line, [...(byError.get(line) ?? []), r.name]);
  }
  for (const [line, names] of byError) {
    const shown = names.slice(0, HELD_NAMES).join(', ') + (names.length > HELD_NAMES ? ` and ${names.length - HELD_NAMES} more` : '');
    ctx.io.err(`  ${shown}: ${line}\n`);
  }
}

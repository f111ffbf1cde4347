/**
 * `berth reconcile`: `--once` makes one full pass and exits; with `--wait` it keeps passing
 * until every attempt is finished, waking on engine events and requeue times (never a blind
 * sleep), and while a pass's actions are under way, side passes harvest the exits and fill the
 * slots they free (exitsAlongside). Without `--once` it runs as a controller until SIGTERM/SIGINT. Either way it holds the
 * instance's single-writer locks (writer-lock.ts) while it changes anything.
 *
 * With `--git` the specs are a revision of a repository (docs/CONTRACT.md "Specs from git"):
 * `--once` fetches once, holding the locks, and passes over that one revision; a fetch that
 * fails changes nothing and exits 1 (the last good revision stays in force, marked stale).
 * After every pass, a revision all of whose attempts have finished gets its outcome written (and
 * POSTed to `--notify-url`, whose tries are waited for before the exit), as in the controller.
 */
import { EXIT, FINISHED_PHASES, REASONS, type Phase } from '../../constants';
import { admits, leftAlone, reconcilePass, reservedBy, sideExecutor, sidePlan, type PassConfig, type PassResult } from '../../controller/pass';
import type { AttemptAction } from '../../plan/types';
import { Semaphore } from '../../util/pool';
import { activity } from '../../controller/activity';
import type * as WakerMod from '../../controller/waker';
import { describeEngineError, isEngineDown, pingFailure } from '../../engine/errors';
import type { Engine } from '../../engine/types';
import { changeCount } from '../../plan/render';
import type { StatusStore } from '../../status/store';
import { passConfig, UsageError, type Context } from '../context';
import { diag, plural } from '../diag';
import { liveLine } from '../live-line';
import type * as GetCmd from './get';
import { reportLoadErrors, specsRootError } from './shared';
import { takeWriterLocks } from './writer-lock';
import { gitSourceFrom, type GitFlags } from '../git-flags';
import type * as GitSourceMod from '../../git/source';
import type { GitSource } from '../../git/source';
import type * as GitOutcome from '../../git/outcome';
import type { RevisionOutcomes } from '../../git/outcome';
import { notifyOf } from '../notify-flags';
import type * as ControllerCmd from './controller';

/** The waker (and the engine-event source under it) loads only with --wait. */
type Waker = WakerMod.Waker;

/** The git modules load only with --git. */
const short = (rev: string): string => (require('../../git/source') as typeof GitSourceMod).short(rev);

export interface ReconcileOptions extends GitFlags {
  once?: boolean;
  wait?: boolean;
  /** Seconds --wait may take. */
  timeout?: number;
  maxRunning?: number;
  concurrency?: number;
  resync?: number;
  workers?: number;
  retryBackoff?: number;
  /** Re-runs after infrastructure deaths (EngineRestarted, StartFailed). */
  infraRetries?: number;
  egressProxyImage?: string;
  egressNetwork?: string;
  metricsAddr?: string;
  /** Controller with --git: a webhook that triggers a fetch (git/webhook.ts), and its HMAC secret. */
  webhookAddr?: string;
  webhookSecretFile?: string;
  webhookSecretEnv?: string;
  /** Controller with --git: where each revision's outcome is POSTed, and the HMAC secret it is signed with. */
  notifyUrl?: string;
  notifySecretFile?: string;
  notifySecretEnv?: string;
  allowEmpty?: boolean;
  /** The harvest's log cap and hashing budget. */
  logMaxBytes?: number;
  hashMaxBytes?: number;
  hashMaxSeconds?: number;
  /** Controller: how often it checks that it still holds the instance's locks (no flag; tests). */
  lockCheckSeconds?: number;
}

const DONE_FOR_WAIT: ReadonlySet<Phase> = new Set([...FINISHED_PHASES, 'Invalid', 'Blocked']);

function counts(res: PassResult, phases: Map<string, Phase>): string {
  const by = new Map<string, number>();
  for (const s of res.load.specs) {
    const p = phases.get(s.spec.name) ?? 'Pending';
    by.set(p, (by.get(p) ?? 0) + 1);
  }
  return [...by.entries()].sort(([a], [b]) => (a < b ? -1 : 1)).map(([p, n]) => `${n} ${p}`).join(', ') || 'no attempts';
}

export async function runReconcile(ctx: Context, o: ReconcileOptions): Promise<number> {
  const git = await gitSourceFrom(ctx, o);
  const rootError = git ? undefined : specsRootError(ctx);
  if (rootError) {
    ctx.io.err(rootError);
    return EXIT.usage;
  }
  if (o.once && o.webhookAddr !== undefined) throw new UsageError('--webhook-addr is for the controller (without --once)');
  // the controller's modules (its folder watcher, prom-client) load only in controller mode
  if (!o.once) return (require('./controller') as typeof ControllerCmd).runController(ctx, o);
  const notify = await notifyOf(ctx, o, git);
  const cfg = passConfig(ctx, o);
  const engine = ctx.engine();
  const store = ctx.store();
  try {
    await engine.ping();
  } catch (err) {
    ctx.io.err(`berth: ${pingFailure(err)}\n`);
    return EXIT.failed;
  }
  // The records are read (and damaged ones set aside) while the first pass's lists go out; the
  // pass awaits that before it changes anything. The specs folder is read once those lists are
  // out too (planPass): its synchronous reads, started earlier, would hold back the lock's calls.
  const locks = await takeWriterLocks(ctx, engine, o.wait ? 'reconcile --once --wait' : 'reconcile --once', { recoverAlongside: true });
  if (!locks) return EXIT.failed;
  try {
    if (git) {
      const fetched = await fetchOnce(ctx, git);
      if (!fetched) return EXIT.failed;
      ctx.specsDir = fetched.dir;
      cfg.specsDir = fetched.dir;
      cfg.revision = fetched.revision;
    }
    const outcomes = git ? new (require('../../git/outcome') as typeof GitOutcome).RevisionOutcomes({ root: git.mirror.root, url: git.cfg.url.display, log: ctx.log, ...(notify ? { notify } : {}) }) : undefined;
    try {
      return await passes(ctx, o, cfg, engine, store, git, outcomes);
    } finally {
      // The outcomes' POSTs are tried (with their back-off) before the exit: nothing is left behind.
      await outcomes?.drain();
      outcomes?.close();
    }
  } finally {
    await locks.release();
  }
}

/** `--once --git`: one fetch; undefined (told on stderr) when it fails. */
async function fetchOnce(ctx: Context, git: GitSource): Promise<{ dir: string; revision: string } | undefined> {
  const before = await git.prepare();
  const out = await git.sync();
  if (out.ok) return out.revision;
  const kept = before ? `revision ${short(before.revision)} stays in force, marked stale` : 'no revision is in force';
  ctx.io.err(`berth: ${git.cfg.url.display}: ${out.message}; nothing was planned or changed (${kept})\n`);
  return undefined;
}

/** The passes of `--once` (one, or until done with `--wait`), holding the instance's locks. */
async function passes(
  ctx: Context,
  o: ReconcileOptions,
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  git?: GitSource,
  outcomes?: RevisionOutcomes,
): Promise<number> {
  const started = Date.now();
  let waker: Waker | undefined;
  if (o.wait) {
    waker = new (require('../../controller/waker') as typeof WakerMod).Waker();
    waker.followEngine(engine, ctx.instance, ctx.log);
    // every pass and side pass sees the exits inspected on their `die` before the lists show them
    cfg.exits = waker;
  }
  let last: PassResult | undefined;
  let opFailures = 0;
  let lastLine = '';
  const live = liveLine(ctx.io);
  try {
    for (let pass = 1; ; pass++) {
      const log = ctx.log.child({ pass });
      let res: PassResult;
      ctx.calls.reset();
      let sideWork = 0;
      const alongside = waker
        ? async (planned: Omit<PassResult, 'results'>, over: Promise<unknown>, ended: ReadonlySet<string>) => {
            sideWork = await exitsAlongside({ ...cfg, log }, engine, store, waker!, planned, over, ended, (m) => diag(ctx, 'error', m));
          }
        : undefined;
      try {
        // an attempt that died while its action was under way (its start's, say) was left out of
        // the side passes until then: the action's end wakes them (Waker.actionEnded)
        res = await reconcilePass({ ...cfg, log }, engine, store, alongside, waker ? (a) => waker!.actionEnded(a) : undefined);
      } catch (err) {
        if (isEngineDown(err)) {
          live.end();
          diag(ctx, 'error', describeEngineError(err));
          return EXIT.failed;
        }
        throw err;
      }
      waker?.lookAgain(res.snapshot);
      if (pass === 1) reportLoadErrors(ctx, res.load);
      if (pass === 1 && git && res.load.revision !== undefined) await git.applied(res.load.revision, res.load.errors);
      if (pass === 1 && res.plan.emptySource === 'held') {
        ctx.io.err(`berth: ${git ? `${git.cfg.url.display} at ${short(cfg.revision ?? '')}` : ctx.specsDir} yields no attempts while instance ${ctx.instance} has some: nothing was removed (--allow-empty removes them; berth clean removes everything)\n`);
      }
      last = res;
      const failed = res.results.filter((r) => !r.ok);
      opFailures = failed.length;
      for (const f of failed) diag(ctx, 'error', `${f.attempt}: ${f.error ?? 'failed'}`);
      for (const r of res.results) {
        const a = res.plan.actions.find((x) => x.attempt === r.attempt);
        const did = a && activity(a, r.ran, await store.get(r.attempt));
        if (did) log.info(did);
      }
      if (changeCount(res.plan) > 0) log.info(`pass ${pass}: ${plural(res.results.length, 'attempt')} changed`, { calls: ctx.calls.total });
      const statuses = await store.loadAll();
      // A revision whose attempts have all finished: its outcome (written once, kept across runs).
      if (outcomes) await outcomes.check(statuses.values()).catch((err: unknown) => log.warn(`revision outcome: ${String(err)}`));
      const phases = new Map([...statuses.values()].map((s) => [s.name, s.phase]));
      // A run whose harvest failed is done for --wait (the exit code says so); a later pass tries it again.
      const harvestFailed = new Set([...statuses.values()].filter((s) => s.reason === REASONS.harvestFailed).map((s) => s.name));
      if (!o.wait) break;
      const line = counts(res, phases);
      const secs = Math.round((Date.now() - started) / 1000);
      // On a terminal the line is redrawn in place every pass; elsewhere (and as JSON) it is written when it changes.
      if (ctx.logFormat === 'json') {
        if (line !== lastLine) diag(ctx, 'info', `[${secs}s] ${line}`, { progress: true, elapsedSeconds: secs });
      } else if (ctx.io.isTTY) live.show(`[${secs}s] ${line}`);
      else if (line !== lastLine) ctx.io.err(`[${secs}s] ${line}\n`);
      lastLine = line;
      // Busy: not in a final phase, or waiting for a slot or a retry's back-off.
      const waiting = new Set(res.plan.actions.filter((a) => a.kind === 'wait').map((a) => a.attempt));
      const pending = res.load.specs.filter(
        (s) => !(DONE_FOR_WAIT.has(phases.get(s.spec.name) ?? 'Pending') || harvestFailed.has(s.spec.name)) || waiting.has(s.spec.name),
      );
      // Side passes' work (a harvest during this pass) may call for more: a TTL's removal.
      if (pending.length === 0 && changeCount(res.plan) === 0 && sideWork === 0) break;
      if (o.timeout !== undefined && Date.now() - started > o.timeout * 1000) {
        live.end();
        diag(ctx, 'error', `--timeout ${o.timeout}s passed with ${plural(pending.length, 'attempt')} unfinished`);
        return EXIT.failed;
      }
      // Wait for the engine to tell us something changed, or for the nearest requeue time.
      const requeue = res.plan.actions.map((a) => a.requeueAfterMs).filter((x): x is number => x !== undefined);
      const changed = changeCount(res.plan) > 0 || sideWork > 0;
      await waker!.wait(changed ? 0 : Math.min(2_000, ...requeue.map((x) => x + 50)));
    }
  } finally {
    waker?.close();
  }
  live.end();
  // The table (and the exit codes that read it) only with --wait: a lone pass loads nothing twice
  // (nor get.ts: its modules load only here).
  const get = o.wait ? (require('./get') as typeof GetCmd) : undefined;
  const rows = get ? await get.collectRows(ctx) : [];
  if (get) ctx.io.out(get.renderRows(rows, false));
  if (last && last.load.errors.length) return EXIT.usage;
  if (o.wait && rows.some((r) => r.phase === 'Failed' || r.phase === 'TimedOut')) return EXIT.attemptsFailed;
  if (opFailures > 0 || (o.wait && rows.some((r) => r.phase === 'Blocked' || r.reason === REASONS.harvestFailed))) return EXIT.failed;
  return EXIT.ok;
}

/**
 * `--wait`: while a pass's actions are under way (its starts, copies, harvests), a `die`
 * event (or a second look at one, or the end of a side action that can give work; not every engine event: a side pass
 * lists the engine, and on a loaded machine one per event cost more than it saved) wakes a side pass over the attempts the pass left alone (sidePlan): an exit is
 * harvested and recorded at once instead of after the pass's last start (issue 18: a `die`
 * took up to seconds to show in the status), and the slot it frees is given at once. Side
 * actions run in the background, at most --concurrency at once, each attempt busy (left out of
 * later side passes, its admission holding its slot) until its action ends; the pass ends once
 * they have. Returns how many side actions were carried out. An error ends the side passes;
 * the next pass sees whatever is left.
 */
async function exitsAlongside(
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  waker: Waker,
  planned: Omit<PassResult, 'results'>,
  over: Promise<unknown>,
  ended: ReadonlySet<string>,
  report: (m: string) => void,
): Promise<number> {
  const stop = new AbortController();
  void over.then(
    () => stop.abort(),
    () => stop.abort(),
  );
  const executor = sideExecutor(cfg, engine, store);
  const slots = new Semaphore(Math.max(1, cfg.concurrency));
  const under = new Map<string, AttemptAction>();
  const tasks = new Set<Promise<void>>();
  let work = 0;
  for (;;) {
    await waker.waitExit(60_000, stop.signal);
    if (stop.signal.aborted) break;
    // Both before the side pass's lists: an admission that ends meanwhile counts twice, never not at all.
    const only = leftAlone(planned, ended);
    for (const n of under.keys()) only.delete(n);
    const reserved = reservedBy(planned, ended);
    for (const a of under.values()) {
      if (!admits(a)) continue;
      reserved.reservedSlots++;
      if (a.set !== undefined) reserved.reservedBySet.set(a.set, (reserved.reservedBySet.get(a.set) ?? 0) + 1);
    }
    let side: Awaited<ReturnType<typeof sidePlan>>;
    try {
      side = await sidePlan(cfg, engine, store, only, reserved, planned.load);
    } catch (err) {
      cfg.log.debug(`side pass: ${String(err)}; the next pass looks again`);
      break;
    }
    if (side.snapshot) waker.lookAgain(side.snapshot);
    cfg.log.debug(`side pass over ${plural(only.size, 'attempt')}: ${side.actions.length ? side.actions.map((a) => `${a.attempt} ${a.kind}`).join(', ') : 'nothing to do'}`);
    for (const a of side.actions) {
      work++;
      under.set(a.attempt, a);
      // Whether the action's end can give a side pass work: a finish (its TTL's removal may be
      // due), an action that failed, an admission that did not leave its attempt Running (its slot
      // is free again). A start that went well, or a removal, gives none: its slot stays taken.
      let mayGiveWork = true;
      const task = slots
        .run(() => executor.runAction(a))
        .then(
          async (r) => {
            if (!r.ok) report(`${r.attempt}: ${r.error ?? 'failed'}`);
            const now = await store.get(r.attempt);
            mayGiveWork = !r.ok || a.kind === 'finish' || (admits(a) && now?.phase !== 'Running');
            const did = activity(a, r.ran, now);
            if (did) cfg.log.info(did);
          },
          (err: unknown) => report(`${a.attempt}: ${String(err)}`),
        )
        .finally(() => {
          under.delete(a.attempt);
          tasks.delete(task);
          // The next pass looks again in any case; a side pass when the end can give it work, or
          // when the attempt's container died while it was busy (Waker.actionEnded).
          waker.poke();
          if (mayGiveWork) waker.pokeExit();
          waker.actionEnded(a.attempt);
        });
      tasks.add(task);
    }
  }
  await Promise.all([...tasks]);
  return work;
}

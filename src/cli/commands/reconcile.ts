/**
 * `berth reconcile`: `--once` makes one full pass and exits; `--once --wait` is a finite run of
 * the controller (src/controller/controller.ts: the same queue, slots, exit handling and
 * executor, over specs read once) until every attempt is final. Without `--once` it runs as a
 * controller until SIGTERM/SIGINT. Either way it holds the instance's single-writer locks
 * (writer-lock.ts) while it changes anything.
 *
 * With `--git` the specs are a revision of a repository (docs/CONTRACT.md "Specs from git"):
 * `--once` fetches once, holding the locks, and passes over that one revision; a fetch that
 * fails changes nothing and exits 1 (the last good revision stays in force, marked stale).
 * After every pass, a revision all of whose attempts have finished gets its outcome written (and
 * POSTed to `--notify-url`, whose tries are waited for before the exit), as in the controller.
 */
import { settled } from '../../plan/settled';
import { EXIT, REASONS } from '../../constants';
import { reconcilePassBuilding, reconcilePassPulling, type PassConfig, type PassResult } from '../../controller/pass';
import type * as ControllerMod from '../../controller/controller';
import type { Plan } from '../../plan/types';
import type { LoadedSpec, LoadResult } from '../../spec/types';
import type { AttemptStatus } from '../../status/types';
import { estimateLeft, PROGRESS_HEARTBEAT_MS, progressText, useColour, type ProgressState } from '../progress';
import { activity, planActivity } from '../../controller/activity';
import { describeEngineError, isEngineDown, pingFailure } from '../../engine/errors';
import type { Engine } from '../../engine/types';
import { changeCount } from '../../plan/render';
import type { StatusStore } from '../../status/store';
import { passConfig, UsageError, type Context } from '../context';
import { diag, plural } from '../diag';
import { liveLine } from '../live-line';
import { pullsUnderWay } from '../pull-lines';
import type * as GetCmd from './get';
import type * as WaitCmd from './wait';
import { emptySourceMessage, reportLoadErrors, specsRootError } from './shared';
import { takeWriterLocks } from './writer-lock';
import { refusedForIsolation } from './host-check';
import { bindInstance, folderSource, gitSourceOf } from './instance-source';
import { watchInterrupts, type Interrupt } from '../interrupt';
import { gitSourceFrom, type GitFlags } from '../git-flags';
import type * as GitSourceMod from '../../git/source';
import type { GitSource } from '../../git/source';
import type * as GitOutcome from '../../git/outcome';
import type { RevisionOutcomes } from '../../git/outcome';
import { notifyOf } from '../notify-flags';
import { endLine, tally } from '../../sets/outcome';
import { gradePending, latestGrade } from '../../sets/grade-state';
import { failOnOf, outcomeExit, outcomeOf, watched } from '../wait-condition';
import type * as ControllerCmd from './controller';
import { formatDuration } from '../../util/duration';
import type { ApiFlags } from './api';
import type * as ApiCmd from './api';
import { coalesced } from '../../util/coalesce';

/** The git modules load only with --git. */
const short = (rev: string): string => (require('../../git/source') as typeof GitSourceMod).short(rev);

export interface ReconcileOptions extends GitFlags, ApiFlags {
  once?: boolean;
  wait?: boolean;
  /** Seconds --wait may take (`--timeout`, a duration; fractions from `500ms`). */
  timeout?: number;
  /** With --wait: which outcomes make the exit code non-zero (failed, infra, none; default failed). */
  failOn?: string;
  maxRunning?: number;
  concurrency?: number;
  resync?: number;
  /** Seconds a spec file the controller is told of must go unwritten before it is read (`--settle`). */
  settle?: number;
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
  /** `--fixture-cache-size`: bytes of packed fixture layers kept in the state folder. */
  fixtureCacheSize?: number;
  /** `--default-deadline` (ms): the deadline of attempts whose spec sets no deadlineSeconds. */
  defaultDeadline?: number;
  /** `--default-disk` (bytes): the disk limit of attempts whose spec sets no resources.disk. */
  defaultDisk?: number;
  /** `--disk-interval` (ms). */
  diskInterval?: number;
  /** `--max-builds`, `--build-timeout` (ms); image GC's `--image-gc-high`, `--image-gc-low`, `--image-gc-min-age` (ms). */
  maxBuilds?: number;
  buildTimeout?: number;
  imageGcHigh?: number;
  imageGcLow?: number;
  imageGcMinAge?: number;
  /** Controller: how often it checks that it still holds the instance's locks (no flag; tests). */
  lockCheckSeconds?: number;
  /** Rebind an instance bound to another source to this one (instance-source.ts). */
  moveInstance?: boolean;
  /** Run attempts on an engine that would not isolate them (host-check.ts). */
  allowWeakIsolation?: boolean;
  /** How often an unchanged progress line is written again off a terminal (no flag; tests; default PROGRESS_HEARTBEAT_MS). */
  progressHeartbeatMs?: number;
}

/** Where the run stands: settled attempts by how they count (as the end line counts them), the others by phase. */
export function progressState(
  load: LoadResult,
  statuses: ReadonlyMap<string, AttemptStatus>,
  pending: (sp: LoadedSpec) => boolean,
  infraRetries: number | undefined,
): ProgressState {
  const outcomes: ProgressState['outcomes'] = {};
  const busy = new Map<string, number>();
  for (const sp of load.specs) {
    const st = statuses.get(sp.spec.name);
    const o = pending(sp) ? 'unfinished' : outcomeOf(watched(sp.spec.name, sp, st, infraRetries)).outcome;
    if (o === 'unfinished') {
      // a finished run whose grade is to come (spec.grade) is neither done nor running: graded, or waiting for its grader
      const grading = gradePending(sp, st) ? (latestGrade(st)?.state === 'grading' ? 'Grading' : 'waiting for a grade') : undefined;
      const ph = grading ?? st?.phase ?? 'Pending';
      busy.set(ph, (busy.get(ph) ?? 0) + 1);
    } else outcomes[o] = (outcomes[o] ?? 0) + 1;
  }
  return { total: load.specs.length, outcomes, busy };
}

export async function runReconcile(ctx: Context, o: ReconcileOptions): Promise<number> {
  const git = await gitSourceFrom(ctx, o);
  const rootError = git ? undefined : specsRootError(ctx);
  if (rootError) {
    ctx.io.err(rootError);
    return EXIT.usage;
  }
  if (o.once && o.webhookAddr !== undefined) throw new UsageError('--webhook-addr is for the controller (without --once)');
  failOnOf(o.failOn);
  // the controller's modules (its folder watcher, prom-client) load only in controller mode
  if (!o.once) return (require('./controller') as typeof ControllerCmd).runController(ctx, o);
  const notify = await notifyOf(ctx, o, git);
  // the API is served by a finite run of the controller too (--once --wait), not by a lone pass
  if (o.apiAddr !== undefined && !o.wait) throw new UsageError('--api-addr is for the controller and reconcile --once --wait');
  const apiTok = o.wait ? await (require('./api') as typeof ApiCmd).apiToken(ctx, o) : undefined;
  const cfg = passConfig(ctx, o);
  const engine = ctx.engine();
  const store = ctx.store();
  try {
    await engine.ping();
  } catch (err) {
    ctx.io.err(`berth: ${pingFailure(err)}\n`);
    return EXIT.failed;
  }
  // an engine that would not isolate an attempt runs none (unless --allow-weak-isolation)
  if (await refusedForIsolation(ctx, engine, o.allowWeakIsolation === true)) return EXIT.failed;
  // The records are read (and damaged ones set aside) while the first pass's lists go out; the
  // pass awaits that before it changes anything. The specs folder is read once those lists are
  // out too (planPass): its synchronous reads, started earlier, would hold back the lock's calls.
  const locks = await takeWriterLocks(ctx, engine, o.wait ? 'reconcile --once --wait' : 'reconcile --once', { recoverAlongside: true });
  if (!locks) return EXIT.failed;
  // Ctrl-C / SIGTERM from here: the wait ends, the locks are released, attempts keep running (exit 130 / 143).
  const interrupt = watchInterrupts(ctx, o.wait ? 'berth reconcile --once --wait' : 'berth reconcile --once');
  try {
    // The instance is bound to its source: another source is refused before anything changes.
    const source = git ? gitSourceOf(git) : await folderSource(ctx.specsDir);
    if (!(await bindInstance(ctx, engine, source, { command: 'reconcile', ...(o.moveInstance ? { move: true } : {}) }))) return EXIT.usage;
    if (git) {
      const fetched = await fetchOnce(ctx, git);
      if (!fetched) return EXIT.failed;
      ctx.specsDir = fetched.dir;
      cfg.specsDir = fetched.dir;
      cfg.revision = fetched.revision;
    }
    const outcomes = git
      ? new (require('../../git/outcome') as typeof GitOutcome).RevisionOutcomes({
          root: git.mirror.root,
          url: git.cfg.url.display,
          log: ctx.log,
          ...(notify ? { notify } : {}),
        })
      : undefined;
    try {
      const code = await passes(ctx, { ...o, ...(apiTok !== undefined ? { apiToken: apiTok } : {}) }, cfg, engine, store, git, outcomes, interrupt);
      return interrupt.code ?? code;
    } finally {
      // The outcomes' POSTs are tried (with their back-off) before the exit: nothing is left behind.
      await outcomes?.drain();
      outcomes?.close();
    }
  } finally {
    await locks.release();
    interrupt.dispose();
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

/** `--once`: one pass, or with `--wait` a finite run of the controller; holding the instance's locks. */
async function passes(
  ctx: Context,
  o: ReconcileOptions & { apiToken?: string },
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  git?: GitSource,
  outcomes?: RevisionOutcomes,
  interrupt?: Interrupt,
): Promise<number> {
  const ended = o.wait ? await untilFinal(ctx, o, cfg, engine, store, git, outcomes, interrupt) : await onePass(ctx, cfg, engine, store, git, outcomes);
  if (typeof ended === 'number') return ended;
  // The table (and the exit codes that read it) only with --wait: a lone pass loads nothing twice
  // (nor get.ts: its modules load only here).
  const get = o.wait ? (require('./get') as typeof GetCmd) : undefined;
  if (!get) {
    if (ended.load && ended.load.errors.length) return EXIT.usage;
    return ended.opFailures > 0 ? EXIT.failed : EXIT.ok;
  }
  const rows = await get.collectRows(ctx);
  ctx.io.out(get.renderRows(rows, false));
  // The end line: passed, failed and infrastructure outcomes (Invalid and Blocked attempts are settled infrastructure outcomes).
  const specs = new Map((ended.load?.specs ?? []).map((s) => [s.spec.name, s]));
  const judged = rows.map((r) => ({
    w: watched(r.name, specs.get(r.name), r.status ?? undefined, cfg.policy.infraRetries),
    loaded: specs.get(r.name),
    status: r.status ?? undefined,
  }));
  const counted = tally(judged.map(({ w }) => ({ name: w.name, outcome: outcomeOf(w) })));
  ctx.io.out(
    `${endLine(
      counted,
      rows.filter((r) => r.touched).map((r) => r.name),
    )}\n`,
  );
  // inside GitHub Actions: an annotation for each attempt that did not pass
  (require('./wait') as typeof WaitCmd).annotateOutcomes(ctx, judged);
  // berth's own errors first: a spec error no Invalid attempt stands for, --timeout, a failed harvest.
  if (ended.load && strayErrors(ended.load, rows).length) return EXIT.usage;
  if (ended.timedOut) return EXIT.failed;
  if (ended.opFailures > 0 || rows.some((r) => r.reason === REASONS.harvestFailed)) return EXIT.failed;
  return outcomeExit(counted, failOnOf(o.failOn));
}

/** Spec errors that no attempt's Invalid record stands for (a file that names no attempt, a set that expands to no child). */
function strayErrors(load: LoadResult, rows: readonly { name: string; phase: string }[]): LoadResult['errors'] {
  const invalid = new Set(rows.filter((r) => r.phase === 'Invalid').map((r) => r.name));
  return load.errors.filter((e) => {
    if (e.attempt !== undefined && invalid.has(e.attempt)) return false;
    if (e.set !== undefined && (load.sets?.get(e.set)?.children ?? []).some((c) => invalid.has(c))) return false;
    return true;
  });
}

/** How the passes ended (an exit code when they ended early). */
interface Ended {
  load?: LoadResult;
  opFailures: number;
  timedOut?: boolean;
}

/**
 * What the first look at the specs says: their errors, a source held empty, a git revision
 * applied. True when the source declares nothing for an instance that never had anything and
 * `--allow-empty` was not given: the command exits 2.
 */
async function firstLook(ctx: Context, load: LoadResult, plan: Plan, git: GitSource | undefined, allowEmpty: boolean): Promise<boolean> {
  reportLoadErrors(ctx, load);
  if (git && load.revision !== undefined) await git.applied(load.revision, load.errors);
  if (plan.emptySource === 'empty' && !allowEmpty && load.errors.length === 0) {
    ctx.io.err(emptySourceMessage(ctx.instance, git ? `${git.cfg.url.display} at ${short(load.revision ?? '')}` : ctx.specsDir));
    return true;
  }
  if (plan.emptySource === 'held') {
    ctx.io.err(
      `berth: ${git ? `${git.cfg.url.display} at ${short(load.revision ?? '')}` : ctx.specsDir} yields no attempts while instance ${ctx.instance} has some: nothing was removed (--allow-empty removes them; berth clean removes everything)\n`,
    );
  }
  return false;
}

/** `--once` alone: one pass. */
async function onePass(
  ctx: Context,
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  git?: GitSource,
  outcomes?: RevisionOutcomes,
): Promise<Ended | number> {
  let res: PassResult;
  try {
    res = await reconcilePassBuilding(cfg, engine, store, reconcilePassPulling);
  } catch (err) {
    if (!isEngineDown(err)) throw err;
    diag(ctx, 'error', describeEngineError(err));
    return EXIT.failed;
  }
  if (await firstLook(ctx, res.load, res.plan, git, cfg.allowEmpty === true)) return EXIT.usage;
  for (const line of planActivity(res.plan)) cfg.log.info(line);
  const failed = res.results.filter((r) => !r.ok);
  for (const f of failed) diag(ctx, 'error', `${f.attempt}: ${f.error ?? 'failed'}`);
  for (const r of res.results) {
    const a = res.plan.actions.find((x) => x.attempt === r.attempt);
    const did = a && activity(a, r.ran, await store.get(r.attempt));
    if (did) cfg.log.info(did);
  }
  if (changeCount(res.plan) > 0) cfg.log.info(`${plural(res.results.length, 'attempt')} changed`, { calls: ctx.calls.total });
  // A revision whose attempts have all finished: its outcome (written once, kept across runs).
  if (outcomes) await outcomes.check((await store.loadAll()).values(), res.load).catch((err: unknown) => cfg.log.warn(`revision outcome: ${String(err)}`));
  return { load: res.load, opFailures: failed.length };
}

/**
 * `--once --wait`: a finite run of the controller (src/controller/controller.ts): the specs read
 * once, the same queue, slots, exit handling and executor, until every attempt is final (or
 * `--timeout`). Progress goes to stderr: redrawn in place on a terminal, a line when it changes
 * elsewhere.
 */
async function untilFinal(
  ctx: Context,
  o: ReconcileOptions & { apiToken?: string },
  cfg: PassConfig,
  engine: Engine,
  store: StatusStore,
  git?: GitSource,
  outcomes?: RevisionOutcomes,
  interrupt?: Interrupt,
): Promise<Ended | number> {
  const { Controller } = require('../../controller/controller') as typeof ControllerMod;
  const settledSpec = (sp: LoadedSpec, statuses: ReadonlyMap<string, AttemptStatus>): boolean =>
    settled(watched(sp.spec.name, sp, statuses.get(sp.spec.name), cfg.policy.infraRetries));
  const started = Date.now();
  const live = liveLine(ctx.io);
  let lastLine = '';
  let first = true;
  let firstDone: Promise<void> = Promise.resolve();
  const { promise: ended, resolve: end, reject: fail } = Promise.withResolvers<Ended | number>();
  const colour = useColour(ctx.io.isTTY, ctx.env);
  const heartbeat = o.progressHeartbeatMs ?? PROGRESS_HEARTBEAT_MS;
  /** The last state shown, when it was written, and when the count of settled attempts last changed (the estimate's pace). */
  let lastState: ProgressState | undefined;
  let lastWritten = 0;
  let lastDone = 0;
  let lastDoneAt = 0;
  const progress = (state: ProgressState): void => {
    const elapsed = Date.now() - started;
    const secs = Math.round(elapsed / 1000);
    const line = progressText(state);
    const done = Object.values(state.outcomes).reduce((a, n) => a + (n ?? 0), 0);
    if (done !== lastDone) {
      lastDone = done;
      lastDoneAt = elapsed;
    }
    lastState = state;
    // On a terminal the line is redrawn in place, in colour, with the time left (every second:
    // ticker below); elsewhere (and as JSON) it is written when it changes, and again every
    // PROGRESS_HEARTBEAT_MS while nothing does, so a long attempt never leaves the log silent.
    const due = line !== lastLine || elapsed - lastWritten >= heartbeat;
    if (ctx.logFormat === 'json') {
      if (due) diag(ctx, 'info', `[${secs}s] ${line}`, { progress: true, elapsedSeconds: secs });
    } else if (ctx.io.isTTY) {
      const left = estimateLeft(state, elapsed, lastDoneAt);
      const pulling = controller.images.puller ? pullsUnderWay(controller.images.puller.view()) : '';
      live.show(`[${secs}s] ${progressText(state, colour)}${pulling ? ` · ${pulling}` : ''}${left ? ` · ${left}` : ''}`);
    } else if (due) ctx.io.err(`[${secs}s] ${line}\n`);
    if (due) lastWritten = elapsed;
    lastLine = line;
  };
  const ticker = setInterval(
    () => {
      if (lastState) progress(lastState);
    },
    ctx.io.isTTY && ctx.logFormat !== 'json' ? 1000 : heartbeat,
  );
  ticker.unref();
  // Whether every attempt is final, looked at whenever the controller may have become idle.
  const check = coalesced(async () => {
    const load = controller.latestLoad();
    if (!load) return;
    const statuses = await store.loadAll();
    progress(progressState(load, statuses, (sp) => controller.pending(sp.spec.name), cfg.policy.infraRetries));
    if (!controller.idle()) return;
    // Settled (plan/settled.ts: a run whose harvest failed too, which the exit code reports), and nothing pending in the controller.
    const unfinished = load.specs.filter((sp) => !settledSpec(sp, statuses) || controller.pending(sp.spec.name));
    if (unfinished.length === 0 && controller.idle()) {
      await firstDone;
      // the revision's outcome (written once, kept across runs) before the exit drains its POSTs
      if (outcomes) await outcomes.check(statuses.values(), load).catch((err: unknown) => cfg.log.warn(`revision outcome: ${String(err)}`));
      end({ load, opFailures: 0 });
    }
  });
  const controller = new Controller({
    cfg,
    engine,
    store,
    log: cfg.log,
    workers: o.workers ?? cfg.concurrency,
    resyncMs: 0,
    finite: true,
    ...(git ? { git } : {}),
    ...(outcomes ? { outcomes } : {}),
    watcher: {
      planned: (load, plan) => {
        if (!first) return;
        first = false;
        firstDone = firstLook(ctx, load, plan, git, cfg.allowEmpty === true).then((refused) => {
          if (refused) end(EXIT.usage);
        });
      },
      settled: () => void check().catch(fail),
      engineDown: (err) => {
        diag(ctx, 'error', describeEngineError(err));
        end(EXIT.failed);
      },
    },
  });
  const timer = o.timeout !== undefined ? setTimeout(() => end({ opFailures: 0, timedOut: true }), o.timeout * 1000) : undefined;
  interrupt?.onSignal((code) => end(code));
  let stopped = false;
  let api: Awaited<ReturnType<typeof ApiCmd.startApi>> | undefined;
  try {
    await controller.start();
    api = await (require('./api') as typeof ApiCmd).startApi(ctx, o, o.apiToken, { controller, engine: controller.engine, store, git: !!git });
    const e = await ended;
    if (typeof e !== 'number' && e.timedOut) {
      // the operations under way finish first (their lines come before the verdict, which is the last line)
      stopped = true;
      await controller.stop();
      const load = controller.latestLoad();
      const statuses = await store.loadAll();
      const left = (load?.specs ?? []).filter((sp) => !settledSpec(sp, statuses)).length;
      live.end();
      diag(ctx, 'error', `--timeout ${formatDuration((o.timeout ?? 0) * 1000)} passed with ${plural(left, 'attempt')} unfinished`);
      return { ...e, ...(load ? { load } : {}) };
    }
    return e;
  } finally {
    clearTimeout(timer);
    clearInterval(ticker);
    await api?.close();
    // Actions under way finish (those still waiting for a worker are dropped); attempts keep running.
    if (!stopped) await controller.stop();
    live.end();
    await firstDone;
  }
}

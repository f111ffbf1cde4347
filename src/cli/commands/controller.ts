/**
 * `berth reconcile` without --once: the controller (src/controller/controller.ts) as a
 * service. One writer per instance: the state folder's lock file and the engine-side instance
 * lock (writer-lock.ts; a second writer exits 1 naming the holder). Optional endpoint with the
 * live fleet report (/), metrics and health. SIGTERM/SIGINT: stop taking work, finish the actions under way (those still
 * waiting for a worker are dropped), flush status, release the locks, exit 0; attempts keep
 * running and a restarted controller adopts them. A controller whose lock is taken away stops
 * the same way and exits 1. A stop is prompt also while the engine does not answer (its calls
 * are given up), and /readyz says why the controller is not ready, the engine first.
 */
import { DEFAULTS, EXIT } from '../../constants';
import { Controller } from '../../controller/controller';
import { serve } from '../../controller/http';
import { ControllerMetrics } from '../../controller/metrics';
import { isEngineDown, pingFailure } from '../../engine/errors';
import type { Engine } from '../../engine/types';
import { instrumentEngine } from '../../engine/wrap';
import { reportFromLoad } from '../../report/from-load';
import { withLiveTouched } from '../../touch/target';
import { renderReport, reportCsp } from '../../report/render';
import { passConfig, UsageError, type Context } from '../context';
import type { ReconcileOptions } from './reconcile';
import type { ApiServer } from '../../api/server';
import { apiToken, startApi } from './api';
import { takeWriterLocks, type WriterLocks } from './writer-lock';
import { refusedForIsolation } from './host-check';
import { bindInstance, folderSource, gitSourceOf } from './instance-source';
import type { GitSource } from '../../git/source';
import { gitSourceFrom } from '../git-flags';
import { serveWebhook } from '../../git/webhook';
import { RevisionOutcomes } from '../../git/outcome';
import { notifyOf } from '../notify-flags';
import { readFile } from 'node:fs/promises';
import { formatIssue } from '../../spec/issue';
import type { SpecError } from '../../spec/types';

export async function runController(ctx: Context, o: ReconcileOptions, signal?: AbortSignal): Promise<number> {
  // Specs from git: polled, nothing on disk watched (a bad URL, ref or path is a UsageError).
  const git = await gitSourceFrom(ctx, o);
  const webhookSecret = await secretOfWebhook(ctx, o, git);
  const notify = await notifyOf(ctx, o, git);
  const apiTok = await apiToken(ctx, o);
  const outcomes = git ? new RevisionOutcomes({ root: git.mirror.root, url: git.cfg.url.display, log: ctx.log, ...(notify ? { notify } : {}) }) : undefined;
  const cfg = passConfig(ctx, o);
  const metrics = new ControllerMetrics({ processMetrics: !!o.metricsAddr });
  const engine = instrumentEngine(ctx.engine(), metrics.engineListener);
  let onStop: (why: string) => void = () => undefined;
  const stopped = new Promise<string>((resolve) => (onStop = resolve));
  const onTerm = () => onStop('SIGTERM');
  const onInt = () => onStop('SIGINT');
  // Listening from the start: a stop asked for while the first engine call waits counts too.
  process.once('SIGTERM', onTerm);
  process.once('SIGINT', onInt);
  try {
    return await serveController(ctx, o, signal, {
      cfg,
      metrics,
      engine,
      stopped,
      onStop,
      ...(git ? { git } : {}),
      ...(webhookSecret !== undefined ? { webhookSecret } : {}),
      ...(outcomes ? { outcomes } : {}),
      ...(apiTok !== undefined ? { apiToken: apiTok } : {}),
    });
  } finally {
    process.off('SIGTERM', onTerm);
    process.off('SIGINT', onInt);
  }
}

interface Started {
  cfg: ReturnType<typeof passConfig>;
  metrics: ControllerMetrics;
  engine: Engine;
  stopped: Promise<string>;
  onStop: (why: string) => void;
  git?: GitSource;
  webhookSecret?: string;
  outcomes?: RevisionOutcomes;
  apiToken?: string;
}

/** `--webhook-addr`'s secret (a file, or an environment variable), checked before anything starts. */
async function secretOfWebhook(ctx: Context, o: ReconcileOptions, git: GitSource | undefined): Promise<string | undefined> {
  const given = o.webhookSecretFile !== undefined || o.webhookSecretEnv !== undefined;
  if (o.webhookAddr === undefined) {
    if (given) throw new UsageError('--webhook-secret-file and --webhook-secret-env go with --webhook-addr');
    return undefined;
  }
  if (!git) throw new UsageError('--webhook-addr goes with --git');
  if (o.webhookSecretFile !== undefined && o.webhookSecretEnv !== undefined) throw new UsageError('give one of --webhook-secret-file and --webhook-secret-env');
  let secret: string | undefined;
  if (o.webhookSecretFile !== undefined) {
    const file = o.webhookSecretFile;
    secret = await readFile(file, 'utf8').then(
      (s) => s.replace(/\r?\n$/, ''),
      () => {
        throw new UsageError(`--webhook-secret-file ${file}: cannot be read`);
      },
    );
  } else if (o.webhookSecretEnv !== undefined) secret = ctx.env[o.webhookSecretEnv];
  else throw new UsageError('--webhook-addr needs --webhook-secret-file or --webhook-secret-env (requests are checked by HMAC-SHA256)');
  if (!secret) throw new UsageError('the webhook secret is empty');
  return secret;
}

async function serveController(ctx: Context, o: ReconcileOptions, signal: AbortSignal | undefined, s: Started): Promise<number> {
  const { cfg, metrics, engine, stopped, onStop } = s;
  // A stop asked for while starting up counts too (an abort before this line fires no event).
  if (signal?.aborted) onStop('abort');
  else signal?.addEventListener('abort', () => onStop('abort'), { once: true });
  const ping = engine.ping().then(
    () => undefined,
    (err: unknown) => err,
  );
  const first = await Promise.race([ping.then((err) => ({ err })), stopped.then((why) => ({ why }))]);
  if ('why' in first) {
    engine.abandon('the controller is stopping');
    ctx.log.info(`${first.why} before the engine answered; stopped`);
    return EXIT.ok;
  }
  if (first.err !== undefined) {
    ctx.io.err(`berth: ${pingFailure(first.err)}\n`);
    return EXIT.failed;
  }
  // an engine that would not isolate an attempt runs none (unless --allow-weak-isolation)
  if (await refusedForIsolation(ctx, engine, o.allowWeakIsolation === true)) return EXIT.failed;
  let saidEmpty = false;
  const controller = new Controller({
    cfg,
    engine,
    // it keeps its records for its life: one copy of each string they repeat
    store: ctx.store({ compact: true }),
    log: ctx.log,
    workers: o.workers ?? cfg.concurrency,
    resyncMs: (o.resync ?? 30) * 1000,
    ...(o.settle !== undefined ? { settleMs: Math.round(o.settle * 1000) } : {}),
    metrics,
    ...(s.git ? { git: s.git } : {}),
    ...(s.outcomes ? { outcomes: s.outcomes } : {}),
    watcher: {
      // a source that declares nothing for an instance that never had anything: said once (a
      // controller waits for specs to appear; `reconcile --once` and `plan` refuse it)
      planned: (_load, plan) => {
        if (plan.emptySource !== 'empty' || cfg.allowEmpty || saidEmpty) return;
        saidEmpty = true;
        ctx.log.warn(
          `${s.git ? s.git.cfg.url.display : ctx.specsDir} declares no attempts and instance "${ctx.instance}" has none: waiting for specs to appear (a wrong --specs looks like this)`,
        );
      },
    },
  });
  let lock: WriterLocks | undefined;
  let http: Awaited<ReturnType<typeof serve>> | undefined;
  let guard: NodeJS.Timeout | undefined;
  let hook: Awaited<ReturnType<typeof serveWebhook>> | undefined;
  let api: ApiServer | undefined;
  let lockLost = false;
  try {
    if (o.metricsAddr) {
      http = await serve(
        o.metricsAddr,
        metrics,
        {
          healthy: () => !controller.stopping,
          ready: async () => {
            const engineProblem = controller.health.problem();
            if (engineProblem) return engineProblem;
            if (!lock) return `waiting for the lock of instance ${ctx.instance}`;
            if (!controller.synced) return 'no full pass over the specs has succeeded yet';
            if (!controller.engineConnected) return 'the engine event stream is not connected';
            if (!(await lock.isHeld())) return `the lock of instance ${ctx.instance} is not held`;
            // new runs wait for disk space (running ones go on): not ready for more work
            if (controller.diskPressure) return controller.diskPressure;
            return true;
          },
          notes: () => readyzSpecNotes(controller.specErrors.brokenFiles()),
        },
        async () => {
          // The live report: the controller's memory, no links (this server serves no run folders).
          const { load, statuses } = await controller.view();
          const data = reportFromLoad(
            load,
            await withLiveTouched(statuses, ctx.resultsRoot),
            { sets: [], keep: () => true, selecting: false },
            { now: Date.now(), instance: ctx.instance, maxRunning: cfg.maxRunning, resultsRoot: ctx.resultsRoot, linkBase: null, mode: 'live' },
          );
          return { html: renderReport(data), csp: reportCsp() };
        },
      );
      ctx.log.info(`fleet report, metrics and health on ${http.url} (/, /metrics, /healthz, /readyz)`);
    }
    // The instance's locks. An engine that does not answer is waited for (readiness says why);
    // a lock another berth holds is a refusal (exit 1).
    const taken = await lockWhenEngineAnswers(ctx, controller, stopped);
    if (taken === 'refused') return EXIT.failed;
    if (taken !== 'stopped') {
      lock = taken;
      // The instance is bound to its source: another source is refused (exit 2) before anything changes.
      const source = s.git ? gitSourceOf(s.git) : await folderSource(ctx.specsDir);
      if (!(await bindInstance(ctx, engine, source, { command: 'reconcile', ...(o.moveInstance ? { move: true } : {}) }))) return EXIT.usage;
      // A lock broken under it (`berth unlock --force` meant for another holder) stops it: two
      // writers must never drive one instance. An engine that does not answer is no proof either way.
      guard = setInterval(
        () => {
          taken.isHeld().then(
            (held) => {
              if (held) return;
              lockLost = true;
              onStop('lock lost');
            },
            () => undefined,
          );
        },
        (o.lockCheckSeconds ?? DEFAULTS.lockCheckSeconds) * 1000,
      );
      guard.unref();
      await controller.start();
      // the API: exec, files, release, create and delete (src/api), on the instance's socket
      api = await startApi(ctx, o, s.apiToken, { controller, engine: controller.engine, store: ctx.store({ compact: true }), git: !!s.git });
      if (o.webhookAddr !== undefined && s.webhookSecret !== undefined) {
        hook = await serveWebhook(o.webhookAddr, s.webhookSecret, () => {
          ctx.log.info('webhook: fetching now');
          controller.poller?.trigger();
        });
        ctx.log.info(`webhook on ${hook.url} (POST, X-Hub-Signature-256)`);
      }
      ctx.log.info('controller started', {
        instance: ctx.instance,
        ...(s.git ? { git: s.git.cfg.url.display, ref: s.git.cfg.ref ?? 'HEAD', interval: `${s.git.cfg.intervalMs / 1000}s` } : { specs: ctx.specsDir }),
        workers: o.workers ?? cfg.concurrency,
        resync: `${o.resync ?? 30}s`,
      });
    }
    const why = await stopped;
    ctx.log.info(`${why}: finishing the operations in flight; attempts keep running`);
    // no new API request; those under way are cut (an exec's client then sees its connection close)
    await api?.close();
    await controller.stop();
  } finally {
    clearInterval(guard);
    await api?.close();
    s.outcomes?.close();
    await hook?.close();
    await http?.close();
    await lock?.release();
  }
  if (lockLost) {
    ctx.io.err(
      `berth: instance "${ctx.instance}": the controller's lock was taken away (on the engine or in ${ctx.stateDir}); it stopped so that only one berth drives the instance\n`,
    );
    return EXIT.failed;
  }
  ctx.log.info('controller stopped');
  return EXIT.ok;
}

/**
 * Takes the instance's locks through the controller's engine (so its health sees the calls),
 * trying again while the engine does not answer: after 1 s, doubling to 15 s. 'refused' when
 * another berth holds the instance (told on stderr), 'stopped' when a stop comes first (the
 * controller's stop then gives up the calls in flight; a lock taken meanwhile is released).
 */
async function lockWhenEngineAnswers(ctx: Context, controller: Controller, stopped: Promise<string>): Promise<WriterLocks | 'refused' | 'stopped'> {
  const stop = stopped.then(() => 'stopped' as const);
  for (let wait = 1000; ; wait = Math.min(wait * 2, 15_000)) {
    const attempt = takeWriterLocks(ctx, controller.engine, 'reconcile').then(
      (l) => l ?? ('refused' as const),
      (err: unknown) => {
        if (!isEngineDown(err)) throw err;
        return 'down' as const;
      },
    );
    const got = await Promise.race([attempt, stop]);
    if (got === 'stopped') {
      // The lock's calls get a moment to end (a lock taken meanwhile is released); then they are
      // given up: an engine that answers its ping but not them must not hold the process for
      // their whole deadline (--engine-timeout). A lock volume made meanwhile names a holder that
      // is gone, which the next writer takes over (src/status/engine-lock.ts).
      const grace = sleep(DEFAULTS.stopGraceMs);
      const ended = await Promise.race([
        attempt.then(
          () => true,
          () => true,
        ),
        grace.done.then(() => false),
      ]);
      grace.cancel();
      if (!ended) {
        ctx.log.warn(`the engine does not answer the calls that take the lock of instance ${ctx.instance}: giving them up`);
        controller.engine.abandon('the controller is stopping');
      }
      await attempt.then((l) => (typeof l === 'object' ? l.release() : undefined)).catch(() => undefined);
      return 'stopped';
    }
    if (got !== 'down') return got;
    const nap = sleep(wait);
    const slept = await Promise.race([nap.done.then(() => 'slept' as const), stop]);
    nap.cancel();
    if (slept === 'stopped') return 'stopped';
  }
}

/** /readyz's lines for the broken spec files (at most ten named). */
function readyzSpecNotes(files: SpecError[]): string[] {
  if (!files.length) return [];
  const shown = files.slice(0, 10).map((e) => `  ${formatIssue(e)}`);
  const more = files.length > shown.length ? [`  and ${files.length - shown.length} more files`] : [];
  return [`spec errors in ${files.length} ${files.length === 1 ? 'file' : 'files'} (what runs under them keeps its last good spec):`, ...shown, ...more];
}

/** Resolves after `ms` unless cancelled first (a cancelled timer holds the process no longer). */
function sleep(ms: number): { done: Promise<void>; cancel: () => void } {
  let timer: NodeJS.Timeout | undefined;
  const done = new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)));
  return { done, cancel: () => clearTimeout(timer) };
}

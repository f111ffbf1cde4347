/**
 * The host check at the start of `reconcile` (both modes): the engine must isolate an untrusted
 * attempt at all (plan/host-isolation.ts judges engine/isolation.ts's facts). An engine that would
 * not (no seccomp, an unconfined default profile, a default runtime not known to isolate) is
 * refused, exit 1, naming what it lacks, unless `--allow-weak-isolation`, which goes on with a
 * warning. An engine that cannot say is warned about, not refused (it answered the ping).
 *
 * The engine's answer (its GET /info, 0.1 to 0.5 s on a busy engine) is kept in the state folder
 * for the start of the engine it came from (its boot: engine/types.ts `boot`), so a CI's
 * `reconcile --once` asks it once per engine start, not once per run: an engine's isolation
 * changes only when its daemon restarts with other settings.
 */
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { DEFAULTS } from '../../constants';
import { describeEngineError } from '../../engine/errors';
import type { HostIsolation } from '../../engine/isolation';
import type { Engine } from '../../engine/types';
import { judgeIsolation } from '../../plan/host-isolation';
import type { Context } from '../context';
import { diag } from '../diag';

/** True when the engine is refused (said on stderr): the caller exits 1 before anything changes. */
export async function refusedForIsolation(ctx: Context, engine: Engine, allowWeak: boolean): Promise<boolean> {
  let weak: string[];
  try {
    weak = judgeIsolation(await isolationOnce(ctx.stateDir, engine)).weak;
  } catch (err) {
    diag(ctx, 'warn', `could not ask the engine what isolation it gives (${describeEngineError(err)}); going on`);
    return false;
  }
  if (weak.length === 0) return false;
  if (allowWeak) {
    diag(ctx, 'warn', `the engine isolates attempts weakly (--allow-weak-isolation): ${weak.join('; ')}`);
    return false;
  }
  diag(
    ctx,
    'error',
    `the engine would not isolate an attempt: ${weak.join('; ')}. Nothing was planned or changed; fix the engine (berth version shows what it says), or run anyway with --allow-weak-isolation`,
  );
  return true;
}

/** What the engine says of its isolation, kept for its boot in `<state>/cache/host-isolation.json` (best effort). */
async function isolationOnce(stateDir: string, engine: Engine): Promise<HostIsolation> {
  const boot = await engine.boot().catch(() => undefined);
  const file = path.join(stateDir, 'cache', 'host-isolation.json');
  const key = boot ? `${engine.address ?? ''}\0${boot.id}` : undefined;
  if (key !== undefined) {
    try {
      const kept = JSON.parse(readFileSync(file, 'utf8')) as { key?: string; isolation?: HostIsolation };
      if (kept.key === key && kept.isolation) return kept.isolation;
    } catch {
      /* none kept, or not readable: asked */
    }
  }
  // bounded on its own: an engine that does not answer holds no start for --engine-timeout here (the
  // call left in flight is given up as every other on stop); the caller warns and goes on
  const isolation = await within(engine.isolation(), DEFAULTS.hostCheckTimeoutMs);
  if (key !== undefined) {
    try {
      mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
      const temp = `${file}.${process.pid}.tmp`;
      writeFileSync(temp, JSON.stringify({ key, isolation }));
      renameSync(temp, file);
    } catch {
      /* best effort: asked again next time */
    }
  }
  return isolation;
}

/** `p`, or a rejection once `ms` have passed without its answer. */
function within<T>(p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the engine did not say within ${ms / 1000} s`)), ms);
    timer.unref();
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
}

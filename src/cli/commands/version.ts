/**
 * `berth version [-o json]`: berth's version, the Node.js running it, the contract it implements,
 * and the engine's: its version, its API version and the one berth talks to it (negotiated), and
 * its image store (classic, or containerd's), as `docker version` and `docker info` show them.
 * An engine that does not answer (within a few seconds) is said so, and the command still
 * succeeds; an engine older than the oldest berth is tested with is refused (exit 1).
 */
import { CONTRACT_VERSION, EXIT, SCHEMA_VERSIONS } from '../../constants';
import { describeEngineError, EngineTooOldError } from '../../engine/errors';
import type { Engine } from '../../engine/types';
import type { HostIsolation } from '../../engine/isolation';
import { isolationFacts, judgeIsolation, type IsolationVerdict } from '../../plan/host-isolation';
import type { Context } from '../context';

/** How long the engine is given to say its version. */
const ENGINE_WAIT_MS = 3000;

type EngineVersion =
  | {
      version: string;
      apiVersion: string;
      talks?: string;
      imageStore?: 'classic' | 'containerd';
      driver?: string;
      /** What it says of the isolation it gives, and berth's verdict (plan/host-isolation.ts). */
      isolation?: HostIsolation & IsolationVerdict;
    }
  | { error: string; tooOld?: boolean };

export async function runVersion(ctx: Context, berth: string, o: { output?: 'json' }): Promise<number> {
  const engine = await engineVersion(ctx);
  const code = 'error' in engine && engine.tooOld ? EXIT.failed : EXIT.ok;
  if (o.output === 'json') {
    ctx.io.out(`${JSON.stringify({ schemaVersion: SCHEMA_VERSIONS.version, version: berth, node: process.version, contract: CONTRACT_VERSION, engine })}\n`);
    return code;
  }
  ctx.io.out(`berth ${berth} (node ${process.version}; contract v${CONTRACT_VERSION})\n`);
  ctx.io.out(`${engineLine(engine)}\n`);
  if (!('error' in engine) && engine.isolation) ctx.io.out(`${isolationLine(engine.isolation)}\n`);
  return code;
}

/** `engine 28.5.2 (API 1.51), containerd image store (overlayfs)`; berth's API named when it talks an older one. */
function engineLine(e: EngineVersion): string {
  if ('error' in e) return e.tooOld ? `engine refused: ${e.error}` : `engine unreachable: ${e.error}`;
  const api = e.talks && e.talks !== e.apiVersion ? `API ${e.apiVersion}; berth talks ${e.talks}` : `API ${e.apiVersion}`;
  const store = e.imageStore ? `, ${e.imageStore} image store${e.driver ? ` (${e.driver})` : ''}` : '';
  return `engine ${e.version} (${api})${store}`;
}

/** `isolation: seccomp default, cgroup v2, ...: attempts run isolated (notes)`, or what makes it weak (reconcile refuses it). */
function isolationLine(i: HostIsolation & IsolationVerdict): string {
  const notes = i.notes.length ? ` (${i.notes.join('; ')})` : '';
  return i.weak.length
    ? `isolation: ${isolationFacts(i)}: WEAK, reconcile refuses to run attempts here without --allow-weak-isolation: ${i.weak.join('; ')}${notes}`
    : `isolation: ${isolationFacts(i)}: attempts run isolated${notes}`;
}

async function ask(engine: Engine): Promise<EngineVersion> {
  const v = await engine.version();
  const s = await engine.local?.storage();
  const iso = await engine.isolation().catch(() => undefined);
  return {
    version: v.version,
    apiVersion: v.apiVersion,
    ...(v.talks ? { talks: v.talks } : {}),
    ...(s?.imageStore ? { imageStore: s.imageStore, driver: s.driver } : {}),
    ...(iso ? { isolation: { ...iso, ...judgeIsolation(iso) } } : {}),
  };
}

async function engineVersion(ctx: Context): Promise<EngineVersion> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<EngineVersion>((resolve) => {
    timer = setTimeout(() => {
      // the call in flight is given up: the command ends now, not at --engine-timeout
      ctx.engine().abandon('berth version does not wait longer');
      resolve({ error: `no answer in ${ENGINE_WAIT_MS / 1000} s` });
    }, ENGINE_WAIT_MS);
  });
  try {
    return await Promise.race([
      ask(ctx.engine()).then(
        (v) => v,
        (err: unknown): EngineVersion => (err instanceof EngineTooOldError ? { error: err.message, tooOld: true } : { error: describeEngineError(err) }),
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `berth version [-o json]`: berth's version, the Node.js running it, the contract it implements,
 * and the engine's version (server and API), as `docker version` shows both sides. An engine
 * that does not answer (within a few seconds) is said so, and the command still succeeds.
 */
import { CONTRACT_VERSION, EXIT } from '../../constants';
import { describeEngineError } from '../../engine/errors';
import type { Context } from '../context';

/** How long the engine is given to say its version. */
const ENGINE_WAIT_MS = 3000;

type EngineVersion = { version: string; apiVersion: string } | { error: string };

export async function runVersion(ctx: Context, berth: string, o: { output?: 'json' }): Promise<number> {
  const engine = await engineVersion(ctx);
  if (o.output === 'json') {
    ctx.io.out(`${JSON.stringify({ version: berth, node: process.version, contract: CONTRACT_VERSION, engine })}\n`);
    return EXIT.ok;
  }
  ctx.io.out(`berth ${berth} (node ${process.version}; contract v${CONTRACT_VERSION})\n`);
  ctx.io.out('error' in engine ? `engine unreachable: ${engine.error}\n` : `engine ${engine.version} (API ${engine.apiVersion})\n`);
  return EXIT.ok;
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
      ctx
        .engine()
        .version()
        .then(
          (v): EngineVersion => ({ version: v.version, apiVersion: v.apiVersion }),
          (err: unknown): EngineVersion => ({ error: describeEngineError(err) }),
        ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * `berth logs --build NAME...`: the log of the build of each attempt's image (and its grader's),
 * `<state>/builds/<hash>.log`, as the build wrote it (the engine's output, without colour codes,
 * bounded). The build hash is the spec's as it loads now: after an edit of the context, the new
 * build's log (none until it is built).
 */
import { promises as fs } from 'node:fs';
import { EXIT } from '../../constants';
import { buildLogPath } from '../../build/records';
import { loadSpecs } from '../../spec/loader';
import { specsOptions, UsageError, type Context } from '../context';
import { lastLines } from './logs';

export async function runBuildLogs(ctx: Context, names: readonly string[], o: { tail?: number; follow?: boolean }): Promise<number> {
  if (o.follow) throw new UsageError('logs --build shows a build log as it is written so far: -f is not for it');
  const load = await loadSpecs({ specsDir: ctx.specsDir, resultsRoot: ctx.resultsRoot, ...specsOptions(ctx) });
  let code: number = EXIT.ok;
  for (const [i, name] of names.entries()) {
    if (names.length > 1) ctx.io.out(`${i ? '\n' : ''}==> attempt/${name} <==\n`);
    const spec = load.specs.find((s) => s.spec.name === name)?.spec;
    if (!spec) {
      ctx.io.err(`berth: attempt/${name}: no such attempt in the specs (a build log is found by its spec's build)\n`);
      code = EXIT.failed;
      continue;
    }
    const builds = [...(spec.build ? [{ of: '', b: spec.build }] : []), ...(spec.grade?.build ? [{ of: 'the grader', b: spec.grade.build }] : [])];
    if (!builds.length) {
      ctx.io.err(`berth: attempt/${name} builds no image (its spec has no build)\n`);
      code = EXIT.failed;
      continue;
    }
    for (const { of, b } of builds) {
      if (builds.length > 1) ctx.io.out(`--> ${of ? `${of}'s image` : 'image'} ${spec.image && !of ? spec.image : (spec.grade?.image ?? '')} <--\n`);
      const file = buildLogPath(ctx.stateDir, b.hash);
      const text = await fs.readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => (err.code === 'ENOENT' ? undefined : Promise.reject(err)));
      if (text === undefined) {
        ctx.io.err(`berth: attempt/${name}: ${of ? `${of}'s image` : 'its image'} has not been built by berth here yet (no ${file})\n`);
        code = EXIT.failed;
        continue;
      }
      ctx.io.out(lastLines(text, o.tail));
    }
  }
  return code;
}

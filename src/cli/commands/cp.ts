/**
 * `berth cp NAME:PATH DEST | SRC NAME:PATH`: copies out of or into the running main container of
 * an attempt, as `docker cp` does (DEST or SRC `-`: a tar on stdout or stdin), through the
 * engine's archive API (on a swarm, the node's). A link in the container is never followed on
 * the host, and the host destination is written with no link followed (src/touch/copy.ts).
 * Recorded in the run folder's execs.jsonl: the run is `touched`. Not Running: refused (exit 1).
 */
import type { Readable, Writable } from 'node:stream';
import { EXIT } from '../../constants';
import { containerPath, copyErrorText, copyIn, copyOut, copyTarIn } from '../../touch/copy';
import { findTarget } from '../../touch/target';
import { UsageError, type Context } from '../context';
import { diag, plural } from '../diag';
import { oneAttempt } from './exec';

/** `NAME:PATH` (or `attempt/NAME:PATH`): the attempt and the path in its container; undefined for a host path. */
export function remoteOf(arg: string): { name: string; path: string } | undefined {
  const m = /^((?:attempt\/)?[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?):(.*)$/.exec(arg);
  if (!m || arg.startsWith('/') || arg.startsWith('.')) return undefined;
  return { name: oneAttempt(m[1] as string, 'cp'), path: m[3] as string };
}

export async function runCp(ctx: Context, src: string, dest: string, io?: { stdin: Readable; stdout: Writable }): Promise<number> {
  const from = remoteOf(src);
  const to = remoteOf(dest);
  if ((from && to) || (!from && !to))
    throw new UsageError('cp: one side is NAME:PATH, the other a host path (or -): berth cp NAME:PATH DEST | berth cp SRC NAME:PATH');
  const remote = (from ?? to) as { name: string; path: string };
  const t = await findTarget({ store: ctx.store(), engine: ctx.engine(), resultsRoot: ctx.resultsRoot, env: ctx.env, name: remote.name });
  if ('refused' in t) {
    diag(ctx, 'error', t.refused);
    return EXIT.failed;
  }
  // as docker cp: a relative path in the container is from its root
  const p = containerPath(remote.path, '/');
  if (!p) throw new UsageError(`cp: ${JSON.stringify(remote.path)}: a path in the container must be given, and must not climb (..)`);
  // `docker cp`'s trailing `/.` (a folder's contents) and `/` (must be a folder) are meant as written
  const asked = /\/\.$/.test(remote.path) ? `${p}/.` : remote.path.endsWith('/') ? `${p}/` : p;
  const std = io ?? { stdin: process.stdin, stdout: process.stdout };
  try {
    const r = from
      ? await copyOut(t, asked, dest, 'cli', std.stdout)
      : src === '-'
        ? await copyTarIn(t, std.stdin, p, 'cli')
        : await copyIn(t, src, asked, 'cli');
    if ('refused' in r) {
      diag(ctx, 'error', r.refused);
      return EXIT.failed;
    }
    for (const n of r.notes) diag(ctx, 'warn', n);
    if (dest !== '-') ctx.io.err(`copied ${plural(r.bytes, 'byte')} ${from ? `out of ${remote.name}` : `into ${remote.name}`}\n`);
    return EXIT.ok;
  } catch (err) {
    diag(ctx, 'error', `cp ${src} ${dest}: ${copyErrorText(err)}`);
    return EXIT.failed;
  }
}

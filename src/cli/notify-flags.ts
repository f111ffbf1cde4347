/**
 * `--notify-url` with `--notify-secret-file` or `--notify-secret-env` (reconcile with --git, the
 * controller and --once alike): checked before anything starts; the secret is never shown.
 */
import { readFile } from 'node:fs/promises';
import type { GitSource } from '../git/source';
import { UsageError, type Context } from './context';
import type { ReconcileOptions } from './commands/reconcile';

/** A secret from a file or an environment variable (`flag` names both in messages). */
async function secretFrom(ctx: Context, flag: string, file: string | undefined, env: string | undefined): Promise<string | undefined> {
  if (file !== undefined && env !== undefined) throw new UsageError(`give one of ${flag}-secret-file and ${flag}-secret-env`);
  let secret: string | undefined;
  if (file !== undefined) {
    secret = await readFile(file, 'utf8').then(
      (s) => s.replace(/\r?\n$/, ''),
      () => {
        throw new UsageError(`${flag}-secret-file ${file}: cannot be read`);
      },
    );
  } else if (env !== undefined) secret = ctx.env[env];
  else return undefined;
  if (!secret) throw new UsageError(`${flag}'s secret is empty`);
  return secret;
}

/** `--notify-url` and its secret, checked before anything starts. */
export async function notifyOf(ctx: Context, o: ReconcileOptions, git: GitSource | undefined): Promise<{ url: string; secret: string } | undefined> {
  const secret = await secretFrom(ctx, '--notify', o.notifySecretFile, o.notifySecretEnv);
  if (o.notifyUrl === undefined) {
    if (secret !== undefined) throw new UsageError('--notify-secret-file and --notify-secret-env go with --notify-url');
    return undefined;
  }
  if (!git) throw new UsageError('--notify-url goes with --git');
  if (!/^https?:\/\//.test(o.notifyUrl)) throw new UsageError('--notify-url must be an http:// or https:// URL');
  if (secret === undefined) throw new UsageError('--notify-url needs --notify-secret-file or --notify-secret-env (each POST is signed with HMAC-SHA256)');
  return { url: o.notifyUrl, secret };
}

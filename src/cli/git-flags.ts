/**
 * `--git URL [--git-ref REF] [--git-path DIR] [--git-interval DUR]` (reconcile, plan,
 * validate): checked here (the URL, the ref, the path: url.ts, ref.ts, then `git
 * check-ref-format`), turned into a GitSource. `peekRevision` is for the commands that change
 * nothing (plan, validate): it fetches into a ref and a folder of its own, leaving the
 * revision in force alone.
 */
import { randomBytes } from 'node:crypto';
import { constants as fsConstants, promises as fs } from 'node:fs';
import path from 'node:path';
import { DEFAULTS } from '../constants';
import type * as Credentials from '../git/credentials';
import type { GitCredentials } from '../git/credentials';
import type * as Exec from '../git/exec';
import type * as Ref from '../git/ref';
import type * as Source from '../git/source';
import type { GitSource, Revision } from '../git/source';
import type * as Url from '../git/url';
import { UsageError, type Context } from './context';

// The git modules load only with --git: a pass over a specs folder never loads them.
const credentialsMod = () => require('../git/credentials') as typeof Credentials;
const execMod = () => require('../git/exec') as typeof Exec;
const refMod = () => require('../git/ref') as typeof Ref;
const sourceMod = () => require('../git/source') as typeof Source;
const urlMod = () => require('../git/url') as typeof Url;

export interface GitFlags {
  git?: string;
  gitRef?: string;
  gitPath?: string;
  /** ms */
  gitInterval?: number;
  gitTokenFile?: string;
  gitTokenEnv?: string;
  gitUsername?: string;
  gitSshKey?: string;
  gitKnownHosts?: string;
  /** An allowed-signers file: only commits signed by its keys are applied. */
  gitVerify?: string;
}

const FLAG_KEYS = ['gitRef', 'gitPath', 'gitInterval', 'gitVerify', 'gitTokenFile', 'gitTokenEnv', 'gitUsername', 'gitSshKey', 'gitKnownHosts'] as const;
const flagName = (k: string) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;

/** The credentials the flags name, checked (a file that cannot be read, a variable that is not set: named, never shown). */
async function credentialsFrom(ctx: Context, o: GitFlags, scheme: string): Promise<GitCredentials | undefined> {
  const http = scheme === 'http' || scheme === 'https';
  if (o.gitTokenFile !== undefined && o.gitTokenEnv !== undefined) throw new UsageError('give one of --git-token-file and --git-token-env');
  if ((o.gitTokenFile !== undefined || o.gitTokenEnv !== undefined || o.gitUsername !== undefined) && !http)
    throw new UsageError('--git-token-file, --git-token-env and --git-username go with an http(s) URL');
  if ((o.gitSshKey !== undefined || o.gitKnownHosts !== undefined) && scheme !== 'ssh')
    throw new UsageError('--git-ssh-key and --git-known-hosts go with an ssh URL');
  const c: GitCredentials = {};
  if (o.gitTokenFile !== undefined) {
    const file = path.resolve(o.gitTokenFile);
    try {
      await fs.access(file, fsConstants.R_OK);
    } catch {
      throw new UsageError(`--git-token-file ${file}: cannot be read`);
    }
    c.tokenFile = file;
  }
  if (o.gitTokenEnv !== undefined) {
    const token = ctx.env[o.gitTokenEnv];
    if (!token) throw new UsageError(`--git-token-env ${o.gitTokenEnv}: the variable is not set or empty`);
    c.token = token;
  }
  if (o.gitUsername !== undefined) c.username = o.gitUsername;
  if (o.gitSshKey !== undefined) c.sshKey = path.resolve(o.gitSshKey);
  if (o.gitKnownHosts !== undefined) c.knownHosts = path.resolve(o.gitKnownHosts);
  const problem = credentialsMod().sshProblem(c);
  if (problem) throw new UsageError(problem);
  for (const [flag, p] of [
    ['--git-ssh-key', c.sshKey],
    ['--git-known-hosts', c.knownHosts],
  ] as const) {
    if (p !== undefined) await fs.access(p, fsConstants.R_OK).catch(() => Promise.reject(new UsageError(`${flag} ${p}: cannot be read`)));
  }
  if (c.sshKey !== undefined) {
    // ssh ignores a key of its user that others may read, and says so only in a line berth's error does not keep.
    const st = await fs.stat(c.sshKey);
    if (st.uid === process.getuid?.() && (st.mode & 0o077) !== 0)
      throw new UsageError(
        `--git-ssh-key ${c.sshKey}: others may read it (mode ${(st.mode & 0o777).toString(8).padStart(4, '0')}); ssh ignores such a key: chmod 600 it`,
      );
  }
  if (scheme === 'ssh' && c.knownHosts === undefined) throw new UsageError('an ssh URL needs --git-known-hosts (host keys are always checked)');
  return Object.keys(c).length ? c : undefined;
}

/** The git source the flags name, or undefined without `--git`; a UsageError for a bad URL, ref or path. */
export async function gitSourceFrom(ctx: Context, o: GitFlags): Promise<GitSource | undefined> {
  if (o.git === undefined) {
    for (const f of FLAG_KEYS) if (o[f] !== undefined) throw new UsageError(`${flagName(f)} goes with --git`);
    return undefined;
  }
  const url = urlMod().parseGitUrl(o.git);
  if (!url.ok) throw new UsageError(`--git: ${url.message}`);
  if (o.gitRef !== undefined) {
    const problem = refMod().refProblem(o.gitRef);
    if (problem) throw new UsageError(`--git-ref ${JSON.stringify(o.gitRef)}: ${problem}`);
    // git's own rules too (the ref cannot start with "-" here: checked above).
    const ok = await execMod()
      .runGit(['check-ref-format', '--allow-onelevel', o.gitRef], { home: ctx.stateDir, cwd: '/' })
      .then(
        () => true,
        () => false,
      );
    if (!ok) throw new UsageError(`--git-ref ${JSON.stringify(o.gitRef)}: not a valid ref name (git check-ref-format)`);
  }
  if (o.gitPath !== undefined) {
    const problem = refMod().gitPathProblem(o.gitPath);
    if (problem) throw new UsageError(`--git-path ${JSON.stringify(o.gitPath)}: ${problem}`);
  }
  const credentials = await credentialsFrom(ctx, o, url.value.scheme);
  const allowedSigners = o.gitVerify !== undefined ? path.resolve(o.gitVerify) : undefined;
  if (allowedSigners !== undefined)
    await fs.access(allowedSigners, fsConstants.R_OK).catch(() => Promise.reject(new UsageError(`--git-verify ${allowedSigners}: cannot be read`)));
  return new (sourceMod().GitSource)({
    url: url.value,
    ...(credentials ? { credentials } : {}),
    ...(allowedSigners !== undefined ? { allowedSigners } : {}),
    ...(o.gitRef !== undefined ? { ref: o.gitRef } : {}),
    path: refMod().normalGitPath(o.gitPath ?? ''),
    stateDir: ctx.stateDir,
    instance: ctx.instance,
    intervalMs: o.gitInterval ?? DEFAULTS.gitIntervalMs,
    log: ctx.log,
  });
}

/**
 * The source's current commit, fetched into a ref and written out into a folder of this
 * command's own (the revision in force, and a controller using it, are left alone); `done()`
 * removes both. Rejects with git's error when the fetch fails.
 */
export async function peekRevision(src: GitSource): Promise<Revision & { done(): Promise<void> }> {
  const m = src.mirror;
  await src.init();
  const tag = `${process.pid}-${randomBytes(6).toString('hex')}`;
  const ref = `refs/berth/peek/${tag}`;
  const dir = path.join(m.root, `.tmp-${tag}`);
  const done = async () => {
    await fs.rm(dir, { recursive: true, force: true });
    await execMod()
      .runGit(['--git-dir', m.mirror, 'update-ref', '-d', ref], { home: path.join(m.root, 'home'), cwd: m.root })
      .catch(() => undefined);
  };
  try {
    const revision = await m.fetch(src.cfg.url.url, src.cfg.ref, ref);
    if (src.cfg.allowedSigners !== undefined) await m.verify(revision, src.cfg.allowedSigners);
    await m.materialize(revision, src.cfg.path, dir);
    return { revision, dir, done };
  } catch (err) {
    await done();
    throw err;
  }
}

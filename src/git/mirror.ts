/**
 * `<state>/git/<instance>`: a bare mirror every fetch goes into, each revision's specs folder
 * materialized on its own (`rev-<sha>`, written under a temp name and renamed into place when
 * whole), and `current`, a link to the revision in force, switched by renaming a new link over
 * it (as kubernetes/git-sync does). A reader that resolves `current` once reads exactly one
 * commit; a berth killed at any step comes back on one whole revision (a temp folder is only
 * ever half-written, and it is removed when found).
 */
import { randomBytes } from 'node:crypto';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { GIT } from '../constants';
import { isCode, syncDir } from '../status/atomic-file';
import { pidAlive } from '../util/pid';
import { GitError, runGit, type GitRunOptions } from './exec';

const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
/** A temp folder, temp index or the lock git takes beside that index, named with the pid of the berth that made it. */
const TEMP = /^\.tmp-(\d+)-[0-9a-f]+(\.index(\.lock)?)?$/;

export class GitMirror {
  readonly mirror: string;

  constructor(
    /** `<state>/git/<instance>`. */
    readonly root: string,
    /** How git runs (home, credentials); `cwd` is set here. */
    private run: Omit<GitRunOptions, 'cwd'>,
  ) {
    this.mirror = path.join(root, GIT.mirror);
  }

  /** Credentials for the commands from now on (credentials.ts). */
  useCredentials(o: Omit<GitRunOptions, 'home' | 'cwd'>): void {
    this.run = { ...this.run, ...o, env: { ...(this.run.env ?? {}), ...(o.env ?? {}) } };
  }

  get home(): string {
    return this.run.home;
  }

  private git(args: string[], env?: Record<string, string>): Promise<string> {
    return runGit(args, { ...this.run, cwd: this.root, ...(env ? { env: { ...(this.run.env ?? {}), ...env } } : {}) });
  }

  /** The folder and the bare mirror, made when missing; leftovers of killed berths removed. */
  async init(): Promise<void> {
    await fs.mkdir(this.root, { recursive: true, mode: 0o700 });
    await fs.mkdir(this.run.home, { recursive: true, mode: 0o700 });
    try {
      await fs.access(path.join(this.mirror, 'HEAD'));
    } catch {
      await this.git(['init', '--bare', '--quiet', '--', this.mirror]);
    }
    await this.removeLeftovers();
  }

  /**
   * Fetches `ref` (default: the remote's HEAD) of `url` into `into`; the commit it points to. A
   * fetch refused for a lock file that no live git holds (a berth, and its git, killed in a fetch)
   * removes those lock files and is tried once more.
   */
  async fetch(url: string, ref: string | undefined, into: string = GIT.targetRef): Promise<string> {
    try {
      return await this.fetchOnce(url, ref, into);
    } catch (err) {
      if (!(err instanceof GitError) || !LOCKED.test(err.detail) || !(await this.removeStaleLocks())) throw err;
      return this.fetchOnce(url, ref, into);
    }
  }

  private async fetchOnce(url: string, ref: string | undefined, into: string): Promise<string> {
    await this.git([
      '--git-dir',
      this.mirror,
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
      '--no-recurse-submodules',
      '--force',
      '--',
      url,
      `+${ref ?? 'HEAD'}:${into}`,
    ]);
    return this.resolve(into);
  }

  /** The commit `name` points to. */
  async resolve(name: string): Promise<string> {
    const sha = (await this.git(['--git-dir', this.mirror, 'rev-parse', '--verify', '--quiet', '--end-of-options', `${name}^{commit}`])).trim();
    if (!SHA.test(sha)) throw new GitError('rev-parse', `${name} is not a commit`);
    return sha;
  }

  /**
   * Whether `sha` is signed by a key in the allowed-signers file (ssh signing: `git verify-commit`
   * with gpg.format=ssh). Rejects with a GitError naming the commit when it is not.
   */
  async verify(sha: string, allowedSigners: string): Promise<void> {
    try {
      await this.git([
        '--git-dir',
        this.mirror,
        '-c',
        'gpg.format=ssh',
        '-c',
        `gpg.ssh.allowedSignersFile=${allowedSigners}`,
        'verify-commit',
        '--end-of-options',
        sha,
      ]);
    } catch (err) {
      const why = err instanceof GitError ? err.detail.replace('exited with status 1 and said nothing', 'no signature') : String(err);
      throw new GitError('verify-commit', `commit ${sha.slice(0, 12)} is not signed by a key in ${allowedSigners} (${why}); it is not applied`);
    }
  }

  revDir(sha: string): string {
    return path.join(this.root, `${GIT.revPrefix}${sha}`);
  }

  /**
   * The folder `sub` of commit `sha`, written out as `rev-<sha>` (once: a revision already there
   * is whole). A `sub` that is no folder in that commit is an error naming both.
   */
  async materialize(sha: string, sub: string, dest = this.revDir(sha)): Promise<string> {
    if (!SHA.test(sha)) throw new GitError('read-tree', `not a commit id: ${sha}`);
    if (await isDir(dest)) return dest;
    const treeish = sub ? `${sha}:${sub}` : sha;
    let type = '';
    try {
      type = (await this.git(['--git-dir', this.mirror, 'cat-file', '-t', '--end-of-options', treeish])).trim();
    } catch {
      type = 'missing';
    }
    if (type !== 'tree' && type !== 'commit') throw new GitError('read-tree', `--git-path ${sub}: no such folder in commit ${sha.slice(0, 12)}`);
    const tmp = path.join(this.root, `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
    const env = { GIT_INDEX_FILE: `${tmp}.index` };
    try {
      await fs.mkdir(tmp, { mode: 0o700 });
      await this.git(['--git-dir', this.mirror, '--work-tree', tmp, 'read-tree', '--end-of-options', treeish], env);
      await this.git(['--git-dir', this.mirror, '--work-tree', tmp, 'checkout-index', '--all', '--force'], env);
      await fs.rm(`${tmp}.index`, { force: true });
      await fs.rename(tmp, dest);
    } catch (err) {
      await fs.rm(tmp, { recursive: true, force: true });
      await fs.rm(`${tmp}.index`, { force: true });
      if (isCode(err, 'ENOTEMPTY') || isCode(err, 'EEXIST')) return dest; // another berth wrote it first
      throw err;
    }
    await syncDir(this.root);
    return dest;
  }

  /** Makes `rev-<sha>` the revision in force: a new link renamed over `current`. */
  async switchTo(sha: string): Promise<void> {
    const tmp = path.join(this.root, `.tmp-${process.pid}-${randomBytes(6).toString('hex')}`);
    await fs.symlink(`${GIT.revPrefix}${sha}`, tmp);
    try {
      await fs.rename(tmp, path.join(this.root, GIT.current));
    } catch (err) {
      await fs.rm(tmp, { force: true });
      throw err;
    }
    await syncDir(this.root);
  }

  /** The revision in force (what `current` links to, when that is whole), or undefined. */
  async current(): Promise<{ revision: string; dir: string } | undefined> {
    let target: string;
    try {
      target = await fs.readlink(path.join(this.root, GIT.current));
    } catch {
      return undefined;
    }
    const sha = target.startsWith(GIT.revPrefix) ? target.slice(GIT.revPrefix.length) : '';
    if (!SHA.test(sha) || !(await isDir(this.revDir(sha)))) return undefined;
    return { revision: sha, dir: this.revDir(sha) };
  }

  /** Removes every revision folder but those in `keep`. */
  async prune(keep: readonly string[]): Promise<void> {
    const names = await fs.readdir(this.root).catch(() => [] as string[]);
    const kept = new Set(keep.map((s) => `${GIT.revPrefix}${s}`));
    for (const n of names) if (n.startsWith(GIT.revPrefix) && !kept.has(n)) await fs.rm(path.join(this.root, n), { recursive: true, force: true });
  }

  /**
   * Temp folders, indexes and links of berths no longer running. Best effort: a git that a
   * killed berth started may still be writing into its folder (it outlives berth until it ends);
   * what cannot be removed now is removed at a later start (its name is never used again).
   */
  private async removeLeftovers(): Promise<void> {
    const names = await fs.readdir(this.root).catch(() => [] as string[]);
    for (const n of names) {
      const m = TEMP.exec(n);
      if (m && !pidAlive(Number(m[1])))
        await fs.rm(path.join(this.root, n), { recursive: true, force: true, maxRetries: 5, retryDelay: 100 }).catch(() => undefined);
    }
    await this.removeStaleLocks();
  }

  /**
   * The lock files git left in the mirror (`*.lock` at its top and under `refs/`) when no live git
   * works in it: every git berth runs there has the mirror's folder as its working directory, so
   * a process whose working directory it is holds them. Where that cannot be seen (no /proc), the
   * locks stay. Whether any was removed.
   */
  private async removeStaleLocks(): Promise<boolean> {
    const locks: string[] = [];
    const walk = async (dir: string, depth: number): Promise<void> => {
      for (const e of await fs.readdir(dir, { withFileTypes: true }).catch(() => [])) {
        const p = path.join(dir, e.name);
        if (e.isFile() && e.name.endsWith('.lock')) locks.push(p);
        else if (e.isDirectory() && depth > 0 && (dir !== this.mirror || e.name === 'refs')) await walk(p, depth - 1);
      }
    };
    await walk(this.mirror, 8);
    if (locks.length === 0 || (await gitAt(this.root))) return false;
    for (const l of locks) await fs.rm(l, { force: true });
    return true;
  }
}

/** git refusing to go on because a lock file exists (exec.ts keeps the line that names it). */
const LOCKED = /\.lock'?: File exists/;

/** Whether a live process (other than this one) has `dir` as its working directory; true where that cannot be known. */
async function gitAt(dir: string): Promise<boolean> {
  const real = await fs.realpath(dir).catch(() => dir);
  let pids: string[];
  try {
    pids = (await fs.readdir('/proc')).filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
  } catch {
    return true;
  }
  for (const pid of pids) if ((await fs.readlink(`/proc/${pid}/cwd`).catch(() => '')) === real) return true;
  return false;
}

async function isDir(p: string): Promise<boolean> {
  try {
    return (await fs.lstat(p)).isDirectory();
  } catch {
    return false;
  }
}

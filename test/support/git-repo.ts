/**
 * Real git repositories for tests: a bare "remote" and a working clone that commits and pushes
 * (add, edit, delete files; empty commits; force-pushes), and `git daemon` on 127.0.0.1 at a
 * free port (started by the test, ended by its pid). Every git call goes through execFile.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

const exec = promisify(execFile);

const ENV = {
  PATH: process.env['PATH'] ?? '/usr/bin:/bin',
  HOME: os.tmpdir(),
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_AUTHOR_NAME: 'berth test',
  GIT_AUTHOR_EMAIL: 'test@berth.invalid',
  GIT_COMMITTER_NAME: 'berth test',
  GIT_COMMITTER_EMAIL: 'test@berth.invalid',
  GIT_TERMINAL_PROMPT: '0',
};

export async function git(cwd: string, ...args: string[]): Promise<string> {
  const r = await exec('git', args, { cwd, env: ENV, maxBuffer: 64 * 1024 * 1024 });
  return r.stdout.trim();
}

export class TestRepo {
  readonly bare: string;
  readonly work: string;

  private constructor(readonly dir: string) {
    this.bare = path.join(dir, 'remote.git');
    this.work = path.join(dir, 'work');
  }

  static async create(tag: string): Promise<TestRepo> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), `berth-git-${tag}-`));
    const r = new TestRepo(dir);
    await git(dir, 'init', '--quiet', '--bare', '--initial-branch=main', r.bare);
    await git(dir, 'init', '--quiet', '--initial-branch=main', r.work);
    // git daemon serves only repositories that say so
    await fs.writeFile(path.join(r.bare, 'git-daemon-export-ok'), '');
    return r;
  }

  get fileUrl(): string {
    return `file://${this.bare}`;
  }

  /** Writes (string) or deletes (null) files, commits everything, pushes main; the new commit. */
  async commit(message: string, files: Record<string, string | null> = {}, opts: { allowEmpty?: boolean; signingKey?: string } = {}): Promise<string> {
    for (const [rel, content] of Object.entries(files)) {
      const p = path.join(this.work, rel);
      if (content === null) await fs.rm(p, { force: true, recursive: true });
      else {
        await fs.mkdir(path.dirname(p), { recursive: true });
        await fs.writeFile(p, content);
      }
    }
    await git(this.work, 'add', '--all');
    const sign = opts.signingKey ? ['-c', 'gpg.format=ssh', '-c', `user.signingkey=${opts.signingKey}`] : [];
    await git(this.work, ...sign, 'commit', '--quiet', ...(opts.signingKey ? ['-S'] : []), ...(opts.allowEmpty ? ['--allow-empty'] : []), '-m', message);
    await this.push();
    return git(this.work, 'rev-parse', 'HEAD');
  }

  async push(force = false): Promise<void> {
    await git(this.work, 'push', '--quiet', ...(force ? ['--force'] : []), this.bare, 'HEAD:refs/heads/main');
  }

  /** Moves main back to `sha` and force-pushes it (history rewritten). */
  async forcePushTo(sha: string): Promise<void> {
    await git(this.work, 'reset', '--quiet', '--hard', sha);
    await this.push(true);
  }

  async remove(): Promise<void> {
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}

/** An ed25519 key pair for ssh signing: the private key's path and the public key's line. */
export async function sshKeyPair(dir: string, name: string): Promise<{ key: string; pub: string }> {
  const key = path.join(dir, name);
  await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', name, '-f', key], { env: ENV });
  return { key, pub: (await fs.readFile(`${key}.pub`, 'utf8')).trim() };
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => (typeof a === 'object' && a ? resolve(a.port) : reject(new Error('no port'))));
    });
  });
}

/** `git daemon` serving `base` on 127.0.0.1:port; resolves once it accepts connections. */
export class GitDaemon {
  private child: ChildProcess | undefined;

  constructor(
    readonly base: string,
    readonly port: number,
  ) {}

  url(repoDir: string): string {
    return `git://127.0.0.1:${this.port}/${path.relative(this.base, repoDir)}`;
  }

  async start(): Promise<void> {
    const child = spawn(
      'git',
      ['daemon', '--reuseaddr', '--listen=127.0.0.1', `--port=${this.port}`, `--base-path=${this.base}`, '--export-all', '--informative-errors', this.base],
      {
        env: ENV,
        stdio: 'ignore',
      },
    );
    this.child = child;
    const deadline = Date.now() + 10_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`git daemon exited with ${child.exitCode}`);
      const ok = await new Promise<boolean>((resolve) => {
        const s = net.connect(this.port, '127.0.0.1');
        s.once('connect', () => {
          s.destroy();
          resolve(true);
        });
        s.once('error', () => resolve(false));
      });
      if (ok) return;
      if (Date.now() > deadline) throw new Error('git daemon did not listen within 10 s');
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /** Ends the daemon by its pid and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (!child || child.exitCode !== null || child.pid === undefined) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    process.kill(child.pid, 'SIGTERM');
    await exited;
  }
}

/**
 * The system `git`, run hardened (docs/GITOPS.md, "Which git"): through execFile (no shell),
 * with an environment made from scratch (no user or system config, no prompts, a HOME of
 * berth's own), the URL schemes allowlisted by git itself (GIT_ALLOW_PROTOCOL, which also
 * covers redirects and submodules), `ext::` refused once more by config, no hooks, no
 * credential helpers, and links checked out as plain files. Credentials reach git only through
 * GIT_ASKPASS (a script reading a file) and GIT_SSH_COMMAND (a key and known_hosts file), never
 * argv. Every command has a deadline.
 */
import { execFile } from 'node:child_process';
import { DEFAULTS, GIT } from '../constants';

export interface GitRunOptions {
  /** berth's folder for git (HOME, the askpass script). */
  home: string;
  cwd?: string;
  /** GIT_ASKPASS: a script that prints the token (credentials.ts). */
  askpass?: string;
  /** GIT_SSH_COMMAND (credentials.ts). */
  sshCommand?: string;
  /** More environment (e.g. GIT_INDEX_FILE, the token file's path for the askpass script). */
  env?: Record<string, string>;
  timeoutMs?: number;
  /** Text for git's stdin. */
  input?: string;
}

/** A git command that failed: its words (never a credential: none is ever in argv) and git's own message. */
export class GitError extends Error {
  constructor(
    readonly command: string,
    readonly detail: string,
    readonly timedOut = false,
  ) {
    super(`git ${command}: ${detail}`);
    this.name = 'GitError';
  }
}

/** Settings given on every command line, before the subcommand. */
export const HARDENING: readonly string[] = [
  'protocol.ext.allow=never',
  'protocol.fd.allow=never',
  'core.hooksPath=/dev/null',
  'core.symlinks=false',
  'core.fsmonitor=false',
  'credential.helper=',
  'submodule.recurse=false',
  'fetch.recurseSubmodules=false',
  'uploadpack.packObjectsHook=',
].flatMap((c) => ['-c', c]);

/** The environment of every git command: nothing of the caller's but PATH. */
export function gitEnv(o: GitRunOptions): Record<string, string> {
  return {
    PATH: process.env['PATH'] ?? '/usr/local/bin:/usr/bin:/bin',
    HOME: o.home,
    LC_ALL: 'C',
    GIT_CONFIG_NOSYSTEM: '1',
    GIT_CONFIG_GLOBAL: '/dev/null',
    GIT_TERMINAL_PROMPT: '0',
    GIT_ALLOW_PROTOCOL: GIT.schemes.join(':'),
    GIT_PROTOCOL_FROM_USER: '0',
    GIT_NO_REPLACE_OBJECTS: '1',
    // No askpass: git asks nobody and fails (a prompt would hang a controller).
    GIT_ASKPASS: o.askpass ?? '/bin/false',
    SSH_ASKPASS: '/bin/false',
    GIT_SSH_COMMAND: o.sshCommand ?? 'ssh -o BatchMode=yes',
    ...(o.env ?? {}),
  };
}

/** Runs `git <args>`; resolves with stdout, rejects with a GitError holding git's last words. */
export function runGit(args: readonly string[], o: GitRunOptions): Promise<string> {
  const command = subcommand(args);
  return new Promise((resolve, reject) => {
    const child = execFile(
      'git',
      [...HARDENING, ...args],
      {
        cwd: o.cwd ?? o.home,
        env: gitEnv(o),
        timeout: o.timeoutMs ?? DEFAULTS.gitTimeoutMs,
        killSignal: 'SIGKILL',
        maxBuffer: 64 * 1024 * 1024,
        encoding: 'utf8',
        windowsHide: true,
      },
      (err, stdout, stderr) => {
        if (!err) return resolve(stdout);
        const e = err as NodeJS.ErrnoException & { killed?: boolean; signal?: string };
        if (e.code === 'ENOENT') return reject(new GitError(command, 'git is not installed (scripts/git-up.sh installs it)'));
        const timedOut = e.killed === true && e.signal === 'SIGKILL';
        const said = lastLines(stderr);
        reject(
          new GitError(
            command,
            timedOut
              ? `gave no answer within ${Math.round((o.timeoutMs ?? DEFAULTS.gitTimeoutMs) / 1000)} s`
              : said || `exited with status ${String(e.code)} and said nothing`,
            timedOut,
          ),
        );
      },
    );
    if (o.input !== undefined) child.stdin?.end(o.input);
    else child.stdin?.end();
  });
}

/** The subcommand's name (after global options such as `--git-dir DIR`). */
function subcommand(args: readonly string[]): string {
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === '--git-dir' || a === '--work-tree' || a === '-C' || a === '-c') i++;
    else if (!a.startsWith('-')) return a;
  }
  return '';
}

/**
 * Lines git adds after every failed connection, and after a lock file it found, whatever went
 * wrong: left out so that the cause (ssh's "Host key verification failed.", "Permission denied
 * (publickey).", "Unable to create '….lock': File exists.") is what is kept.
 */
const BOILERPLATE = new Set([
  'fatal: Could not read from remote repository.',
  'Please make sure you have the correct access rights',
  'and the repository exists.',
  'Another git process seems to be running in this repository, e.g.',
  "an editor opened by 'git commit'. Please make sure all processes",
  'are terminated then try again. If it still fails, a git process',
  'may have crashed in this repository earlier:',
  'remove the file manually to continue.',
]);

/** git's message: its last few non-empty lines, on one line (hints, banners and boilerplate left out). */
export function lastLines(stderr: string): string {
  return stderr
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !l.startsWith('hint:') && !l.startsWith('@') && !BOILERPLATE.has(l))
    .slice(-3)
    .join('; ')
    .slice(0, 600);
}

/**
 * Credentials of a git source, never in argv, a URL, a log line, status or an error message
 * (docs/CONTRACT.md "Specs from git"):
 * - https: a token read from a file (`--git-token-file`, read afresh at every fetch, so it can
 *   be rotated) or from an environment variable (`--git-token-env`, read once at start), handed
 *   to git by GIT_ASKPASS: a script berth writes (0700) into its own git HOME that prints the
 *   token with shell builtins only; the token reaches the script through a file path or git's
 *   environment, never through a command line.
 * - ssh: a key file and a known_hosts file (`--git-ssh-key`, `--git-known-hosts`) through
 *   GIT_SSH_COMMAND, with host keys checked strictly and no ssh config read.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { writeFileAtomic } from '../status/atomic-file';
import type { GitRunOptions } from './exec';

export interface GitCredentials {
  tokenFile?: string;
  /** The token itself (from `--git-token-env`): only ever put into git's environment. */
  token?: string;
  /** The Basic auth user name sent with the token. */
  username?: string;
  sshKey?: string;
  knownHosts?: string;
}

/** The script git runs for a user name and a password: shell builtins only (no token in any argv). */
export const ASKPASS_SCRIPT = `#!/bin/sh
# berth's GIT_ASKPASS: prints the user name, or the token (from a file, or from the environment).
case "$1" in
  Username*) printf '%s\\n' "$BERTH_GIT_USERNAME" ;;
  *)
    if [ -n "$BERTH_GIT_TOKEN_FILE" ]; then
      IFS= read -r t < "$BERTH_GIT_TOKEN_FILE" || [ -n "$t" ] || exit 1
      printf '%s\\n' "$t"
    else
      printf '%s\\n' "$BERTH_GIT_TOKEN"
    fi
    ;;
esac
`;

/** A path safe to put into GIT_SSH_COMMAND (git runs it through a shell): absolute, plain characters. */
const SAFE_PATH = /^\/[A-Za-z0-9._/@+-]+$/;

/** Why the ssh files cannot be used, or undefined. */
export function sshProblem(c: GitCredentials): string | undefined {
  for (const [flag, p] of [
    ['--git-ssh-key', c.sshKey],
    ['--git-known-hosts', c.knownHosts],
  ] as const) {
    if (p !== undefined && !SAFE_PATH.test(p)) return `${flag}: use a path of letters, digits and . _ / @ + - only`;
  }
  return undefined;
}

/** GIT_SSH_COMMAND for the key and known_hosts given (paths already checked by sshProblem). */
export function sshCommand(c: GitCredentials): string {
  const opts = [
    '-F',
    '/dev/null',
    '-o',
    'BatchMode=yes',
    '-o',
    'StrictHostKeyChecking=yes',
    '-o',
    'PasswordAuthentication=no',
    '-o',
    'KbdInteractiveAuthentication=no',
  ];
  opts.push('-o', `UserKnownHostsFile=${c.knownHosts ?? '/dev/null'}`, '-o', 'GlobalKnownHostsFile=/dev/null');
  if (c.sshKey) opts.push('-o', 'IdentitiesOnly=yes', '-i', c.sshKey);
  return ['ssh', ...opts].join(' ');
}

/** How git runs with these credentials: the askpass script written into `home` when a token is given. */
export async function credentialOptions(c: GitCredentials, home: string): Promise<Omit<GitRunOptions, 'home' | 'cwd'>> {
  const out: Omit<GitRunOptions, 'home' | 'cwd'> = {};
  if (c.sshKey || c.knownHosts) out.sshCommand = sshCommand(c);
  if (c.tokenFile !== undefined || c.token !== undefined) {
    await fs.mkdir(home, { recursive: true, mode: 0o700 });
    const script = path.join(home, 'askpass.sh');
    await writeFileAtomic(script, ASKPASS_SCRIPT, { mode: 0o700 });
    out.askpass = script;
    out.env = {
      BERTH_GIT_USERNAME: c.username ?? 'x-access-token',
      ...(c.tokenFile !== undefined ? { BERTH_GIT_TOKEN_FILE: path.resolve(c.tokenFile) } : { BERTH_GIT_TOKEN: c.token ?? '' }),
    };
  }
  return out;
}

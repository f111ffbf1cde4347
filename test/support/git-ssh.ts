/**
 * Debian's sshd (scripts/git-up.sh installs it) on 127.0.0.1 at a free port, started by the test
 * and ended by its pid: its own host key, config and authorized_keys in a temp folder, one
 * authorized key whose forced command serves `git-upload-pack` of one repository and refuses
 * everything else (and records what it was asked). No system sshd, config or host key is used;
 * sshd writes no pid file. Root's sshd needs its privilege separation folder (/run/sshd, which
 * Debian's service makes at start): made when missing and removed again by stop().
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './git-repo';

const exec = promisify(execFile);
const SSHD = '/usr/sbin/sshd';
const PRIVSEP = '/run/sshd';

export class SshGitServer {
  private child: ChildProcess | undefined;
  private madePrivsep = false;
  /** What sshd said (on stderr, `-e`): its log. */
  log = '';
  port = 0;
  readonly hostKey: string;
  readonly user = os.userInfo().username;

  constructor(
    /** A temp folder of the test's own for sshd's files. */
    readonly dir: string,
    /** The one repository the authorized key may read. */
    readonly repo: string,
  ) {
    this.hostKey = path.join(dir, 'host_ed25519');
  }

  /** The repository's ssh:// URL. */
  get url(): string {
    return `ssh://${this.user}@127.0.0.1:${this.port}${this.repo}`;
  }

  /** The commands the forced command was asked to run, one a line. */
  get asked(): string {
    return path.join(this.dir, 'asked.log');
  }

  /** A known_hosts line for this server with the given public key (its own by default). */
  async knownHostsLine(pub?: string): Promise<string> {
    const key = pub ?? (await fs.readFile(`${this.hostKey}.pub`, 'utf8')).trim().split(' ').slice(0, 2).join(' ');
    return `[127.0.0.1]:${this.port} ${key}\n`;
  }

  /** Starts sshd with `clientPub` authorized (forced to the repository); resolves once it listens. */
  async start(clientPub: string): Promise<void> {
    await exec('ssh-keygen', ['-q', '-t', 'ed25519', '-N', '', '-C', 'berth-test-host', '-f', this.hostKey]);
    const gate = path.join(this.dir, 'gate.sh');
    // Only `git-upload-pack '<repo>'` runs; anything else is refused.
    await fs.writeFile(
      gate,
      `#!/bin/sh\nprintf '%s\\n' "$SSH_ORIGINAL_COMMAND" >> '${this.asked}'\ncase "$SSH_ORIGINAL_COMMAND" in\n  "git-upload-pack '${this.repo}'") exec git-upload-pack --strict -- '${this.repo}' ;;\n  *) echo "berth test sshd: refused" >&2; exit 1 ;;\nesac\n`,
      { mode: 0o755 },
    );
    const authorized = path.join(this.dir, 'authorized_keys');
    await fs.writeFile(authorized, `restrict,command="${gate}" ${clientPub}\n`, { mode: 0o600 });
    this.port = await freePort();
    const config = path.join(this.dir, 'sshd_config');
    await fs.writeFile(
      config,
      [
        `ListenAddress 127.0.0.1:${this.port}`,
        `HostKey ${this.hostKey}`,
        `AuthorizedKeysFile ${authorized}`,
        `AllowUsers ${this.user}`,
        'PidFile none',
        'StrictModes no',
        'UsePAM no',
        'PubkeyAuthentication yes',
        'PasswordAuthentication no',
        'KbdInteractiveAuthentication no',
        'PermitRootLogin prohibit-password',
        'AllowTcpForwarding no',
        'AllowAgentForwarding no',
        'X11Forwarding no',
        'PermitTTY no',
        'PrintMotd no',
        'LogLevel VERBOSE',
        '',
      ].join('\n'),
    );
    try {
      await fs.mkdir(PRIVSEP, { mode: 0o755 });
      this.madePrivsep = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    }
    const child = spawn(SSHD, ['-D', '-e', '-f', config], { stdio: ['ignore', 'ignore', 'pipe'] });
    this.child = child;
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`sshd did not listen within 10 s: ${this.log}`)), 10_000);
      child.stderr?.on('data', (b: Buffer) => {
        this.log += b.toString();
        if (this.log.includes('Server listening on')) {
          clearTimeout(t);
          resolve();
        }
      });
      child.once('exit', (code) => {
        clearTimeout(t);
        reject(new Error(`sshd exited with ${String(code)}: ${this.log}`));
      });
      child.once('error', (err) => {
        clearTimeout(t);
        reject(err);
      });
    });
  }

  /** Ends sshd by its pid (its sessions end with it) and waits for it to exit. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    if (child && child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      process.kill(child.pid, 'SIGTERM');
      await exited;
    }
    if (this.madePrivsep) {
      this.madePrivsep = false;
      await fs.rmdir(PRIVSEP).catch(() => undefined);
    }
  }
}

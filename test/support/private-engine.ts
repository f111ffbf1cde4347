/**
 * A private Docker engine for tests that stop and start the engine: its own dockerd in a
 * network namespace of its own (so its bridge, routes and iptables rules never meet the shared
 * engine's: a second dockerd in the same namespace would even remove docker0 when told
 * --bridge=none), with its own data root, exec root, pid file and socket. Started by the test
 * and ended by the test, by its process id. The shared engine is never touched.
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promises as fs, openSync } from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { TEST_RUN } from './engine';
import { ended, processTrees, releaseContainerd } from './procs';

const run = promisify(execFile);

export class PrivateEngine {
  readonly root: string;
  readonly socket: string;
  private proc: ChildProcess | undefined;
  readonly docker: Dockerode;

  readonly netns: string;

  /**
   * @param opts.resolvConf the host resolver configuration this engine sees (its own mount
   *        namespace, with this text bind-mounted over /etc/resolv.conf); default: the host's.
   * @param opts.storageDriver the engine's storage driver (`--storage-driver`); default: the engine's choice.
   * @param opts.suiteRoot a root made by scripts/engines-up.sh (a Debian suite with its docker.io):
   *        the engine is that suite's dockerd, containerd, shim and runc, found first on the
   *        PATH it is started with (the root's .berth/bin: runc made to load the suite's own C
   *        library, the others run on the host's), in the host's mount namespace as any private
   *        engine, so every path it is given (data root, socket, folders to bind, mounts the
   *        tests make later) is the host's; default: the machine's own dockerd.
   * @param opts.containerdStore the containerd image store on (the `containerd-snapshotter` feature).
   * @param opts.extraArgs more dockerd flags (e.g. `--seccomp-profile=unconfined`: a weak engine).
   */
  constructor(
    tag: string,
    private readonly opts: { resolvConf?: string; storageDriver?: string; suiteRoot?: string; containerdStore?: boolean; extraArgs?: string[] } = {},
  ) {
    this.root = `/tmp/bd-${TEST_RUN}-${tag}`.slice(0, 40);
    this.netns = `berth-${TEST_RUN}-${tag}`.slice(0, 30);
    this.socket = path.join(this.root, 'd.sock');
    this.docker = new Dockerode({ socketPath: this.socket });
  }

  async start(): Promise<void> {
    await fs.mkdir(path.join(this.root, 'data'), { recursive: true });
    await fs.access(`/var/run/netns/${this.netns}`).catch(async () => {
      await run('ip', ['netns', 'add', this.netns]);
      await run('ip', ['netns', 'exec', this.netns, 'ip', 'link', 'set', 'lo', 'up']);
    });
    // a killed dockerd's containerd may still be ending, or linger as a zombie (procs.ts)
    await releaseContainerd(path.join(this.root, 'x', 'containerd', 'containerd.pid'), path.join(this.root, 'x', 'containerd', 'containerd.toml'));
    const log = openSync(path.join(this.root, 'dockerd.log'), 'a');
    const dockerd = [
      'dockerd',
      `--host=unix://${this.socket}`,
      `--data-root=${path.join(this.root, 'data')}`,
      `--exec-root=${path.join(this.root, 'x')}`,
      `--pidfile=${path.join(this.root, 'd.pid')}`,
      '--bip=10.213.0.1/24',
      ...(this.opts.storageDriver ? [`--storage-driver=${this.opts.storageDriver}`] : []),
      ...(this.opts.extraArgs ?? []),
    ];
    if (this.opts.suiteRoot !== undefined || this.opts.containerdStore) {
      // a configuration of its own: the host's /etc/docker/daemon.json never applies
      const config = path.join(this.root, 'daemon.json');
      await fs.writeFile(config, JSON.stringify(this.opts.containerdStore ? { features: { 'containerd-snapshotter': true } } : {}));
      dockerd.push(`--config-file=${config}`);
    }
    let env: NodeJS.ProcessEnv = process.env;
    if (this.opts.suiteRoot !== undefined) {
      const bin = path.join(this.opts.suiteRoot, '.berth', 'bin');
      await fs.access(path.join(bin, 'runc')).catch(() => {
        throw new Error(`no engine root at ${this.opts.suiteRoot}: run ./scripts/engines-up.sh (make setup does)`);
      });
      env = { ...process.env, PATH: `${bin}:${process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin'}` };
    }
    let argv = [`--net=/var/run/netns/${this.netns}`, ...dockerd];
    if (this.opts.resolvConf !== undefined) {
      // A mount namespace of its own, where /etc/resolv.conf is ours; the host's file is untouched.
      const conf = path.join(this.root, 'resolv.conf');
      await fs.writeFile(conf, this.opts.resolvConf);
      argv = [
        `--net=/var/run/netns/${this.netns}`,
        'unshare',
        '--mount',
        '--propagation',
        'private',
        'sh',
        '-c',
        'mount --bind "$0" /etc/resolv.conf && exec "$@"',
        conf,
        ...dockerd,
      ];
    }
    // nsenter, not `ip netns exec` (which remounts /sys and hides the cgroup mounts dockerd needs)
    this.proc = spawn('nsenter', argv, { stdio: ['ignore', log, log], env });
    const exited = new Promise<never>((_, reject) =>
      this.proc?.once('exit', (code) => {
        // the log goes with destroy(): its last lines go with the error
        void fs.readFile(path.join(this.root, 'dockerd.log'), 'utf8').then(
          (text) => reject(new Error(`private dockerd exited ${code}; its log ends:\n${text.split('\n').slice(-8).join('\n')}`)),
          () => reject(new Error(`private dockerd exited ${code}; see ${this.root}/dockerd.log`)),
        );
      }),
    );
    const ready = (async () => {
      for (let i = 0; i < 600; i++) {
        try {
          await this.docker.ping();
          return;
        } catch {
          await new Promise((r) => setTimeout(r, 50));
        }
      }
      throw new Error(`private dockerd did not answer in 30 s; see ${this.root}/dockerd.log`);
    })();
    await Promise.race([ready, exited]);
  }

  /** Starts `cmd` inside this engine's network namespace (its loopback is not the host's). */
  spawnInNetns(cmd: string, args: string[]): ChildProcess {
    return spawn('nsenter', [`--net=/var/run/netns/${this.netns}`, cmd, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  }

  /**
   * Copies images from the machine's engine into this one (`docker save | docker load`: no
   * registry, and each engine needs its own copy).
   */
  async loadImages(refs: string[]): Promise<void> {
    await run('bash', ['-o', 'pipefail', '-c', 'docker -H unix:///var/run/docker.sock save "$@" | docker -H "unix://$0" load -q', this.socket, ...refs], {
      env: { ...process.env, DOCKER_HOST: '' },
    });
  }

  /** Imports the test image into this engine (no registry: each engine needs its own copy). */
  async importImage(): Promise<void> {
    await run(path.resolve(__dirname, '..', '..', 'scripts', 'images.sh'), [], {
      env: { ...process.env, DOCKER_HOST: `unix://${this.socket}`, BERTH_IMAGES: 'busybox' },
    });
  }

  /** Stops the daemon it started (SIGTERM, by pid) and waits for it to exit. */
  async stop(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const gone = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill('SIGTERM');
    await gone;
    this.proc = undefined;
  }

  /**
   * Kills the daemon it started with SIGKILL (by pid) and waits for it to exit: a crash. Its
   * containerd and the containers' shims live on; the next start() takes them up again.
   */
  async kill(): Promise<void> {
    const p = this.proc;
    if (!p || p.exitCode !== null) return;
    const gone = new Promise<void>((resolve) => p.once('exit', () => resolve()));
    p.kill('SIGKILL');
    await gone;
    this.proc = undefined;
    // its containerd dies with it (a moment later): wait, so that the next start does not meet it half-dead
    const pidFile = path.join(this.root, 'x', 'containerd', 'containerd.pid');
    const pid = Number((await fs.readFile(pidFile, 'utf8').catch(() => '')).trim());
    if (pid) await ended(pid, 10_000);
  }

  /**
   * The process ids of this engine's container shims and everything under them. A shim outlives
   * a killed dockerd, and one whose task the engine lost track of (a start cut short by the
   * kill) outlives even `docker rm -f` of its container.
   */
  async shimTrees(): Promise<number[]> {
    const marker = `-address ${path.join(this.root, 'x', 'containerd', 'containerd.sock')}`;
    return processTrees((p) => p.args.includes('containerd-shim') && p.args.includes(marker));
  }

  async destroy(): Promise<void> {
    await this.stop();
    for (const pid of await this.shimTrees()) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    // what a killed engine leaves mounted (its containers' network namespaces), deepest first
    const mounts = (await fs.readFile('/proc/self/mounts', 'utf8')).split('\n').map((l) => l.split(' ')[1] ?? '');
    for (const m of mounts.filter((m) => m.startsWith(`${this.root}/`)).reverse()) await run('umount', [m]).catch(() => undefined);
    await run('umount', ['-R', path.join(this.root, 'data')]).catch(() => undefined);
    await fs.rm(this.root, { recursive: true, force: true }).catch(() => undefined);
    await run('ip', ['netns', 'delete', this.netns]).catch(() => undefined);
  }
}

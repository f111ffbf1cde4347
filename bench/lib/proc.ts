/**
 * Child processes the bench starts (berth's CLI, docker, docker-compose), timed, and what
 * /proc says about them. Every child is tracked by pid so that a failing bench ends exactly
 * the processes it started, and nothing else.
 */
import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';

export const REPO = path.resolve(__dirname, '..', '..');
export const BERTH_BIN = path.join(REPO, 'bin', 'berth.js');

const live = new Set<ChildProcess>();

export interface RunResult {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  ms: number;
}

export class CommandError extends Error {
  constructor(
    readonly argv: string[],
    readonly result: RunResult,
  ) {
    super(
      `${argv.join(' ')} exited ${result.code ?? result.signal}\n--- stderr ---\n${result.stderr.slice(-3000)}\n--- stdout ---\n${result.stdout.slice(-1500)}`,
    );
  }
}

export interface RunOptions extends SpawnOptions {
  allowFail?: boolean;
  input?: string;
  /** Kill (SIGKILL, by pid) and reject after this long; default 600 s. A hung peer never hangs the bench. */
  timeoutMs?: number;
}

/** Runs a command to completion; the wall time is from spawn to exit. Rejects on a non-zero exit unless `allowFail`. */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { ...opts, stdio: ['pipe', 'pipe', 'pipe'] });
    live.add(child);
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      if (child.pid !== undefined) {
        try {
          process.kill(child.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
    }, opts.timeoutMs ?? 600_000);
    let stdout = '';
    let stderr = '';
    child.stdout?.setEncoding('utf8').on('data', (s: string) => (stdout += s));
    child.stderr?.setEncoding('utf8').on('data', (s: string) => (stderr += s));
    child.on('error', (err) => {
      clearTimeout(timer);
      live.delete(child);
      reject(new Error(`${cmd}: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      live.delete(child);
      const res = { code, signal, stdout, stderr, ms: performance.now() - t0 };
      if (timedOut) reject(new CommandError([cmd, ...args], { ...res, stderr: `timed out after ${opts.timeoutMs ?? 600_000} ms\n${stderr}` }));
      else if (code !== 0 && !opts.allowFail) reject(new CommandError([cmd, ...args], res));
      else resolve(res);
    });
    // A child that exits before reading its input (most do) closes the pipe: EPIPE is no failure of its.
    child.stdin?.on('error', (err: NodeJS.ErrnoException) => {
      if (err.code !== 'EPIPE') reject(err);
    });
    child.stdin?.end(opts.input ?? '');
  });
}

/** `node bin/berth.js ...` with this Node (`nodeArgs` before the script, e.g. --cpu-prof); `build`: another build's (buildOf). */
export function berth(args: string[], opts: RunOptions & { nodeArgs?: string[]; build?: Build } = {}): Promise<RunResult> {
  const b = opts.build ?? { node: process.execPath, bin: BERTH_BIN };
  return run(b.node, [...(opts.nodeArgs ?? []), b.bin, ...args], { cwd: REPO, ...opts });
}

/** A build of berth to run: its bin/berth.js, and the Node it runs on. */
export interface Build {
  label: string;
  node: string;
  bin: string;
}

/** `label=[node@]bin` (BENCH_AB): another build, on this Node or the one named (the build before a Node upgrade, on its own). */
export function buildOf(spec: string | undefined): Build | undefined {
  if (!spec) return undefined;
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new Error(`BENCH_AB: ${spec}: expected label=[node@]path/to/bin/berth.js`);
  return { label: spec.slice(0, eq), ...nodeAndBin(spec.slice(eq + 1)) };
}

/** `[node@]bin`: a build's bin/berth.js, and the Node to run it with (default: this one). */
export function nodeAndBin(build: string): { node: string; bin: string } {
  const at = build.indexOf('@');
  return at > 0 ? { node: build.slice(0, at), bin: build.slice(at + 1) } : { node: process.execPath, bin: build };
}

/** Node flags that write a CPU profile named `name` into `dir` when the process exits. */
export function cpuProfArgs(dir: string | undefined, name: string): string[] {
  return dir ? ['--cpu-prof', '--cpu-prof-dir', dir, '--cpu-prof-name', `${name}.cpuprofile`] : [];
}

/** A long-running child (berth's controller) whose stderr we watch. */
export class Daemon {
  readonly child: ChildProcess;
  stderr = '';
  stdout = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  private watchers: { re: RegExp; resolve: () => void }[] = [];

  constructor(cmd: string, args: string[], opts: SpawnOptions = {}) {
    this.child = spawn(cmd, args, { ...opts, stdio: ['ignore', 'pipe', 'pipe'] });
    live.add(this.child);
    this.child.stdout?.setEncoding('utf8').on('data', (s: string) => (this.stdout += s));
    this.child.stderr?.setEncoding('utf8').on('data', (s: string) => {
      this.stderr += s;
      this.watchers = this.watchers.filter((w) => {
        if (!w.re.test(this.stderr)) return true;
        w.resolve();
        return false;
      });
    });
    this.exited = new Promise((resolve) => {
      this.child.on('exit', (code, signal) => {
        live.delete(this.child);
        resolve({ code, signal });
      });
    });
  }

  get pid(): number {
    if (this.child.pid === undefined) throw new Error('the child did not start');
    return this.child.pid;
  }

  /** Resolves when stderr matches `re`; rejects on exit or after `timeoutMs`. */
  waitFor(re: RegExp, timeoutMs: number): Promise<void> {
    if (re.test(this.stderr)) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no ${re} on the child's stderr within ${timeoutMs} ms:\n${this.stderr.slice(-2000)}`)), timeoutMs);
      this.watchers.push({
        re,
        resolve: () => {
          clearTimeout(t);
          resolve();
        },
      });
      void this.exited.then(({ code, signal }) => {
        clearTimeout(t);
        reject(new Error(`the child exited (${code ?? signal}) before ${re}:\n${this.stderr.slice(-2000)}`));
      });
    });
  }

  /** SIGTERM by pid, then wait for the exit (SIGKILL after `graceMs`). */
  async stop(graceMs = 30_000): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return this.exited;
    process.kill(this.pid, 'SIGTERM');
    const t = setTimeout(() => {
      try {
        process.kill(this.pid, 'SIGKILL');
      } catch {
        /* gone */
      }
    }, graceMs);
    const res = await this.exited;
    clearTimeout(t);
    return res;
  }
}

/** Ends every child this bench started that is still alive (by its pid). */
export function killLiveChildren(): void {
  for (const c of live) {
    if (c.pid !== undefined && c.exitCode === null && c.signalCode === null) {
      try {
        process.kill(c.pid, 'SIGKILL');
      } catch {
        /* already gone */
      }
    }
  }
}

const CLK_TCK = 100; // sysconf(_SC_CLK_TCK) on Linux

/** utime + stime of a process, in ms. */
export function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  // The command name (field 2) may hold spaces: fields after the last ')' are fixed.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  return ((utime + stime) * 1000) / CLK_TCK;
}

/** A field of /proc/<pid>/status in kB (VmHWM: peak RSS, VmRSS: current RSS). */
export function statusKb(pid: number, field: 'VmHWM' | 'VmRSS'): number {
  const m = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!m) throw new Error(`no ${field} in /proc/${pid}/status`);
  return Number(m[1]);
}

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

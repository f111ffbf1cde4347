/**
 * A berth sandbox for engine tests: its own specs, state and results folders in a temp dir and
 * its own instance name (so its resources are its alone), with the CLI run in-process.
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../src/cli/index';
import { exists } from '../../src/cli/commands/shared';
import { bufferIo } from '../../src/cli/io';
import { reconcilePass, type PassConfig, type PassResult } from '../../src/controller/pass';
import { CallCounter, instrumentEngine } from '../../src/engine/wrap';
import { StatusStore } from '../../src/status/store';
import type { AttemptStatus } from '../../src/status/types';
import { newInstance, rememberBuilds, testEngine, watchBuilds } from './engine';
import { passConfigOf } from './pass-config';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** The folders of the sandboxes this process made and has not removed (test/hooks.ts fails the run on any left). */
const made = new Set<string>();

/** Removes the sandbox folders this test run made and left; returns them. */
export async function removeLeftoverSandboxes(): Promise<string[]> {
  const left: string[] = [];
  for (const dir of made) {
    if (!(await exists(dir))) continue;
    left.push(dir);
    await fs.rm(dir, { recursive: true, force: true });
  }
  made.clear();
  return left;
}

export class Sandbox {
  readonly specsDir: string;
  readonly stateDir: string;
  readonly resultsRoot: string;
  readonly calls = new CallCounter();
  readonly engine = instrumentEngine(testEngine(), this.calls.listener);

  private constructor(
    readonly dir: string,
    readonly instance: string,
  ) {
    this.specsDir = path.join(dir, 'specs');
    this.stateDir = path.join(dir, 'state');
    this.resultsRoot = path.join(dir, 'results');
  }

  /** @param instance a chosen instance name; it must start with TEST_RUN (the leak check finds it by that). */
  static async create(tag: string, instance?: string): Promise<Sandbox> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), `berth-${tag}-`));
    made.add(dir);
    const sb = new Sandbox(dir, instance ?? newInstance(tag));
    watchBuilds(sb.stateDir);
    await fs.mkdir(sb.specsDir, { recursive: true });
    return sb;
  }

  async write(rel: string, content: string | Buffer): Promise<string> {
    const p = path.join(this.specsDir, rel);
    await fs.mkdir(path.dirname(p), { recursive: true });
    await fs.writeFile(p, content);
    return p;
  }

  async remove(rel: string): Promise<void> {
    await fs.rm(path.join(this.specsDir, rel), { recursive: true, force: true });
  }

  /** A minimal attempt spec. */
  attempt(name: string, command: string, extra = ''): string {
    return `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [sh, -c, ${JSON.stringify(command)}]\n${extra}`;
  }

  globalArgs(): string[] {
    return ['--specs', this.specsDir, '--state', this.stateDir, '--results-root', this.resultsRoot, '--instance', this.instance, '--log-level', 'warn'];
  }

  async cli(...args: string[]): Promise<CliResult> {
    return this.cliWith({}, ...args);
  }

  /** The CLI with some of the sandbox's global flags replaced (e.g. `{ '--specs': other }`). */
  async cliWith(over: Record<string, string>, ...args: string[]): Promise<CliResult> {
    const g = this.globalArgs();
    for (let i = 0; i < g.length; i += 2) {
      const flag = g[i] as string;
      if (over[flag] !== undefined) g[i + 1] = over[flag];
    }
    const io = bufferIo();
    const code = await run(['node', 'berth', ...args, ...g], io);
    return { code, stdout: io.stdout, stderr: io.stderr };
  }

  /** The CLI without some of the sandbox's global flags (e.g. `['--specs']`). */
  async cliWithout(drop: string[], ...args: string[]): Promise<CliResult> {
    const g = this.globalArgs().filter((_, i, all) => !drop.includes(all[i] as string) && !drop.includes(all[i - 1] as string));
    const io = bufferIo();
    const code = await run(['node', 'berth', ...args, ...g], io);
    return { code, stdout: io.stdout, stderr: io.stderr };
  }

  config(over: Partial<PassConfig> = {}): PassConfig {
    return passConfigOf(this, over);
  }

  store(): StatusStore {
    return new StatusStore(this.stateDir, this.instance);
  }

  /** One reconcile pass in-process; `calls` counts this pass's engine calls. */
  async pass(over: Partial<PassConfig> = {}): Promise<PassResult> {
    this.calls.reset();
    return reconcilePass(this.config(over), this.engine, this.store());
  }

  async status(name: string): Promise<AttemptStatus | undefined> {
    return this.store().get(name);
  }

  /**
   * berth clean for this instance, then the temp folder goes. An instance that follows a git
   * source is cleaned as its user would clean it: without --specs (clean then speaks for the git
   * source the state folder follows, the source the instance is bound to).
   */
  async destroy(): Promise<void> {
    const followsGit = await exists(path.join(this.stateDir, 'git', this.instance, 'source.json'));
    const r = followsGit ? await this.cliWithout(['--specs'], 'clean') : await this.cli('clean');
    if (r.code !== 0) throw new Error(`berth clean failed: ${r.stderr}`);
    await this.dispose();
  }

  /** The temp folder goes (the engine's resources removed otherwise: `clean --backend swarm`, by hand). */
  async dispose(): Promise<void> {
    rememberBuilds(this.stateDir);
    await fs.rm(this.dir, { recursive: true, force: true });
    made.delete(this.dir);
  }
}

/**
 * A berth sandbox on the fake engine (test/support/fake-engine.ts): its own specs, state and
 * results folders in a temp dir, and the whole command line run in-process with the fake as its
 * engine. For what berth decides, records and prints (plans, names, sets, engine call counts);
 * what only the real engine can show (a process running, isolation, the engine's own limits) is
 * for test/engine/ and Sandbox. A task's run is what the test says it does (FakeEngine.runTasks).
 */
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { run } from '../../src/cli/index';
import { bufferIo } from '../../src/cli/io';
import { reconcilePass, type PassConfig, type PassResult } from '../../src/controller/pass';
import { CallCounter, instrumentEngine } from '../../src/engine/wrap';
import { StatusStore } from '../../src/status/store';
import type { AttemptStatus } from '../../src/status/types';
import { FakeEngine } from './fake-engine';
import { passConfigOf } from './pass-config';
import type { CliResult } from './sandbox';

/** The images the attempts of these tests name, as the fake holds them. */
export const FAKE_IMAGES = ['berth/busybox:local', 'berth/egress-proxy:local'];

let counter = 0;

export class FakeSandbox {
  readonly specsDir: string;
  readonly stateDir: string;
  readonly resultsRoot: string;
  readonly fake = new FakeEngine();
  /** The engine calls of the last pass() (the CLI's are in fake.calls). */
  readonly calls = new CallCounter();
  readonly engine = instrumentEngine(this.fake, this.calls.listener);

  private constructor(
    readonly dir: string,
    readonly instance: string,
  ) {
    this.specsDir = path.join(dir, 'specs');
    this.stateDir = path.join(dir, 'state');
    this.resultsRoot = path.join(dir, 'results');
    for (const ref of FAKE_IMAGES) this.fake.addImage({ ref });
  }

  static async create(tag: string): Promise<FakeSandbox> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), `berth-fake-${tag}-`));
    const sb = new FakeSandbox(dir, `fake-${tag}-${++counter}`);
    await fs.mkdir(sb.specsDir, { recursive: true });
    return sb;
  }

  async write(rel: string, content: string): Promise<void> {
    const p = path.join(this.specsDir, rel);
    await fs.mkdir(path.dirname(p), { recursive: true });
    await fs.writeFile(p, content);
  }

  async remove(rel: string): Promise<void> {
    await fs.rm(path.join(this.specsDir, rel), { recursive: true, force: true });
  }

  /** A minimal attempt spec (as Sandbox.attempt). */
  attempt(name: string, command: string, extra = ''): string {
    return `apiVersion: berth.dev/v1\nkind: Attempt\nmetadata:\n  name: ${name}\nspec:\n  image: berth/busybox:local\n  command: [sh, -c, ${JSON.stringify(command)}]\n${extra}`;
  }

  globalArgs(): string[] {
    return ['--specs', this.specsDir, '--state', this.stateDir, '--results-root', this.resultsRoot, '--instance', this.instance, '--log-level', 'warn'];
  }

  /** `berth ...args` with the sandbox's flags, in-process, on the fake engine. */
  async cli(...args: string[]): Promise<CliResult> {
    const io = bufferIo();
    const code = await run(['node', 'berth', ...args, ...this.globalArgs()], io, { engine: this.fake });
    return { code, stdout: io.stdout, stderr: io.stderr };
  }

  /** One reconcile pass in-process; `calls` counts this pass's engine calls. */
  async pass(over: Partial<PassConfig> = {}): Promise<PassResult> {
    this.calls.reset();
    return reconcilePass(passConfigOf(this, over), this.engine, this.store());
  }

  store(): StatusStore {
    return new StatusStore(this.stateDir, this.instance);
  }

  async status(name: string): Promise<AttemptStatus | undefined> {
    return this.store().get(name);
  }

  /** The temp folder goes (the fake engine goes with the sandbox). */
  async dispose(): Promise<void> {
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}

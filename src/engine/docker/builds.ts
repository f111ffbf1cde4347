/**
 * BuildClient over dockerode: the engine's build API (POST /build) driven with the classic
 * builder (`version=1`). BuildKit through the API needs a session berth does not hold (a gRPC
 * stream over a hijacked connection that serves the context and secrets), so berth asks for the
 * classic builder on every engine, which Docker engines up to 28 still offer through the API;
 * `describe` says which builder built an image.
 *
 * The context goes as a tar stream in the request body (the engine reads all of it before the
 * first step: the call's deadline counts from the last chunk it read); the engine's answer is its
 * output, a JSON stream read to its end: every message is handed on as it comes, and an
 * `errorDetail` anywhere in it is the failure (the engine answers 200 before it builds). Closing
 * the request (the caller's signal) stops the build: the engine kills the step under way and
 * removes its container (`forcerm`).
 */
import type Dockerode from 'dockerode';
import type { Readable } from 'node:stream';
import { describeEngineError, statusOf } from '../errors';
import { BuildError, type BuildClient, type BuildMessage, type BuildOptions } from '../types';
import { withProgress, type BoundedCalls } from './deadline';

/** The CPU period the CPUs are given in (the engine's default, 100 ms). */
const CPU_PERIOD = 100_000;

export class DockerBuilds implements BuildClient {
  readonly builder = 'classic' as const;

  constructor(
    private readonly docker: Dockerode,
    private readonly calls: BoundedCalls,
  ) {}

  async build(context: NodeJS.ReadableStream, o: BuildOptions): Promise<{ id: string }> {
    const opts: Record<string, unknown> = {
      t: o.tag,
      dockerfile: o.dockerfile,
      buildargs: JSON.stringify(o.args),
      labels: JSON.stringify(o.labels),
      networkmode: o.network,
      version: '1',
      rm: true,
      forcerm: true,
      ...(o.target ? { target: o.target } : {}),
      ...(o.pull ? { pull: '1' } : {}),
      ...(o.memoryBytes ? { memory: o.memoryBytes, memswap: o.memoryBytes } : {}),
      ...(o.cpus ? { cpuperiod: CPU_PERIOD, cpuquota: Math.round(o.cpus * CPU_PERIOD) } : {}),
      ...(o.registryConfig && Object.keys(o.registryConfig).length ? { registryconfig: o.registryConfig } : {}),
    };
    let res: Readable;
    try {
      res = (await this.calls.run(
        'builds.build',
        (progress) => this.docker.buildImage(withProgress(context as Readable, progress) as never, opts) as unknown as Promise<Readable>,
        { idle: true, stream: true, ...(o.signal ? { signal: o.signal } : {}) },
      )) as Readable;
    } catch (err) {
      // an error status before the output (a bad Dockerfile name, a parse error on some engines)
      if (statusOf(err) !== undefined) throw new BuildError(describeEngineError(err).replace(/ \(HTTP \d+\)$/, ''));
      throw err;
    }
    let id: string | undefined;
    let failure: BuildError | undefined;
    let rest = '';
    const take = (line: string) => {
      const t = line.trim();
      if (!t) return;
      let m: BuildMessage;
      try {
        m = JSON.parse(t) as BuildMessage;
      } catch {
        return;
      }
      if (m.errorDetail || m.error) failure ??= new BuildError(m.errorDetail?.message ?? m.error ?? 'the build failed', m.errorDetail?.code);
      if (m.aux?.ID) id = m.aux.ID;
      o.onMessage?.(m);
    };
    try {
      for await (const chunk of res) {
        const lines = (rest + String(chunk)).split('\n');
        rest = lines.pop() ?? '';
        for (const l of lines) take(l);
      }
      take(rest);
    } catch (err) {
      if (o.signal?.aborted) throw o.signal.reason instanceof Error ? o.signal.reason : new Error('the build was stopped');
      throw err;
    }
    if (o.signal?.aborted) throw o.signal.reason instanceof Error ? o.signal.reason : new Error('the build was stopped');
    if (failure) throw failure;
    // an engine that names no image in its output: the tag names it
    if (!id) id = (await this.calls.run('images.inspect', () => this.docker.getImage(o.tag).inspect())).Id;
    return { id };
  }
}

/**
 * Infrastructure deaths on a real engine. A private dockerd (its own network namespace, data and
 * exec roots) is SIGKILLed while berth starts attempts. After its restart it has stopped (143)
 * the containers it had started, and it calls "created" (never started) those whose start it
 * had under way, although their process may have run: started again, the engine refuses
 * ("task ... already exists", "id already in use", HTTP 500) for good, or clears its stale task
 * and runs the process a second time. Every attempt must still reach a final phase, each such run
 * ending EngineRestarted (never started twice) and run again as a new run under --infra-retries,
 * never under the spec's retries. A start the engine refuses ends StartFailed, bounded the same
 * way. And a task that ends by TERM on its own, with no engine restart, stays Failed/Error.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { runReconcile } from '../../src/cli/commands/reconcile';
import { makeContext } from '../../src/cli/context';
import { bufferIo } from '../../src/cli/io';
import { reconcilePass } from '../../src/controller/pass';
import { createDockerEngine } from '../../src/engine/docker';
import { silentLogger } from '../../src/util/log';
import { networkName } from '../../src/constants';
import type { ContainerClient } from '../../src/engine/types';
import { docker, requireEngine } from '../support/engine';
import { PrivateEngine } from '../support/private-engine';
import { Sandbox } from '../support/sandbox';

describe('engine killed (SIGKILL) during starts (private engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  const pe = new PrivateEngine('kst');
  let sb: Sandbox;
  before(async function () {
    await pe.start();
    await pe.importImage();
    sb = await Sandbox.create('kst');
  });
  after(async function () {
    // the private engine goes as a whole, with the shims of the tasks it lost track of
    await pe.destroy();
    await fs.rm(sb.dir, { recursive: true, force: true });
  });

  const engine = createDockerEngine(pe.docker);
  const names = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];

  /** Runs `work` and SIGKILLs the engine at the first container start it reports, with the other starts on their way. */
  async function killAtFirstStart<T>(work: () => Promise<T>): Promise<T> {
    const events = (await pe.docker.getEvents({
      filters: JSON.stringify({ type: ['container'], event: ['start'] }),
    } as never)) as unknown as NodeJS.ReadableStream & { destroy(): void };
    const firstStart = new Promise<void>((resolve) => events.once('data', () => resolve()));
    const done = work();
    await firstStart;
    await pe.kill();
    events.destroy();
    return done;
  }

  function waitAll(timeout: number): { io: ReturnType<typeof bufferIo>; code: Promise<number> } {
    const io = bufferIo();
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, io, {
      engine,
      log: silentLogger(),
    });
    return { io, code: runReconcile(ctx, { once: true, wait: true, timeout, retryBackoff: 1 }) };
  }

  /** What an attempt left unfinished looks like, to the status record and to the engine (for a failure's message). */
  async function unfinished(): Promise<string> {
    const out: string[] = [];
    for (const n of names) {
      const st = await sb.status(n);
      if (st?.phase === 'Succeeded') continue;
      const c = st?.containerId
        ? await pe.docker
            .getContainer(st.containerId)
            .inspect()
            .then(
              (i) => JSON.stringify(i.State),
              (e: Error) => e.message,
            )
        : 'no container id';
      out.push(
        `${n}: ${JSON.stringify({ phase: st?.phase, reason: st?.reason, run: st?.run, intent: st?.intent, startFailure: st?.startFailure })}; engine: ${c}`,
      );
    }
    return `\n${out.join('\n')}`;
  }

  /** Every attempt Succeeded in the end, its earlier runs (of this spec) all infrastructure deaths; returns their reasons. */
  async function allSucceeded(): Promise<string[]> {
    const reasons: string[] = [];
    for (const n of names) {
      const st = await sb.status(n);
      expect(st?.phase, `${n}: ${JSON.stringify(st)}`).to.equal('Succeeded');
      expect(st?.retriesUsed, n).to.equal(0);
      const earlier = (st?.history ?? []).filter((h) => h.specHash === st?.specHash);
      expect(st?.infraRetriesUsed ?? 0, n).to.equal(earlier.length);
      for (const h of earlier) reasons.push(h.reason ?? '?');
      // the run that succeeded ran once, in a results folder of its own
      expect(await fs.readFile(path.join(sb.resultsRoot, n, `run-${st?.run}`, 'results', 'ran'), 'utf8'), n).to.equal('ran\n');
    }
    expect(
      [...new Set(reasons)].filter((r) => r !== 'StartFailed' && r !== 'EngineRestarted'),
      reasons.join(','),
    ).to.deep.equal([]);
    return reasons;
  }

  it('every attempt reaches a final phase: half-started containers are never started again, stopped runs end EngineRestarted, all run again', async function () {
    for (const n of names) await sb.write(`${n}.yaml`, sb.attempt(n, 'echo ran >> /results/ran; sleep 1'));
    const cut = await killAtFirstStart(() => reconcilePass(sb.config(), engine, sb.store()));
    expect(
      cut.results.some((r) => !r.ok),
      'the kill cut some operations short',
    ).to.equal(true);
    await pe.start();

    // --timeout 60: an exit 0 is within it
    const { io, code } = waitAll(60);
    const exit = await code;
    expect(exit, exit === 0 ? '' : io.stderr + (await unfinished())).to.equal(0);
    const reasons = await allSucceeded();
    // else the kill came too late to test anything: the half-started containers are what this is about
    const messages = (await Promise.all(names.map((n) => sb.status(n)))).flatMap((st) => st?.history.map((h) => h.message ?? '') ?? []);
    expect(
      messages.filter((m) => m.includes('while the container was being started')),
      reasons.join(','),
    ).to.not.deep.equal([]);
  });

  it('and through a second kill while it recovers', async function () {
    // the attempts run again (a new spec each); the engine dies at their first start, and again
    // at the first start of the recovery
    for (const n of names) await sb.write(`${n}.yaml`, sb.attempt(n, 'echo ran >> /results/ran; sleep 1; true'));
    await killAtFirstStart(() => reconcilePass(sb.config(), engine, sb.store()));
    await pe.start();
    const interrupted = await killAtFirstStart(() => waitAll(60).code);
    expect(interrupted, 'the second kill cut the recovery short').to.not.equal(0);
    await pe.start();

    const { io, code } = waitAll(60);
    expect(await code, io.stderr).to.equal(0);
    await allSucceeded();
  });
});

describe('a start the engine refuses (real engine)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('refused');
  });
  after(async function () {
    await sb.destroy();
  });

  it("ends the run StartFailed with the engine's message and runs it again, instead of starting that container forever", async function () {
    await sb.write('r.yaml', sb.attempt('r', 'echo ran >> /results/ran', '  network: {mode: isolated}\n'));
    // The attempt's network disappears between the container's create and its first start: the
    // engine refuses that start (the network is not found) every time it is asked again.
    const base = sb.engine;
    const containers = Object.create(base.containers) as ContainerClient;
    let sabotaged = false;
    containers.start = async (id: string) => {
      if (!sabotaged) {
        sabotaged = true;
        await docker.getNetwork(networkName(sb.instance, 'r')).remove();
      }
      return base.containers.start(id);
    };
    const io = bufferIo();
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, io, {
      engine: { ...base, containers },
      log: silentLogger(),
    });
    const code = await runReconcile(ctx, { once: true, wait: true, timeout: 40, retryBackoff: 1 });
    expect(code, io.stderr).to.equal(0);
    const st = await sb.status('r');
    expect([st?.phase, st?.run, st?.retriesUsed, st?.infraRetriesUsed]).to.deep.equal(['Succeeded', 2, 0, 1]);
    expect(st?.history.map((h) => [h.run, h.phase, h.reason])).to.deep.equal([[1, 'Failed', 'StartFailed']]);
    expect(st?.history[0]?.message).to.match(/^the engine refused to start the container: .*not found \(HTTP 404\)$/);
    expect(await fs.readFile(path.join(sb.resultsRoot, 'r', 'run-2', 'results', 'ran'), 'utf8')).to.equal('ran\n');
  });
});

describe('a task that ends by a signal of its own (no engine restart)', function () {
  this.timeout(60_000);
  before(requireEngine);

  let sb: Sandbox;
  before(async function () {
    sb = await Sandbox.create('self143');
  });
  after(async function () {
    await sb.destroy();
  });

  it('stays Failed/Error with exit 143: never an infrastructure death, never re-run', async function () {
    await sb.write('t.yaml', sb.attempt('t', 'kill -TERM $$'));
    const r = await sb.cli('reconcile', '--once', '--wait', '--timeout', '50');
    expect(r.code, r.stderr).to.equal(3);
    const st = await sb.status('t');
    expect([st?.phase, st?.reason, st?.exitCode, st?.run, st?.history.length]).to.deep.equal(['Failed', 'Error', 143, 1, 0]);
    expect(st?.engineBoot?.id, 'the boot was recorded: the rule had what it needs').to.be.a('string');
  });
});

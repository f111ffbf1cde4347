/**
 * Infrastructure deaths on a real engine. A private dockerd (its own network namespace, data and
 * exec roots) is SIGKILLed while berth starts attempts: after its restart the engine refuses to
 * start the containers it had half-started ("task ... already exists", "id already in use", HTTP
 * 500) and has stopped (143) those it had started. Every attempt must still reach a final phase,
 * each such run ending StartFailed or EngineRestarted and run again under --infra-retries, never
 * under the spec's retries. And a task that ends by TERM on its own, with no engine restart,
 * stays the task's failure (Failed/Error 143).
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
import { requireEngine } from '../support/engine';
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

  it('every attempt reaches a final phase: refused starts end StartFailed, stopped runs EngineRestarted, both run again', async function () {
    const engine = createDockerEngine(pe.docker);
    const names = ['k1', 'k2', 'k3', 'k4', 'k5', 'k6'];
    for (const n of names) await sb.write(`${n}.yaml`, sb.attempt(n, 'echo ran >> /results/ran; sleep 1'));

    // The engine dies at the first start it reports, with the other starts on their way.
    const events = (await pe.docker.getEvents({ filters: JSON.stringify({ type: ['container'], event: ['start'] }) } as never)) as unknown as NodeJS.ReadableStream & { destroy(): void };
    const firstStart = new Promise<void>((resolve) => events.once('data', () => resolve()));
    const pass = reconcilePass(sb.config(), engine, sb.store());
    await firstStart;
    await pe.kill();
    events.destroy();
    const cut = await pass;
    expect(cut.results.some((r) => !r.ok), 'the kill cut some operations short').to.equal(true);
    await pe.start();

    const io = bufferIo();
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, io, { engine, log: silentLogger() });
    const t0 = Date.now();
    const code = await runReconcile(ctx, { once: true, wait: true, timeout: 60, retryBackoff: 1 });
    const took = Date.now() - t0;
    expect(code, io.stderr).to.equal(0);
    expect(took).to.be.below(60_000);

    const reasons: string[] = [];
    for (const n of names) {
      const st = await sb.status(n);
      expect(st?.phase, `${n}: ${JSON.stringify(st)}`).to.equal('Succeeded');
      expect(st?.retriesUsed, n).to.equal(0);
      expect(st?.infraRetriesUsed ?? 0, n).to.equal(st?.history.length);
      for (const h of st?.history ?? []) reasons.push(h.reason ?? '?');
      // the run that succeeded ran once, in a results folder of its own
      expect(await fs.readFile(path.join(sb.resultsRoot, n, `run-${st?.run}`, 'results', 'ran'), 'utf8'), n).to.equal('ran\n');
    }
    expect([...new Set(reasons)].filter((r) => r !== 'StartFailed' && r !== 'EngineRestarted'), reasons.join(',')).to.deep.equal([]);
    // else the kill came too late to test anything: the engine's refusals are what this is about
    expect(reasons, reasons.join(',')).to.include('StartFailed');
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

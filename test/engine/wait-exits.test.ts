/**
 * `reconcile --once --wait` records an exit, and gives the slot it frees, while another start is
 * still under way (a finite run of the controller: an exit's harvest runs in the ending lane,
 * the freed slot's start in a free worker; issue 18: an exit waited for the pass's last start
 * before the next pass looked, and so did the attempt waiting for its slot).
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { runReconcile } from '../../src/cli/commands/reconcile';
import { makeContext } from '../../src/cli/context';
import { bufferIo } from '../../src/cli/io';
import { silentLogger } from '../../src/util/log';
import { COMPONENTS, LABELS } from '../../src/constants';
import { requireEngine } from '../support/engine';
import { listsLagging } from '../support/lagging-engine';
import { Sandbox } from '../support/sandbox';
import { waitFor } from '../support/wait';

describe('reconcile --once --wait: exits during a pass (real engine)', function () {
  this.timeout(180_000);
  before(requireEngine);

  let sb: Sandbox;
  beforeEach(async function () {
    sb = await Sandbox.create('wait-exits');
  });
  afterEach(async function () {
    await sb.destroy();
  });

  it('harvests an attempt that exits while the same pass still provisions another, and starts the waiting one in its slot', async function () {
    // c already waits for a slot (its record written by an earlier pass, while ab held the only one).
    await sb.write('c.yaml', sb.attempt('c', 'true'));
    await sb.write('ab.yaml', sb.attempt('ab', 'true'));
    const first = await sb.cli('reconcile', '--once', '--max-running', '1');
    expect([first.code, (await sb.status('c'))?.phase], first.stderr).to.deep.equal([0, 'Pending']);
    // Two slots, two workers: a starts and exits at once; b's start is held (below) until a is
    // recorded finished and c has begun in the slot a freed, or for HOLD_MS: only work beside
    // b's held start can do either. (Holding b makes the race a fixed one; a slow copy into b
    // was the engine's load against berth's.) With one worker, c's start would rightly wait for
    // b's: --concurrency 1 means one attempt worked on at a time (a's harvest still runs, in the
    // ending lane).
    const HOLD_MS = 30_000;
    await sb.write('a.yaml', sb.attempt('a', 'echo quick > /results/out.txt'));
    await sb.write('b.yaml', sb.attempt('b', 'true'));
    const bIds = new Set<string>();
    let heldUntilDone = false;
    const inner = sb.engine.containers;
    const create: typeof inner.create = async (spec) => {
      const id = await inner.create(spec);
      if (spec.labels[LABELS.attempt] === 'b' && spec.labels[LABELS.component] === COMPONENTS.main) bIds.add(id);
      return id;
    };
    const start: typeof inner.start = async (id) => {
      if (bIds.has(id)) {
        heldUntilDone = await waitFor(
          'a finished and c provisioning',
          async () => (await sb.status('a'))?.phase === 'Succeeded' && (await sb.status('c'))?.provisionedAt !== undefined,
          { dirs: [path.join(sb.stateDir, sb.instance, 'attempts')], timeoutMs: HOLD_MS },
        ).then(
          () => true,
          () => false,
        );
      }
      return inner.start(id);
    };
    const containers = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'create') return create;
        if (prop === 'start') return start;
        const v: unknown = Reflect.get(target, prop, receiver);
        return typeof v === 'function' ? (v as (...x: unknown[]) => unknown).bind(target) : v;
      },
    });
    const io = bufferIo();
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, io, {
      engine: { ...sb.engine, containers },
      log: silentLogger(),
    });
    const code = await runReconcile(ctx, { once: true, wait: true, timeout: 150, maxRunning: 2, concurrency: 2 });
    expect(code, io.stderr).to.equal(0);
    expect(bIds.size, "b's container was made through the wrapper").to.equal(1);
    expect(heldUntilDone, 'b was held until the work beside it was done, not for the whole hold').to.equal(true);
    const [a, b, c] = [await sb.status('a'), await sb.status('b'), await sb.status('c')];
    expect([a?.phase, b?.phase, c?.phase]).to.deep.equal(['Succeeded', 'Succeeded', 'Succeeded']);
    const bStarted = Date.parse(b?.startedAt ?? '');
    // a's finished record was written (its last write), and c's provisioning began, before b, provisioned by the first pass, started.
    expect(Date.parse(a?.updatedAt ?? ''), `a recorded ${a?.updatedAt}, b started ${b?.startedAt}`).to.be.below(bStarted);
    expect(Date.parse(c?.provisionedAt ?? ''), `c provisioned ${c?.provisionedAt}, b started ${b?.startedAt}`).to.be.below(bStarted);
    // a's harvest is complete.
    const run = path.dirname(a?.resultsDir ?? '');
    expect((await fs.readFile(path.join(a?.resultsDir ?? '', 'out.txt'), 'utf8')).trim()).to.equal('quick');
    for (const f of ['logs.txt', 'manifest.json', 'status.json']) await fs.access(path.join(run, f));
  });

  it('records an exit the lists do not show yet, from the inspect asked on the die', async function () {
    // The lists show the exit only once the test lets them (catchUp, after the command): the
    // finished record came from the inspect asked on the die, whatever the machine's load.
    const lagging = listsLagging(sb.engine);
    await sb.write('lag.yaml', sb.attempt('lag', 'sleep 0.5; echo done > /results/out.txt'));
    const io = bufferIo();
    const ctx = makeContext({ specs: sb.specsDir, state: sb.stateDir, resultsRoot: sb.resultsRoot, instance: sb.instance }, io, {
      engine: lagging.engine,
      log: silentLogger(),
    });
    try {
      const code = await runReconcile(ctx, { once: true, wait: true, timeout: 60 });
      expect(code, io.stderr).to.equal(0);
      const st = await sb.status('lag');
      expect(st?.phase).to.equal('Succeeded');
      expect(lagging.diedAt.get(st?.containerId ?? ''), 'the die passed through the lagging stream').to.be.a('number');
      const listed = await lagging.engine.containers.list([`${LABELS.instance}=${sb.instance}`]);
      expect(listed.find((c) => c.id === st?.containerId)?.state, 'the lists still lag').to.equal('running');
      expect((await fs.readFile(path.join(st?.resultsDir ?? '', 'out.txt'), 'utf8')).trim()).to.equal('done');
    } finally {
      lagging.catchUp();
    }
  });
});

/**
 * What a run costs the engine: a finite run (`reconcile --once --wait`) of an AttemptSet of short
 * attempts (each exits as it starts, as `true` does) over the fake engine, with --max-running 4,
 * counting every engine call. `docker run --rm` makes about 4 a run (create, attach/wait, start,
 * and the removal); berth's lifecycle makes a few more (the start's attestation, the finish's
 * inspect and logs), and its lists are shared: a ceiling per attempt, so the cost coming back
 * (every waiting attempt looked at again as each slot frees, whole lists for each batch) fails here.
 */
import { expect } from 'chai';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Controller } from '../../../src/controller/controller';
import { StatusStore } from '../../../src/status/store';
import { FakeClock, settle } from '../../../src/util/clock';
import { silentLogger } from '../../../src/util/log';
import { FakeEngine } from '../../support/fake-engine';
import { fakeCfg } from './helpers';

const I = 'unit-cost';
const IMAGE = 'berth/busybox:local';

interface Cost {
  perAttempt: number;
  byOp: Record<string, number>;
}

describe('controller: engine calls per attempt of a fleet of short runs', function () {
  this.timeout(60_000);
  let dir: string;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'berth-cost-'));
    await fs.mkdir(path.join(dir, 'specs'));
  });
  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function fleet(n: number, maxRunning: number): Promise<Cost> {
    const clock = new FakeClock(Date.parse('2030-01-01T00:00:00Z'));
    const fake = new FakeEngine(clock);
    fake.addImage({ ref: IMAGE, labels: {} });
    fake.exitOnStart(() => true, 0);
    await fs.writeFile(
      path.join(dir, 'specs', 'set.yaml'),
      [
        'apiVersion: berth.dev/v1',
        'kind: AttemptSet',
        'metadata: {name: fl}',
        'spec:',
        '  matrix:',
        `    seed: {range: [0, ${n}]}`,
        '  template:',
        `    image: ${IMAGE}`,
        "    command: ['true']",
        '',
      ].join('\n'),
    );
    const store = new StatusStore(path.join(dir, 'state'), I);
    const ctl = new Controller({
      cfg: fakeCfg({ dir, instance: I, clock, maxRunning }),
      engine: fake,
      store,
      log: silentLogger(),
      workers: maxRunning,
      resyncMs: 0,
      finite: true,
      clock,
    });
    const from = fake.calls.length;
    await ctl.start();
    const deadline = Date.now() + 50_000;
    try {
      for (;;) {
        const recs = await store.loadAll();
        const done = [...recs.values()].filter((s) => s.phase === 'Succeeded').length;
        if (done === n && ctl.idle()) break;
        if (Date.now() > deadline) throw new Error(`timed out: ${done} of ${n} Succeeded`);
        await clock.advanceAsync(25);
        await settle();
        await new Promise((r) => setTimeout(r, 2));
      }
    } finally {
      await ctl.stop();
    }
    const byOp: Record<string, number> = {};
    for (const c of fake.calls.slice(from)) byOp[c.op] = (byOp[c.op] ?? 0) + 1;
    const total = fake.calls.length - from;
    return { perAttempt: total / n, byOp };
  }

  // Measured (60 attempts, 4 slots): 38.9 calls an attempt before the cut (390 lists of each kind,
  // 310 image lists and boots), 13.5 after. What is left is the run's own lifecycle (create, the
  // image's inspect, start, four inspects: attestation, the die's, the finish's and the harvest's
  // logs with the workspace's archive) and one listing of the attempt after its start.
  for (const slots of [4, 8]) {
    it(`a fleet of 60 short attempts, ${slots} at a time, costs at most 16 engine calls an attempt: no whole list, no image list or boot per batch`, async function () {
      const c = await fleet(60, slots);
      const why = JSON.stringify(c.byOp);
      expect(c.perAttempt, why).to.be.at.most(16);
      // each attempt is listed about once after its start (and the two whole lists of the start-up)
      expect((c.byOp['containers.list'] ?? 0) / 60, why).to.be.at.most(2);
      // the images and the boot are asked when something could have changed them, not per batch
      expect((c.byOp['images.list'] ?? 0) + (c.byOp['boot'] ?? 0), why).to.be.at.most(6);
      // the lifecycle itself: one create and one start a run
      expect([c.byOp['containers.create'], c.byOp['containers.start']]).to.deep.equal([60, 60]);
    });
  }
});

/** The controller's disk meter: what it measures, whom it reports over, and its budget per interval. */
import { expect } from 'chai';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { DiskMeter } from '../../../src/controller/disk-meter';
import type { Engine } from '../../../src/engine/types';
import type { AttemptStatus } from '../../../src/status/types';
import { systemClock } from '../../../src/util/clock';
import { silentLogger } from '../../../src/util/log';

const MiB = 1024 * 1024;

describe('disk meter (controller/disk-meter.ts)', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'berth-meter-'));
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  /** An attempt's layer, results and volume folders, with `mib` MiB in the one named. */
  function attempt(name: string, where: 'layer' | 'results' | 'volume', mib: number, limit = 4 * MiB): AttemptStatus {
    for (const p of ['layer', 'results', 'volume']) mkdirSync(path.join(root, name, p), { recursive: true });
    if (mib) writeFileSync(path.join(root, name, where, 'big'), Buffer.alloc(mib * MiB, 1));
    return {
      name,
      phase: 'Running',
      containerId: `id-${name}`,
      resultsDir: path.join(root, name, 'results'),
      disk: { bytes: limit, source: 'spec', enforcedBy: 'measured' },
    } as AttemptStatus;
  }
  const engine = (inspected: string[] = []) =>
    ({
      containers: {
        inspect: async (id: string) => {
          inspected.push(id);
          const name = id.slice(3);
          return {
            id,
            state: 'running',
            storage: { driver: 'overlay2', upperDir: path.join(root, name, 'layer') },
            mounts: [
              { type: 'bind', source: path.join(root, name, 'results'), destination: '/results', rw: true },
              { type: 'volume', source: path.join(root, name, 'volume'), destination: '/data', name: `v-${name}`, rw: true },
            ],
          };
        },
      },
    }) as unknown as Engine;

  it('counts layer, results and volumes together, and reports only the attempts over their limit', async () => {
    const recs = new Map([
      ['layer', attempt('layer', 'layer', 5)],
      ['results', attempt('results', 'results', 5)],
      ['volume', attempt('volume', 'volume', 5)],
      ['fine', attempt('fine', 'results', 2)],
      ['done', { ...attempt('done', 'results', 9), phase: 'Succeeded' } as AttemptStatus],
      ['free', { ...attempt('free', 'results', 9), disk: undefined } as AttemptStatus],
    ]);
    const over: string[] = [];
    const inspected: string[] = [];
    const meter = new DiskMeter({
      engine: engine(inspected),
      records: async () => recs,
      clock: systemClock,
      intervalMs: 1000,
      log: silentLogger(),
      onOver: (n) => over.push(n),
    });
    await meter.measure();
    expect(over.sort()).to.deep.equal(['layer', 'results', 'volume']);
    const u = meter.current();
    expect([...u.keys()].sort()).to.deep.equal(['fine', 'layer', 'results', 'volume']);
    expect(u.get('volume')?.parts.volumes).to.be.above(5 * MiB);
    expect(u.get('layer')?.parts.layer).to.be.above(5 * MiB);
    expect(u.get('fine')).to.deep.include({ containerId: 'id-fine', complete: true });
    expect(u.get('fine')?.bytes)
      .to.be.above(2 * MiB)
      .and.below(3 * MiB);
    // a container is inspected once, whatever the number of intervals
    await meter.measure();
    expect(inspected.filter((i) => i === 'id-fine')).to.have.length(1);
    // an attempt no longer running is forgotten
    recs.set('fine', { ...(recs.get('fine') as AttemptStatus), phase: 'Succeeded' });
    await meter.measure();
    expect(meter.current().has('fine')).to.equal(false);
  });

  it("takes a backend's own count where its runs are elsewhere (a swarm node's engine), walking no host path", async () => {
    const recs = new Map([
      ['big', attempt('big', 'results', 0)],
      ['small', attempt('small', 'results', 0)],
      ['gone', attempt('gone', 'results', 0)],
    ]);
    const over: string[] = [];
    const asked: string[] = [];
    const elsewhere = {
      containers: {
        inspect: async () => {
          throw new Error('a backend that counts its runs is never inspected for host paths');
        },
      },
      remote: {
        diskUse: async (id: string) => {
          asked.push(id);
          if (id === 'id-gone') return undefined;
          return id === 'id-big'
            ? { layer: 3 * MiB, results: 1 * MiB, volumes: 1 * MiB, byMountPath: { '/data': 1 * MiB }, countedBy: "node n1's engine" }
            : { layer: 1 * MiB, results: 0, volumes: 0, byMountPath: {}, countedBy: "node n2's engine" };
        },
      },
    } as unknown as Engine;
    const meter = new DiskMeter({
      engine: elsewhere,
      records: async () => recs,
      clock: systemClock,
      intervalMs: 1000,
      log: silentLogger(),
      onOver: (n) => over.push(n),
    });
    await meter.measure();
    expect(asked.sort()).to.deep.equal(['id-big', 'id-gone', 'id-small']);
    expect(over).to.deep.equal(['big']);
    expect(meter.current().get('big')).to.deep.include({
      bytes: 5 * MiB,
      parts: { layer: 3 * MiB, results: 1 * MiB, volumes: 1 * MiB },
      countedBy: "node n1's engine",
    });
    expect(meter.current().has('gone')).to.equal(false);
  });

  it('measures a sized volume against its own size, with or without resources.disk; one the engine enforces is not walked', async () => {
    const sized = (name: string, mib: number, enforcedBy: 'measured' | 'engine' = 'measured', disk = false): AttemptStatus => {
      const a = attempt(name, 'volume', mib, 64 * MiB);
      return { ...a, ...(disk ? {} : { disk: undefined }), volumeSizes: [{ name: 'data', mountPath: '/data', bytes: 2 * MiB, enforcedBy }] } as AttemptStatus;
    };
    const recs = new Map([
      ['full', sized('full', 3)],
      ['roomy', sized('roomy', 1)],
      ['capped', sized('capped', 3, 'engine')],
      ['both', sized('both', 3, 'measured', true)],
    ]);
    const over: string[] = [];
    const meter = new DiskMeter({
      engine: engine(),
      records: async () => recs,
      clock: systemClock,
      intervalMs: 1000,
      log: silentLogger(),
      onOver: (n) => over.push(n),
    });
    await meter.measure();
    expect(over.sort()).to.deep.equal(['both', 'full']);
    const u = meter.current();
    expect(u.get('full')?.sized?.data).to.be.above(2 * MiB);
    expect(u.get('full')?.parts).to.deep.equal({});
    expect(u.get('roomy')?.sized?.data)
      .to.be.above(1 * MiB)
      .and.below(2 * MiB);
    // the engine caps it (and there is no resources.disk): nothing to measure
    expect(u.has('capped')).to.equal(false);
    // under resources.disk too: the volume counts toward the total as well
    expect(u.get('both')?.parts.volumes).to.be.above(2 * MiB);
  });

  it('walks at most its budget an interval; those left go first the next time', async () => {
    const recs = new Map(['a', 'b', 'c'].map((n) => [n, attempt(n, 'results', 0)]));
    for (const n of ['a', 'b', 'c']) for (let i = 0; i < 30; i++) writeFileSync(path.join(root, n, 'results', `f${i}`), 'x');
    const meter = new DiskMeter({
      engine: engine(),
      records: async () => recs,
      clock: systemClock,
      intervalMs: 1000,
      log: silentLogger(),
      onOver: () => undefined,
      entriesPerInterval: 40,
    });
    await meter.measure();
    expect([...meter.current().keys()]).to.deep.equal(['a']);
    await meter.measure();
    expect([...meter.current().keys()].sort()).to.deep.equal(['a', 'b']);
    await meter.measure();
    expect([...meter.current().keys()].sort()).to.deep.equal(['a', 'b', 'c']);
  });
});

/** Disk pressure, decided by the planner from readings observed outside it: new runs wait Pending/DiskPressure, running ones go on. */
import { expect } from 'chai';
import { DEFAULTS, REASONS } from '../../../src/constants';
import type { DiskReading } from '../../../src/observe/disk';
import { diskPressure, diskThresholds, parseFloor, pressured, type DiskInput } from '../../../src/plan/disk-pressure';
import { plan } from '../../../src/plan/planner';
import { container, input, snapshot, spec, status, statuses } from '../../support/builders';

const GiB = 1024 ** 3;
const fs = (what: DiskReading['what'], freeBytes: number, freeInodes = 900): DiskReading => ({
  what,
  path: what === 'results-root' ? '/r' : '/var/lib/docker',
  freeBytes,
  totalBytes: 100 * GiB,
  freeInodes,
  totalInodes: 1000,
});
const kubelet = { free: { percent: 10 }, inodes: { percent: 5 } };
const disk = (...readings: DiskReading[]): DiskInput => ({ readings, thresholds: kubelet });

describe('disk pressure: the decision', () => {
  it('is none while every file system is above its floors', () => {
    expect(diskPressure(disk(fs('results-root', 50 * GiB), fs('engine-data-root', 11 * GiB)))).to.equal(undefined);
  });

  it('names each file system below a floor, space or inodes', () => {
    const d = disk(fs('results-root', 9 * GiB), fs('engine-data-root', 50 * GiB, 40));
    expect(diskPressure(d)).to.equal(
      'disk pressure: the results root (/r) has 9% of its space free, below --disk-pressure-free 10%; ' +
        "the engine's data root (/var/lib/docker) has 4% of its inodes free, below --disk-pressure-inodes 5%; new runs wait, running ones go on",
    );
    expect([...pressured(d)].sort()).to.deep.equal(['engine-data-root', 'results-root']);
  });

  it('an absolute floor; 0 is off; a skipped file system (a remote engine) or one without fixed inodes decides nothing', () => {
    expect(diskPressure({ readings: [fs('results-root', 2 * GiB)], thresholds: { free: { amount: 3 * GiB }, inodes: { amount: 0 } } })).to.match(
      /below --disk-pressure-free 3221225472 bytes/,
    );
    expect(diskPressure({ readings: [fs('results-root', 0, 0)], thresholds: { free: { amount: 0 }, inodes: { amount: 0 } } })).to.equal(undefined);
    expect(diskPressure(disk({ what: 'engine-data-root', path: '/x', skipped: 'the engine is remote' }))).to.equal(undefined);
    expect(diskPressure(disk({ ...fs('results-root', 50 * GiB), freeInodes: 0, totalInodes: 0 }))).to.equal(undefined);
  });

  it('thresholds: a percentage, a size or a number of inodes; the flags, else BERTH_DISK_PRESSURE_*, else the defaults', () => {
    expect(parseFloor('10%', 'bytes')).to.deep.equal({ percent: 10 });
    expect(parseFloor('5Gi', 'bytes')).to.deep.equal({ amount: 5 * GiB });
    expect(parseFloor('0', 'bytes')).to.deep.equal({ amount: 0 });
    expect(parseFloor('100000', 'inodes')).to.deep.equal({ amount: 100_000 });
    for (const bad of ['101%', 'lots', '-1', '5Gi%']) expect(parseFloor(bad, 'bytes'), bad).to.equal(undefined);
    expect(parseFloor('5Gi', 'inodes')).to.equal(undefined);
    expect(diskThresholds({}, {})).to.deep.equal({
      free: parseFloor(DEFAULTS.diskPressureFree, 'bytes'),
      inodes: parseFloor(DEFAULTS.diskPressureInodes, 'inodes'),
    });
    expect(diskThresholds({}, { BERTH_DISK_PRESSURE_FREE: '20Gi', BERTH_DISK_PRESSURE_INODES: '1%' })).to.deep.equal({
      free: { amount: 20 * GiB },
      inodes: { percent: 1 },
    });
    expect(diskThresholds({ free: { percent: 3 } }, { BERTH_DISK_PRESSURE_FREE: '20Gi' }).free).to.deep.equal({ percent: 3 });
  });
});

describe('disk pressure: the planner', () => {
  const full = disk(fs('results-root', 1 * GiB));

  it('a new run waits Pending/DiskPressure, looked at again on a timer; nothing is made', () => {
    const p = plan(input({ specs: [spec('a')], disk: full }));
    const a = p.actions[0];
    expect([a?.attempt, a?.kind, a?.requeueAfterMs]).to.deep.equal(['a', 'wait', DEFAULTS.diskPressureRecheckMs]);
    expect(a?.ops.map((o) => o.type)).to.deep.equal(['record']);
    const rec = a?.ops[0];
    expect(rec?.type === 'record' ? [rec.patch.phase, rec.patch.reason, rec.patch.message] : []).to.deep.equal([
      'Pending',
      REASONS.diskPressure,
      diskPressure(full),
    ]);
  });

  it('an attempt already waiting for the same reason is not written again, and still looked at again', () => {
    const waiting = status('a', { phase: 'Pending', reason: REASONS.diskPressure, message: diskPressure(full), containerId: undefined, startedAt: undefined });
    const p = plan(input({ specs: [spec('a')], disk: full, statuses: statuses(waiting) }));
    expect(p.actions.map((a) => [a.kind, a.ops.length, a.requeueAfterMs])).to.deep.equal([['wait', 0, DEFAULTS.diskPressureRecheckMs]]);
  });

  it('a running attempt goes on; once space is back the waiting one is provisioned', () => {
    const specs = [spec('a'), spec('b')];
    const running = { snapshot: snapshot({ containers: [container('default', 'b', 'h-b')] }), statuses: statuses(status('b')) };
    const held = plan(input({ specs, disk: full, ...running }));
    expect(held.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['a:wait']);
    expect(held.unchanged.get('b')).to.equal('Running');
    const back = plan(input({ specs, disk: disk(fs('results-root', 50 * GiB)), ...running }));
    expect(back.actions.map((a) => `${a.attempt}:${a.kind}`)).to.deep.equal(['a:provision']);
  });
});

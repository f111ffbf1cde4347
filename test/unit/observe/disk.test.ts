/** Disk readings (observe/disk.ts): the results root and the engine's data root read with statfs; what cannot be read from here is skipped, said. */
import { expect } from 'chai';
import os from 'node:os';
import { DiskObserver } from '../../../src/observe/disk';

describe('observe/disk', () => {
  it('reads both file systems when the engine is local, asking the engine once', async () => {
    let asked = 0;
    const o = new DiskObserver(os.tmpdir(), async () => {
      asked++;
      return { path: '/', local: true };
    });
    const [results, root] = await o.read();
    await o.read();
    expect(asked).to.equal(1);
    expect(results).to.include({ what: 'results-root', path: os.tmpdir() });
    expect(root).to.include({ what: 'engine-data-root', path: '/' });
    for (const r of [results, root]) {
      expect(r?.skipped).to.equal(undefined);
      expect(r?.totalBytes).to.be.above(0);
      expect(r?.freeBytes)
        .to.be.at.least(0)
        .and.at.most(r?.totalBytes ?? 0);
    }
  });

  it("skips only the engine's data root of a remote engine, of an engine that does not say, or that fails to answer (asked again then)", async () => {
    const remote = await new DiskObserver(os.tmpdir(), async () => ({ path: '/var/lib/docker', local: false })).read();
    expect(remote.map((r) => [r.what, r.skipped])).to.deep.equal([
      ['results-root', undefined],
      ['engine-data-root', 'the engine is remote: its data root cannot be read from here'],
    ]);
    expect((await new DiskObserver(os.tmpdir(), undefined).read())[1]?.skipped).to.match(/does not say/);
    let calls = 0;
    const flaky = new DiskObserver(os.tmpdir(), async () => {
      if (++calls === 1) throw new Error('no answer');
      return { path: '/', local: true };
    });
    expect((await flaky.read())[1]?.skipped).to.match(/did not say where it keeps its data: no answer/);
    expect((await flaky.read())[1]?.skipped).to.equal(undefined);
  });

  it('a results root not made yet is read where it will be made (the nearest folder above it); one that cannot be read is skipped with the error', async () => {
    const [results] = await new DiskObserver('/no/such/berth/folder', undefined).read();
    expect(results?.skipped).to.equal(undefined);
    expect(results?.totalBytes).to.be.above(0);
    const [bad] = await new DiskObserver('/etc/hostname/below-a-file', undefined).read();
    expect(bad).to.deep.equal({ what: 'results-root', path: '/etc/hostname/below-a-file', skipped: 'cannot read its file system here: ENOTDIR' });
  });
});
